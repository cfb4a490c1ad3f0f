"""One C call per frame (`jsontext.c:decode_frame`) against pairing.py's `_decode_into`: the same
row for every frame it takes, the row untouched for every frame it hands back, and the same
tables with and without it, on the capture corpus, the benchmark's mix, drawn bodies of every
API and version, and mutated frames (`KIPWIRE_FUZZ_FRAMES`, a short default in `make test`).
"""

from __future__ import annotations

import random
import struct
import sys
from pathlib import Path

import pytest
from captures_testkit import DRAWN, FUZZ_FRAMES, SHARED_CAPTURES, mutate
from hypothesis import given
from hypothesis import strategies as st
from kafka_capture_kit import frame, metadata_pair
from memory_growth import blocks_left_by

from kipwire import codec
from kipwire.captures.decoding import bodies, pairing
from kipwire.captures.decoding.pairing import PDU_COLUMNS
from kipwire.captures.decoding.pipeline import decode_capture
from kipwire.codec import ApiKey, ErrorCode

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "codec"))
from codec_strategies import values, versions  # noqa: E402

NATIVE = bodies._NATIVE
pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled codec is not built")

APIS = sorted(int(k) for k, v in codec.APIS.items() if v[1] and v[2])
BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def blank() -> dict:
    row = dict.fromkeys(PDU_COLUMNS)
    row.update(decode_status="ok", redacted=False)
    return row


def python_row(data, key: int, version: int, request: bool) -> dict:
    row = blank()
    api = pairing._api_of(codec)
    pairing._decode_into(row, codec, api, data, key, version, request, True)
    return row


def check(data, key: int, version: int, request: bool) -> bool:
    """decode_frame gives `_decode_into`'s row or leaves the row as it was; True when it took
    the frame."""
    row = blank()
    taken = NATIVE.decode_frame(row, data, key, version, request)
    assert taken is True or taken is False
    if taken:
        assert row == python_row(data, key, version, request)
        assert row["decode_status"] == "ok"
    else:
        assert row == blank()
    return taken


def request_of(data: bytes) -> tuple[bytes, int, int]:
    """A request frame's body (no size prefix) with the key and version the caller reads."""
    key, version = struct.unpack_from(">hh", data)
    return data, key, version


def test_set_up_when_the_compiled_codec_is() -> None:
    assert pairing.frame_decoder(codec) is NATIVE.decode_frame
    assert pairing.frame_decoder(object()) is None


# -- whole tables -------------------------------------------------------------------------------


def _tables(path, monkeypatch, fast: bool) -> tuple:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(pairing, "frame_decoder", lambda decoder: None)
        rows = decode_capture(path)
    return rows.pdus, rows.pairs, rows.connections


def _recording(monkeypatch) -> list[tuple]:
    """The frames decode_frame is called with (and its answers) while the test runs."""
    calls: list[tuple] = []

    def record(row, data, key, version, request):
        taken = NATIVE.decode_frame(row, data, key, version, request)
        calls.append((bytes(data), key, version, request, taken))
        return taken

    monkeypatch.setattr(pairing, "frame_decoder", lambda decoder: record)
    return calls


@pytest.mark.skipif(not SHARED_CAPTURES.is_dir(), reason=f"{SHARED_CAPTURES} is absent")
def test_the_capture_corpus_gives_the_same_tables_with_and_without(monkeypatch) -> None:
    files = sorted(SHARED_CAPTURES.rglob("*.pcap*"))
    with monkeypatch.context() as m:
        calls = _recording(m)
        fast = [_tables(p, m, True) for p in files]
    assert fast == [_tables(p, monkeypatch, False) for p in files]
    taken = sum(c[4] for c in calls)
    assert len(calls) >= 30 and taken >= 0.8 * len(calls), (taken, len(calls))
    for data, key, version, request, _ in calls:
        check(data, key, version, request)


def test_the_benchmark_capture_gives_the_same_tables(tmp_path: Path, monkeypatch) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    from capture_bench import build_capture

    (path,) = build_capture(tmp_path, 300, 1)
    with monkeypatch.context() as m:
        calls = _recording(m)
        fast = _tables(path, m, True)
    assert fast == _tables(path, monkeypatch, False)
    assert len(calls) == 300 and all(c[4] for c in calls)


# -- frames it takes and frames it hands back ---------------------------------------------------


@DRAWN
@given(data=st.data())
def test_drawn_frames_of_every_api(data: st.DataObject) -> None:
    """Any API at any version, both ways: flexible headers, tagged fields, every body type."""
    key = data.draw(st.sampled_from(APIS), label="api")
    request = data.draw(st.booleans(), label="request")
    name = codec.APIS[key][1 if request else 2]
    version = data.draw(st.sampled_from(versions(name)), label="version")
    body = data.draw(values(name, version), label="body")
    if request:
        client = data.draw(st.one_of(st.none(), st.text(max_size=8)), label="client")
        raw = codec.encode_request(key, version, body, correlation_id=7, client_id=client)
    else:
        raw = codec.encode_response(key, version, body, correlation_id=7)
    taken = check(raw, key, version, request)
    special = key == (ApiKey.SASL_AUTHENTICATE if request else ApiKey.API_VERSIONS)
    if special or codec.is_extension(key, version):
        assert not taken


def _metadata(version: int = 12, client: str | None = "c1") -> bytes:
    body = {"topics": [{"name": "t"}]}
    return codec.encode_request(ApiKey.METADATA, version, body, correlation_id=4, client_id=client)


@pytest.mark.parametrize(
    ("label", "data", "taken"),
    [
        ("flexible header", _metadata(12), True),
        ("a null client id", _metadata(12, None), True),
        ("non-ASCII client id", _metadata(8, "cli\u00e9nt-\U0001f600"), True),
        ("bytes after the body", _metadata(12) + b"\x00\x00\x00", True),
        (
            "a tagged field in the header",
            _metadata(12)[:12] + b"\x01\x00\x00" + _metadata(12)[13:],
            False,
        ),
        ("the body cut short", _metadata(12)[:-2], False),
        ("cut in the client id", _metadata(8)[:11], False),
        ("cut before the tags", _metadata(12)[:12], False),
        ("a client id not UTF-8", _metadata(8)[:10] + b"\xff\xfe" + _metadata(8)[12:], False),
        ("a client id length under -1", _metadata(8)[:8] + b"\xff\xfe" + _metadata(8)[10:], False),
        (
            "ControlledShutdown v0 (header v0)",
            codec.encode_request(ApiKey.CONTROLLED_SHUTDOWN, 0, {"broker_id": 1}, correlation_id=2),
            True,
        ),
        (
            "SaslAuthenticate (redaction)",
            codec.encode_request(
                ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"secret"}, correlation_id=2
            ),
            False,
        ),
        (
            "an extension",
            codec.encode_request(ApiKey.ELECT_LEADERS, 3, {}, correlation_id=2, client_id="k"),
            False,
        ),
        ("an unknown API", struct.pack(">hhih", 999, 0, 1, -1), False),
        ("an unknown version", struct.pack(">hhih", int(ApiKey.METADATA), 99, 1, -1), False),
        ("a negative key", struct.pack(">hhih", -3, 0, 1, -1), False),
    ],
)
def test_requests(label: str, data: bytes, taken: bool) -> None:
    assert check(*request_of(data), True) == taken, label


def test_responses() -> None:
    _, resp = metadata_pair(5, "orders", version=12)
    flexible = resp[4:]
    assert check(flexible, ApiKey.METADATA, 12, False)
    assert not check(flexible[:4] + b"\x01" + flexible[5:], ApiKey.METADATA, 12, False)
    assert not check(flexible[:4], ApiKey.METADATA, 12, False)
    assert not check(flexible[:3], ApiKey.METADATA, 12, False)
    versions_v3 = codec.encode_response(ApiKey.API_VERSIONS, 3, {}, correlation_id=1)
    assert not check(versions_v3, ApiKey.API_VERSIONS, 3, False)
    error_only = struct.pack(">ih", 9, ErrorCode.UNSUPPORTED_VERSION) + b"\xff\xff\xff"
    assert not check(error_only, ApiKey.API_VERSIONS, 3, False)
    assert not check(flexible, 999, 0, False)


def test_memoryviews_and_other_frame_types() -> None:
    data = _metadata(12)
    key, version = int(ApiKey.METADATA), 12
    assert check(memoryview(b"\0\0" + data)[2:], key, version, True)
    assert not check(bytearray(data), key, version, True)
    assert not check(memoryview(data).cast("b"), key, version, True)
    assert not check(memoryview(data * 2)[::2], key, version, True)


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(TypeError):
        NATIVE.decode_frame({}, b"", 1, 2)
    with pytest.raises(TypeError):
        NATIVE.decode_frame([], b"", 1, 2, True)
    with pytest.raises(TypeError):
        NATIVE.decode_frame({}, b"", "1", 2, True)
    with pytest.raises(OverflowError):
        NATIVE.decode_frame({}, b"", 2**70, 2, True)
    with pytest.raises(TypeError):
        NATIVE.setup_frames(5)


@pytest.mark.parametrize("plan", [(1, 2, 3), (print, 3), (print, -1), (print, 2**70), "x"])
def test_a_plan_that_is_not_one_is_an_error(plan) -> None:
    try:
        NATIVE.setup_frames(lambda key, version, request: plan)
        with pytest.raises(TypeError, match="frame plan"):
            NATIVE.decode_frame(blank(), _metadata(12), int(ApiKey.METADATA), 12, True)
    finally:
        NATIVE.setup_frames(bodies.jsontext.frame_plan)
    assert check(_metadata(12), int(ApiKey.METADATA), 12, True)


# -- mutated frames -----------------------------------------------------------------------------


def _seed_frames() -> list[tuple[bytes, int, int, bool]]:
    sys.path.insert(0, str(BENCHMARKS))
    from capture_bench import _exchange

    seeds = []
    for n in range(3):
        req, resp = _exchange(n, "client-é")
        key, version = struct.unpack_from(">hh", req, 4)
        seeds += [(req[4:], key, version, True), (resp[4:], key, version, False)]
    for version in (8, 12):
        req, resp = metadata_pair(3, "topic", version=version)
        seeds += [(req[4:], int(ApiKey.METADATA), version, True)]
        seeds += [(resp[4:], int(ApiKey.METADATA), version, False)]
    return seeds


def test_mutated_frames() -> None:
    """KIPWIRE_FUZZ_FRAMES mutated frames (3,000 by default) of the benchmark's mix and flexible
    Metadata: each gives `_decode_into`'s row or is handed back."""
    rng = random.Random(23)
    seeds = _seed_frames()
    taken = 0
    for i in range(FUZZ_FRAMES):
        data, key, version, request = seeds[i % len(seeds)]
        data = mutate(rng, data)
        if request and len(data) >= 4:
            key, version = struct.unpack_from(">hh", data)
        taken += check(data, key, version, request)
    assert 0 < taken < FUZZ_FRAMES


def test_no_reference_leaks() -> None:
    seeds = _seed_frames()
    frames = [*seeds, (seeds[0][0][:-3], *seeds[0][1:]), (frame(b"")[4:], 3, 1, False)]

    def run(rounds: int) -> int:
        taken = 0
        for i in range(rounds):
            data, key, version, request = frames[i % len(frames)]
            taken += NATIVE.decode_frame(blank(), memoryview(data), key, version, request)
        return taken

    run(50)
    taken, grown = blocks_left_by(lambda: run(len(frames) * 2000))
    assert taken == len(seeds) * 2000
    assert grown < 200, f"{grown} blocks left by {len(frames) * 2000} frames"
