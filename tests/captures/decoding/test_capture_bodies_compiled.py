"""The C walk of a decoded body (`codec/_compiled/jsontext.c`) against bodies.py's Python walk:
the same facts and the same JSON text, byte for byte, on the capture corpus, on drawn bodies of
every message, on drawn and mutated record blobs; the bodies it hands back to Python; no leaks.
"""

from __future__ import annotations

import enum
import random
import struct
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from captures_testkit import DRAWN, FUZZ_FRAMES, SHARED_CAPTURES, mutate
from construct import Container, ListContainer
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st
from memory_growth import blocks_left_by

from kipwire import codec
from kipwire.captures.decoding import bodies
from kipwire.captures.decoding.pipeline import decode_capture
from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import ControlType, build_batch, control_record, expand_records

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "codec"))
from codec_strategies import values, versions  # noqa: E402

NATIVE = bodies._NATIVE
pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled codec is not built")

MESSAGES = sorted(n for n in codec.MESSAGES if versions(n))
TS = 1_700_000_000_000
CORRUPT = int(ErrorCode.CORRUPT_MESSAGE)  # a plain int: an IntEnum is left to Python


def python_answer(body):
    """What bodies.py's Python walk gives: (facts, text), or the exception it raises."""
    try:
        return bodies._facts_and_json(body, codec)
    except Exception as exc:  # noqa: BLE001 - the C path must raise the same
        return type(exc), str(exc)


def public_answer(body):
    try:
        return bodies.facts_and_json(body, codec)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


def text_answer(body, has_records: bool):
    try:
        return bodies.body_json(codec, body, has_records)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


def check(body) -> bool:
    """The C walk gives the Python walk's answer, or hands the body back; True when it answered.
    The public function (which falls back) and body_json always give the Python answer."""
    expected = python_answer(body)
    native = NATIVE.facts_and_json(body)
    assert native is None or native == expected
    assert public_answer(body) == expected
    for has_records in (False, True):
        reference = on_python_path(text_answer, body, has_records)
        assert text_answer(body, has_records) == reference
    return native is not None


def on_python_path(work, *args):
    """`work(*args)` on the capture bodies' Python path, the compiled one set back after."""
    bodies.use_compiled(False)
    try:
        return work(*args)
    finally:
        bodies.use_compiled(True)


def produce(records, version: int = 8):
    """A Produce request body with `records` in one partition, decoded by the codec."""
    partition = {"index": 0, "records": records}
    body = {
        "acks": -1,
        "timeout_ms": 1,
        "topic_data": [{"name": "t", "partition_data": [partition]}],
    }
    frame = codec.encode_request(ApiKey.PRODUCE, version, body, correlation_id=1)
    return codec.decode_request(frame).body


def reframe(batch: bytes, payload: bytes, fix_crc: bool = True) -> bytes:
    """A v2 batch's 61-byte header over another payload: length and (when `fix_crc`) CRC."""
    head = bytearray(batch[:61])
    struct.pack_into(">i", head, 8, 49 + len(payload))
    if fix_crc:
        struct.pack_into(">I", head, 17, crc32c(bytes(head[21:]) + payload))
    return bytes(head) + payload


def test_active_when_the_compiled_codec_is() -> None:
    assert bodies._native is NATIVE and codec.compiled


# -- the capture corpus ------------------------------------------------------------------------


def _rows(path: Path) -> list[tuple]:
    cols = ("error_code", "topics", "record_count", "body_json", "topic_ids", "decode_status")
    return [tuple(r[c] for c in cols) for r in decode_capture(path).pdus]


@pytest.mark.skipif(not SHARED_CAPTURES.is_dir(), reason=f"{SHARED_CAPTURES} is absent")
def test_the_capture_corpus_gives_the_same_rows_on_both_paths(monkeypatch) -> None:
    files = sorted(SHARED_CAPTURES.rglob("*.pcap*"))
    answered = []
    monkeypatch.setattr(
        bodies, "_facts_and_json", lambda body, c: answered.append(body) or pytest.fail("fell back")
    )
    compiled = [_rows(p) for p in files]
    monkeypatch.undo()
    python = on_python_path(lambda: [_rows(p) for p in files])
    assert compiled == python
    assert not answered  # every body of the corpus was written in C
    assert sum(len(rows) for rows in python) >= 30
    assert any(r[3] and '"records":[{' in r[3] for rows in compiled for r in rows)


def test_the_benchmark_capture_gives_the_same_rows_on_both_paths(tmp_path: Path) -> None:
    """capture_bench.py's mix (Produce v8 with batches, Fetch v11, Metadata v8), 600 PDUs."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from capture_bench import build_capture

    paths = build_capture(tmp_path, 600, 1)
    compiled = [_rows(p) for p in paths]
    python = on_python_path(lambda: [_rows(p) for p in paths])
    assert compiled == python
    assert sum(len(rows) for rows in compiled) == 600


# -- drawn bodies ------------------------------------------------------------------------------


@DRAWN
@given(data=st.data())
def test_drawn_bodies_of_every_message(data: st.DataObject) -> None:
    """Any message at any version, decoded by the codec: `_unknown_tags`, UUIDs, floats, bytes,
    non-ASCII text, and random bytes in `records` fields (a records_error each)."""
    name = data.draw(st.sampled_from(MESSAGES), label="message")
    version = data.draw(st.sampled_from(versions(name)), label="version")
    m = codec.message(name, version)
    body = m.parse(m.build(data.draw(values(name, version), label="value")))
    assert check(body)


_bytes = st.one_of(st.none(), st.binary(max_size=40))
_text = st.text(alphabet=st.characters(codec="utf-8", max_codepoint=0x10FFFF), max_size=6)
_records = st.lists(
    st.fixed_dictionaries(
        {
            "key": _bytes,
            "value": _bytes,
            "headers": st.lists(
                st.tuples(st.one_of(_text, st.just('"\\\n\x00é')), _bytes), max_size=3
            ),
            "timestamp": st.one_of(st.none(), st.integers(-(2**40), 2**40)),
        }
    ),
    min_size=1,
    max_size=5,
)


@st.composite
def record_blobs(draw: st.DrawFn) -> bytes:
    """One to three batches: v2 mostly, sometimes compressed, legacy, control, log append time,
    transactional; the last one sometimes cut short as a fetch response cuts it."""
    blob = b""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["v2", "v2", "v2", "gzip", "legacy", "control", "appended"]))
        recs = draw(_records)
        if kind == "control":
            marker = control_record(ControlType.COMMIT, {"coordinator_epoch": 3}, timestamp=TS)
            blob += build_batch([marker], control=True, producer_id=7, transactional=True)
        elif kind == "legacy":
            plain = [{k: v for k, v in r.items() if k != "headers"} for r in recs]
            blob += build_batch(plain, magic=draw(st.sampled_from([0, 1])))
        else:
            blob += build_batch(
                recs,
                base_offset=draw(st.sampled_from([0, 5, 2**62])),
                compression="gzip" if kind == "gzip" else "none",
                log_append_time=TS if kind == "appended" else None,
                transactional=draw(st.booleans()),
                producer_id=draw(st.sampled_from([-1, 9])),
            )
    cut = draw(st.sampled_from([0, 0, 0, 1, 5, 12, 20, 40, 70]))
    return blob[: len(blob) - cut] if cut < len(blob) else blob


@DRAWN
@given(blob=record_blobs(), version=st.sampled_from([3, 8, 9, 11]))
def test_drawn_record_blobs(blob: bytes, version: int) -> None:
    assert check(produce(blob, version))


def test_every_kind_of_blob_each_way() -> None:
    """Blobs the C code writes (v2, cut, empty) and those it hands to expand_records (gzip,
    legacy, control, a bad CRC: records_error) give the Python text."""
    recs = [{"key": b"k", "value": b"v" * 5, "headers": [("h\u00e9", None)], "timestamp": TS}]
    v2 = build_batch(recs)
    bad_crc = bytearray(v2)
    bad_crc[-1] ^= 1
    blobs = {
        "v2": v2 + v2,
        "cut in the header": v2 + v2[:30],
        "cut under 17 bytes": v2 + v2[:10],
        "empty": b"",
        "gzip": build_batch(recs, compression="gzip"),
        "legacy": build_batch([{"value": b"x", "timestamp": TS}], magic=1),
        "control": build_batch([control_record(ControlType.ABORT, {})], control=True),
        "bad crc": bytes(bad_crc),
        "unknown magic": v2[:16] + b"\x07" + v2[17:],
    }
    texts = {}
    for label, blob in blobs.items():
        assert check(produce(blob)), label
        texts[label] = bodies.facts_and_json(produce(blob), codec)[1]
    assert '"truncated":true' in texts["cut in the header"]
    assert '"compression":"gzip"' in texts["gzip"] and '"control":{' in texts["control"]
    assert "records_error" in texts["bad crc"] and "records_error" in texts["unknown magic"]


# -- hostile and mutated blobs -----------------------------------------------------------------


@pytest.fixture
def handed_over() -> Iterator[list[bytes]]:
    """The blobs the C walk hands to expand_records while the test runs."""
    blobs: list[bytes] = []

    def counting(data: bytes) -> list:
        blobs.append(data)
        return expand_records(data)

    NATIVE.setup(Container, ListContainer, uuid.UUID, counting, bodies.error_text, crc32c)
    try:
        yield blobs
    finally:
        NATIVE.setup(Container, ListContainer, uuid.UUID, expand_records, bodies.error_text, crc32c)


def test_mutated_record_blobs(handed_over: list[bytes]) -> None:
    """KIPWIRE_FUZZ_FRAMES mutated blobs (3,000 by default): mutations in the records with the CRC
    made good again, so the record reader meets them, and in the headers, where it does not."""
    rng = random.Random(23)
    batches = [
        build_batch(
            [
                {
                    "key": None if i % 3 else b"key-%d" % i,
                    "value": b"v" * (i * 7 % 40) if i % 4 else None,
                    "headers": [(f"h{j}\u00e9", None if j else b"x" * i) for j in range(i % 3)],
                    "timestamp": TS + i * 300,
                }
                for i in range(n)
            ],
            log_append_time=TS if n == 3 else None,
        )
        for n in (1, 3, 8)
    ]
    outcomes = {"expanded": 0, "records_error": 0}
    for i in range(FUZZ_FRAMES):
        batch = batches[i % len(batches)]
        if i % 4:
            blob = reframe(batch, mutate(rng, batch[61:]), fix_crc=i % 8 != 1)
        else:
            blob = mutate(rng, batch)
        if i % 3 == 0:
            blob = batches[0] + blob
        body = produce(blob)
        expected = python_answer(body)
        assert NATIVE.facts_and_json(body) == expected, blob.hex()
        outcomes["records_error" if "records_error" in expected[1] else "expanded"] += 1
    assert outcomes["expanded"] and outcomes["records_error"], outcomes
    # uncompressed v2 only: the C reader writes every blob Python reads and hands over the rest
    assert len(handed_over) == outcomes["records_error"], (len(handed_over), outcomes)


@pytest.mark.parametrize(
    "payload",
    [
        b"\xff\xff\xff\xff\x0f",  # record length 2^31 - 1
        b"\x01",  # record length -1
        b"\x0c\x00\x00\x00\xff\xff\xff\xff\x0f\x00\x00",  # key length runs out
        b"\x0e\x00\x00\x00\x01\x01\xff\xff\xff\x7f",  # header count 2^27
        b"\x0e\x00\x00\x00\x01\x01\x02\x02\xff\xfe",  # header key not UTF-8
        b"\x0e\x00\x00\x00\x01\x01\x02\x02\xed\xa0",  # header key a surrogate
        b"\x0e\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # a varlong of ten bytes
    ],
)
def test_hostile_records_give_the_python_error(payload: bytes) -> None:
    batch = build_batch([{"value": b"v", "timestamp": TS}])
    body = produce(reframe(batch, payload))
    assert check(body)
    assert "records_error" in bodies.facts_and_json(body, codec)[1]


def test_a_lying_record_count_is_refused_before_reading() -> None:
    batch = bytearray(build_batch([{"value": b"v", "timestamp": TS}]))
    struct.pack_into(">i", batch, 57, 2**31 - 1)
    body = produce(reframe(bytes(batch), bytes(batch[61:])))
    assert check(body)
    assert "records_error" in bodies.facts_and_json(body, codec)[1]


# -- bodies the C walk hands back --------------------------------------------------------------


def _released() -> memoryview:
    view = memoryview(b"\0" * 8)
    view.release()
    return view


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    pass


def _deep(levels: int, **leaf) -> dict:
    node: dict = {"error_code": int(ErrorCode.NONE), **leaf}
    for _ in range(levels):
        node = {"inner": node}
    return node


@pytest.mark.parametrize(
    ("label", "body", "answered"),
    [
        ("an enum", {"error_code": Color.RED}, False),
        ("a tuple", {"topics": ({"name": "t"},)}, False),
        ("a str subclass", {"name": Text("x")}, False),
        ("a lone surrogate", {"topics": [{"name": "a\ud800"}]}, False),
        ("too deep", _deep(80), False),
        (
            "int keys",
            {
                "_unknown_tags": {3: b"\x01", 1: b""},
                "error_code": int(ErrorCode.LEADER_NOT_AVAILABLE),
            },
            True,
        ),
        ("int and str keys", {"_unknown_tags": {1: b"", "1": b""}}, False),
        ("an int key on a list", {5: [1]}, False),
        ("records as text", {"records": "AAAA"}, False),
        ("records as a uuid", {"records": uuid.UUID(int=1)}, False),
        ("a dict subclass", {"x": type("D", (dict,), {})()}, False),
        ("floats", {"x": [1.5, float("nan"), float("inf"), -float("inf"), 1e300, -0.0]}, True),
        ("big ints", {"x": [2**64, -(2**70), True, None]}, True),
        ("escapes", {"x": '"\\/\b\f\n\r\t\x00\x1f\x7f é€😀'}, True),
        ("uuids", {"topics": [{"topic_id": uuid.UUID(int=0)}, {"topic_id": uuid.uuid4()}]}, True),
        ("memoryview blob", {"records": memoryview(build_batch([{"value": b"v"}]))}, True),
        ("bytearray blob", {"records": bytearray(build_batch([{"value": b"v"}]))}, True),
        ("a released view", {"records": _released()}, False),
        ("not a byte view", {"records": memoryview(b"\0" * 8).cast("i")}, False),
        ("a deep blob first", {"a": _deep(7, records=b"\0"), "records": b"\0"}, False),
        ("a deep blob after", {"records": b"\0", "a": _deep(7, records=b"\0")}, True),
        ("a deep blob alone", {"a": _deep(7, records=b"\0")}, False),
        ("records_error kept", {"records": b"\0" * 20, "records_error": "mine"}, False),
        (
            "topic names",
            {"topics": [{"name": "a"}, {"topic": "b"}, {"name": None, "topic": "c"}]},
            True,
        ),
        (
            "responses",
            {
                "responses": [
                    {"topic_name": "a", "error_code": int(ErrorCode.NONE)},
                    {"error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)},
                ]
            },
            True,
        ),
        (
            "error codes",
            {
                "x": [
                    {"error_code": int(ErrorCode.NONE)},
                    {"error_code": True},
                    {"error_code": CORRUPT},
                ]
            },
            True,
        ),
    ],
)
def test_odd_bodies(label: str, body, answered: bool) -> None:
    assert check(body) == answered, label


def test_a_not_dict_body_and_other_decoders_take_the_python_path() -> None:
    assert NATIVE.facts_and_json([1]) is None
    assert bodies.facts_and_json([1, b"x"], codec) == bodies._facts_and_json([1, b"x"], codec)

    class Other:
        to_json = staticmethod(codec.to_json)

    body = produce(build_batch([{"value": b"v", "timestamp": TS}]))
    assert bodies.facts_and_json(body, Other()) == bodies._facts_and_json(body, Other())


def test_no_reference_leaks() -> None:
    """20,000 bodies through the C walk (expanded blobs, blobs handed to expand_records, failed
    blobs, bodies handed back): the live allocations stay flat."""
    v2 = build_batch([{"key": b"k", "value": b"v" * 20, "headers": [("h", b"x")]}] * 5)
    made = [
        produce(v2),
        produce(v2[:-1]),
        produce(build_batch([{"value": b"v"}], compression="gzip")),
        {"topics": [{"name": "a", "topic_id": uuid.uuid4(), "error_code": CORRUPT}], "x": 2**70},
        {"error_code": Color.RED},
    ]

    def run(rounds: int) -> int:
        answered = 0
        for i in range(rounds):
            answered += NATIVE.facts_and_json(made[i % len(made)]) is not None
            answered += NATIVE.body_json(made[i % len(made)], True) is not None
        return answered

    run(50)
    answered, grown = blocks_left_by(lambda: run(20_000))
    assert answered == 2 * 16_000
    assert grown < 200, f"{grown} blocks left by 20,000 bodies"
