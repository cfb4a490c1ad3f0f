"""Hostile input: mutated frames of many messages decode or raise DecodeError, nothing else, in
bounded time and memory; length fields that lie fail before anything is allocated."""

from __future__ import annotations

import contextlib
import os
import time
import tracemalloc
from typing import Any

import pytest
from codec_strategies import values, versions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipwire import codec

# The compiled decoders and the Python parsers (tests/codec/conftest.py).
pytestmark = pytest.mark.usefixtures("codec_path")

# Every message of every kind; versions drawn from each one's range.
NAMES = sorted(codec.MESSAGES)
KIND = {name: entry[1] for name, entry in codec.MESSAGES.items()}
for _name, (_, _kind, _key, _) in codec.MESSAGES.items():
    # ListClientMetricsResources* share API key 74 with ListConfigResources* (the name the API
    # registry uses): fuzz those as bare bodies.
    if _kind in ("request", "response") and _name not in codec.APIS[_key]:
        KIND[_name] = "body"
    # Tiered storage's records number their keys apart from the KRaft log's (not in RECORDS).
    if _kind == "metadata" and codec.RECORDS.get(_key) != _name:
        KIND[_name] = "body"
API_KEY = {name: entry[2] for name, entry in codec.MESSAGES.items()}
FRAMES_PER_EXAMPLE = 12
# KIPWIRE_FUZZ_EXAMPLES=5000 for a longer hunt; each example decodes FRAMES_PER_EXAMPLE frames.
FUZZ_EXAMPLES = int(os.environ.get("KIPWIRE_FUZZ_EXAMPLES", "400"))
SLOW = 0.5  # seconds; a decode of a frame of a few KiB takes well under a millisecond

HUGE = [
    b"\x7f\xff\xff\xff",  # int32 max
    b"\xff\xff\xff\xfe",  # int32 -2
    b"\x80\x00\x00\x00",  # int32 min
    b"\x7f\xff",  # int16 max
    b"\xff\xff\xff\xff\x0f",  # uvarint 2^32 - 1
    b"\x81\x80\x80\x80\x08",  # uvarint 2^31 + 1
    b"\xff\xff\xff\xff\xff",  # uvarint that never ends within 5 bytes
]


def encode(name: str, version: int, value: dict) -> bytes:
    kind = KIND[name]
    if kind == "request":
        return codec.encode_request(API_KEY[name], version, value, correlation_id=7, client_id="c")
    if kind == "response":
        return codec.encode_response(API_KEY[name], version, value, correlation_id=7)
    if kind == "metadata":
        return codec.encode_record(name, version, value)
    return codec.message(name, version).build(value)


def decode(name: str, version: int, data: bytes) -> Any:
    kind = KIND[name]
    if kind == "request":
        return codec.decode_request(data)
    if kind == "response":
        return codec.decode_response(data, API_KEY[name], version)
    if kind == "metadata":
        return codec.decode_record(data)
    return codec.message(name, version).parse(data)


@st.composite
def mutation(draw: st.DrawFn, data: bytes) -> bytes:
    """One frame: `data` with one to three random damages."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        n = len(out)
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "huge", "byte"]))
        at = draw(st.integers(0, max(n - 1, 0)))
        if op == "flip" and n:
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del out[at:]
        elif op == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif op == "delete" and n:
            del out[at : at + draw(st.integers(1, 4))]
        elif op == "huge":
            field = draw(st.sampled_from(HUGE))
            out[at : at + len(field)] = field
        elif op == "byte" and n:
            out[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
    return bytes(out)


def assert_decodes_or_rejects(name: str, version: int, frame: bytes) -> None:
    start = time.perf_counter()
    try:
        decode(name, version, frame)
    except codec.DecodeError as e:
        assert e.offset is None or 0 <= e.offset <= len(frame), (name, version, frame.hex(), e)
    except Exception as e:  # noqa: BLE001 - the point: nothing but DecodeError may escape
        pytest.fail(f"{name} v{version}: {type(e).__name__}: {e} on {frame.hex()}")
    elapsed = time.perf_counter() - start
    assert elapsed < SLOW, f"{name} v{version} took {elapsed:.3f}s on {len(frame)} bytes"


@st.composite
def valid_frames(draw: st.DrawFn) -> tuple[str, int, bytes]:
    name = draw(st.sampled_from(NAMES))
    vs = versions(name)
    version = draw(st.sampled_from(vs))
    value = draw(values(name, version))
    return name, version, encode(name, version, value)


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(frame=valid_frames(), data=st.data())
def test_mutated_frames_raise_only_decode_error(frame: tuple[str, int, bytes], data: Any) -> None:
    name, version, good = frame
    decode(name, version, good)  # the unmutated frame decodes
    for _ in range(FRAMES_PER_EXAMPLE):
        assert_decodes_or_rejects(name, version, data.draw(mutation(good)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=valid_frames(), data=st.data())
def test_lying_lengths_allocate_little(frame: tuple[str, int, bytes], data: Any) -> None:
    """Length fields set huge anywhere in a frame: decoding allocates a bounded amount."""
    name, version, good = frame
    at = data.draw(st.integers(0, max(len(good) - 1, 0)))
    field = data.draw(st.sampled_from(HUGE))
    bad = bytearray(good)
    bad[at : at + len(field)] = field
    tracemalloc.start()
    try:
        assert_decodes_or_rejects(name, version, bytes(bad))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Decoded values are Python objects (a few hundred bytes per field), never sized by a claim.
    assert peak < 256 * 1024 + 2000 * len(bad), (name, version, at, field.hex(), peak)


def test_every_kind_is_fuzzed() -> None:
    assert set(KIND.values()) >= {"request", "response", "metadata", "data", "header"}


# -- a 25-byte frame claiming a 2^31-element array -----------------------------------------------


def _peak(fn: Any) -> tuple[BaseException | None, int, float]:
    with contextlib.suppress(Exception):
        fn()  # first use imports the message modules: not what is measured
    tracemalloc.start()
    start = time.perf_counter()
    err: BaseException | None = None
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        err = e
    finally:
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return err, peak, elapsed


REQUEST_25 = (
    bytes.fromhex("0003 000c 00000001 ffff 00".replace(" ", ""))  # Metadata v12, header v2
    + bytes.fromhex("8180808008")  # topics: compact array claiming 2^31 elements (2^31 + 1)
    + bytes(9)
)
RESPONSE_25 = (
    bytes.fromhex("00000001 00 00000000".replace(" ", ""))  # header v1, throttle_time_ms
    + bytes.fromhex("8180808008")  # brokers: 2^31 elements
    + bytes(11)
)
CLASSIC_25 = bytes.fromhex("00000000 7fffffff".replace(" ", "")) + bytes(17)  # v1: brokers


@pytest.mark.parametrize(
    "call",
    [
        lambda: codec.decode_request(REQUEST_25),
        lambda: codec.decode_response(RESPONSE_25, codec.ApiKey.METADATA, 12),
        lambda: codec.message("MetadataResponse", 3).parse(CLASSIC_25),
        lambda: codec.decode_record(bytes.fromhex("01 03 02".replace(" ", "")) + bytes(22)),
    ],
    ids=["request-compact", "response-compact", "body-classic", "record"],
)
def test_huge_array_claim_fails_at_once(call: Any) -> None:
    for frame in (REQUEST_25, RESPONSE_25, CLASSIC_25):
        assert len(frame) == 25
    err, peak, elapsed = _peak(call)
    assert isinstance(err, codec.DecodeError), err
    assert peak < 64 * 1024
    # a walk over 2^31 claimed elements takes minutes: a second tells it apart on a loaded machine
    assert elapsed < 1.0


def test_huge_claim_in_request_names_the_field() -> None:
    with pytest.raises(codec.DecodeError) as e:
        codec.decode_request(REQUEST_25)
    assert e.value.path == "topics"
    assert e.value.offset == 16  # right after the 11-byte header and the 5-byte length
