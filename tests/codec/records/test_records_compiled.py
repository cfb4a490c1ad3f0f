"""The compiled record loops (`codec/_compiled/records.c`) against the Python ones in batch.py.

`NATIVE.read` and `NATIVE.frame` are called directly here, so an input the C code hands back to
Python (it returns None) shows up instead of being answered: on well-formed batches and values
both must give the same records and bytes; on hostile and mutated batches the C code must refuse
exactly what Python refuses (or values past int64, which only Python's ints hold), and never
crash the interpreter or leak.
"""

from __future__ import annotations

import os
import random
import shutil
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_growth import blocks_left_by
from test_records_hostile import GOOD_RECORD, TS, v2_batch

from kipwire import codec
from kipwire.codec import DecodeError
from kipwire.codec.records import Compression, Record, batch, build_batch, iter_batches

NATIVE = batch.NATIVE
needs_native = pytest.mark.skipif(NATIVE is None, reason="the compiled record loops are not built")
# Mutated batches through the C reader: KIPWIRE_FUZZ_FRAMES=1000000 for the long hunt.
FUZZ_BATCHES = int(os.environ.get("KIPWIRE_FUZZ_FRAMES", "3000"))
# Timestamps whose differences still fit int64 (beyond, only Python's ints write them).
SPREAD = st.integers(-(2**62), 2**62)
maybe_bytes = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3)
records = st.lists(
    st.fixed_dictionaries(
        {"key": maybe_bytes, "value": maybe_bytes, "headers": headers},
        optional={"timestamp": st.integers(0, 2**41) | SPREAD},
    ),
    min_size=1,
    max_size=12,
)


def shape(obj: Any) -> Any:
    """`obj` with every type made visible, for an exact comparison."""
    if isinstance(obj, Record):
        return ("Record", [shape(getattr(obj, f)) for f in Record.__dataclass_fields__])
    if isinstance(obj, list | tuple):
        return (type(obj).__name__, [shape(x) for x in obj])
    return (type(obj).__name__, obj)


def python_read(payload: bytes, count: int, base: int, ts: int, fixed: int | None) -> Any:
    """What batch.py's Python loop gives for a batch's records: their shape, or "refused"."""
    try:
        return shape(batch.decode_records(payload, count, base, ts, fixed, 0, "records"))
    except DecodeError:
        return "refused"


def beyond_int64(result: Any) -> bool:
    """True when a record's offset or timestamp does not fit int64 (the C code leaves those)."""
    if result == "refused":
        return False
    fields = [r[1] for r in result[1]]
    return any(not -(2**63) <= f[i][1] < 2**63 for f in fields for i in (0, 1))


def check_read(payload: bytes, count: int, base: int = 0, ts: int = TS, fixed: int | None = None):
    """The C reader and stream give what Python gives; they refuse only what Python refuses (or
    int64 overflows). Returns Python's outcome."""
    expected = python_read(payload, count, base, ts, fixed)
    got = NATIVE.read(payload, count, base, ts, fixed)
    stream = NATIVE.stream(payload, count, base, ts, fixed)
    if got is None:
        assert expected == "refused" or beyond_int64(expected), payload.hex()
        assert stream is None
    else:
        assert shape(got) == expected == shape(list(stream)), payload.hex()
    return expected


def test_active_when_the_compiled_codec_is() -> None:
    """The record loops are built and used wherever the compiled codec is."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the pure-Python path is expected")
    assert (NATIVE is not None) == codec.compiled
    assert batch._native is NATIVE


@needs_native
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records,
    st.integers(0, 2**63 - 1),
    st.none() | st.integers(0, 2**40),
    st.none() | st.lists(st.integers(0, 3), min_size=12, max_size=12),
)
def test_same_bytes_and_records(recs, base_offset, log_append_time, gaps) -> None:
    """Dicts and Records frame to Python's bytes, which read back to Python's records."""
    deltas = None
    if gaps is not None:  # keep_offsets: rising deltas with gaps, as compaction leaves them
        deltas = [sum(gaps[: i + 1]) + i for i in range(len(recs))]
    as_records = [Record(0, r.get("timestamp"), r["key"], r["value"], r["headers"]) for r in recs]
    for horizon in (None, log_append_time):  # compaction's delete horizon as base timestamp
        expected = batch._encode_records(recs, TS, deltas, horizon)
        assert NATIVE.frame(recs, TS, deltas, horizon) == expected
        assert NATIVE.frame(as_records, TS, deltas, horizon) == expected
        body, first, _ = expected
        for fixed in (None, log_append_time):
            assert check_read(body, len(recs), base_offset, first, fixed) != "refused"


ODD = [
    b"", None, bytearray(b"ab"), memoryview(b"ab"), "text", 1, 1.5, True, [], (), [("k", b"v")],
    [("k", b"v", b"x")], [["k", b"v"]], [("k", "v")], [(b"k", b"v")], [("\ud800", b"v")], {},
    2**63, -(2**63) - 1, 2**64,
]  # fmt: skip


@needs_native
@pytest.mark.parametrize("field", ["key", "value", "headers", "timestamp"])
@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_odd_values_are_left_to_python(field, odd) -> None:
    """A value of another type or out of range: the C code writes Python's bytes or hands the
    records back (None), never bytes Python would not write and never an error of its own."""
    recs = [{"key": b"k", "value": b"v", "timestamp": TS}, {"value": b"w", field: odd}]
    got = NATIVE.frame(recs, TS, None, None)
    try:
        expected = batch._encode_records(recs, TS, None, None)
    except Exception as exc:  # the EncodeError the Python code raises, or one it lets through
        assert got is None, exc
        return
    assert got is None or got == expected


@needs_native
def test_records_of_other_types_are_left_to_python() -> None:
    class Sub(Record):
        pass

    unset = Record.__new__(Record)
    for odd in ([Sub(0, TS, None, b"v", [])], [unset], [("k", b"v")], ({"value": b"v"},), []):
        assert NATIVE.frame(odd, TS, None, None) is None


def rec(fields: str) -> bytes:
    """A record from the hex of its fields, after a length that counts them."""
    body = bytes.fromhex(fields)
    return bytes([len(body) << 1]) + body


@needs_native
@pytest.mark.parametrize(
    ("payload", "count"),
    [
        pytest.param(GOOD_RECORD * 2, 3, id="fewer records than counted"),
        pytest.param(GOOD_RECORD * 2, 1, id="bytes left over"),
        pytest.param(GOOD_RECORD, 2**31 - 1, id="a count the bytes cannot hold"),
        pytest.param(GOOD_RECORD, -1, id="negative count"),
        pytest.param(b"\x0c" + GOOD_RECORD[1:], 1, id="record length one short"),
        pytest.param(b"\x7e" + GOOD_RECORD[1:], 1, id="record length past the end"),
        pytest.param(b"\x01" + GOOD_RECORD[1:], 1, id="negative record length"),
        pytest.param(bytes.fromhex("ffffffffff01") + GOOD_RECORD[1:], 1, id="six-byte varint"),
        pytest.param(bytes.fromhex("ffffffff7f") + GOOD_RECORD[1:], 1, id="35 bits in an int32"),
        pytest.param(
            bytes.fromhex("0e00ffffffffffffffffff01") + GOOD_RECORD[3:], 1, id="11-byte varlong"
        ),
        pytest.param(b"\x0c\x00" + b"\xff" * 5, 1, id="a varint running off the end"),
        pytest.param(rec("00 00 00 03 02 76 00"), 1, id="key length -2"),
        pytest.param(rec("00 00 00 03 01 00"), 1, id="value length -3"),
        pytest.param(rec("00 00 00 01 08 76 00"), 1, id="value past the record"),
        pytest.param(rec("00 00 00 01 02 76 7f"), 1, id="header count -64"),
        pytest.param(rec("00 00 00 01 02 76 feffffff0f"), 1, id="header count 2**31 - 1"),
        pytest.param(rec("00 00 00 01 01 02 02 ff 00"), 1, id="header key not UTF-8"),
        pytest.param(rec("00 00 00 01 01 02 01 00"), 1, id="header key length -1"),
        pytest.param(rec("00 00 00 01 01 02 02 41 07"), 1, id="header value length -4"),
        pytest.param(rec("00 00 00 01 01 02 02 41 0a 00"), 1, id="header value past the record"),
        pytest.param(rec("00 00 00 01 02 76 00 00"), 1, id="a byte the fields do not use"),
    ],
)
def test_hostile_records_are_refused(payload, count) -> None:
    """Each is refused by the C reader (before allocating for a lying length) and by Python,
    which then raises the DecodeError: the same one on both paths through iter_batches."""
    assert NATIVE.read(payload, count, 0, TS, None) is None
    assert NATIVE.stream(payload, count, 0, TS, None) is None
    assert python_read(payload, count, 0, TS, None) == "refused"
    errors = []
    for compiled, iterate in ((True, False), (True, True), (False, False), (False, True)):
        batch.use_compiled(compiled)
        try:
            with pytest.raises(DecodeError) as info:
                for one in iter_batches(v2_batch(payload, count)):
                    iter(one) if iterate else one.records  # noqa: B018
        finally:
            batch.use_compiled(True)
        errors.append((str(info.value), info.value.offset, info.value.path))
    assert errors[0] == errors[1] == errors[2] == errors[3]


@needs_native
def test_int64_overflow_is_left_to_python() -> None:
    """An offset or timestamp past int64 is a big int in Python: the C reader hands it back."""
    big_delta = bytes.fromhex("0e 00 00 fe ff ff ff 0f 01 02 76 00")  # offset delta 2**31 - 1
    record = bytes([(len(big_delta) - 1) << 1]) + big_delta[1:]
    assert NATIVE.read(record, 1, 2**63 - 1, TS, None) is None
    (got,) = batch.decode_records(record, 1, 2**63 - 1, TS, None, 0, "records")
    assert got.offset == 2**63 - 1 + 2**31 - 1
    assert NATIVE.read(record, 1, 0, TS, None)[0].offset == 2**31 - 1


def mutate(rng: random.Random, payload: bytes) -> bytes:
    """Records with bytes flipped, a lying varint written in, a byte added, or the end cut."""
    out = bytearray(payload)
    choice = rng.randrange(4)
    if choice == 0:
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif choice == 1:
        at = rng.randrange(len(out))
        out[at : at + 5] = rng.choice([b"\xff\xff\xff\xff\x0f", b"\x7f", b"\x01", b"\xfe\x03"])
    elif choice == 2:
        del out[rng.randrange(len(out)) :]
    else:
        out.insert(rng.randrange(len(out) + 1), rng.randrange(256))
    return bytes(out)


@needs_native
def test_mutated_batches() -> None:
    """KIPWIRE_FUZZ_FRAMES mutated record sections (3,000 by default) through the C reader."""
    rng = random.Random(23)
    bodies = []
    for n in (1, 3, 8):
        recs = [
            {
                "key": None if i % 3 else b"key-%d" % i,
                "value": b"v" * (i * 7 % 40) if i % 4 else None,
                "headers": [(f"h{j}", None if j else b"x" * i) for j in range(i % 3)],
                "timestamp": TS + i * 300,
            }
            for i in range(n)
        ]
        body, first, _ = batch._encode_records(recs, TS, None, None)
        bodies.append((body, n, first))
    outcomes = {"refused": 0, "read": 0}
    for i in range(FUZZ_BATCHES):
        body, n, first = bodies[i % len(bodies)]
        bad = mutate(rng, body)
        count = n + rng.choice([0, 0, 0, 1, -1])
        fixed = TS if i % 5 == 0 else None
        result = check_read(bad, count, rng.choice([0, 2**40, 2**63 - 2]), first, fixed)
        outcomes["refused" if result == "refused" else "read"] += 1
    assert outcomes["refused"] and outcomes["read"], outcomes  # the fuzz reached both sides


@needs_native
def test_no_reference_leaks() -> None:
    """100,000 records read, framed and streamed (some batches malformed): the live allocations
    stay flat, where one leaked object per record would add 100,000."""
    recs = [
        {"key": b"k", "value": b"v" * 20, "headers": [("h", b"x")] if i % 2 else [], "timestamp": i}
        for i in range(1000)
    ]
    body, first, _ = NATIVE.frame(recs, TS, None, None)
    bad = body[:-1]

    def run(rounds: int) -> int:
        read = 0
        for i in range(rounds):
            assert NATIVE.frame(recs, TS, None, None)[0] == body
            assert NATIVE.frame([*recs, {"value": 1.5}], TS, None, None) is None
            got = NATIVE.read(body if i % 5 else bad, 1000, 0, first, None if i % 2 else TS)
            read += 0 if got is None else len(got)
            stream = NATIVE.stream(body if i % 5 else bad, 1000, 0, first, TS)
            assert (stream is None) == (got is None)
            if i % 3 == 0 and stream is not None:
                assert sum(1 for _ in stream) == 1000
        return read

    run(5)
    read, grown = blocks_left_by(lambda: run(125))
    assert read == 100_000
    assert grown < 1000, f"{grown} more blocks allocated after 100,000 records"


@needs_native
@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name.lower())
def test_batches_read_the_same_on_both_paths(codec) -> None:
    """Whole batches, every codec and log append time: the same records either way."""
    recs = [
        {"key": b"k%d" % i, "value": b"v" * i, "headers": [("h", b"x")] * (i % 2), "timestamp": i}
        for i in range(50)
    ]
    data = build_batch(recs, compression=codec, base_offset=9, log_append_time=TS)
    data += build_batch(recs, compression=codec, base_offset=59)
    read = []
    for compiled in (True, False):
        batch.use_compiled(compiled)
        try:
            read.append([shape(b.records) for b in iter_batches(data)])
            read.append([shape(list(b)) for b in iter_batches(data)])
        finally:
            batch.use_compiled(True)
    assert read[0] == read[1] == read[2] == read[3]
    assert read[0][0][1][0][1][1] == ("int", TS)  # log append time replaces the timestamps


@needs_native
def test_stream_of_bytes_changed_while_iterated() -> None:
    """The stream holds the buffer (it cannot be resized) but its bytes can still change: it
    reads on with every bound checked, and says so when a record no longer reads."""
    body, first, _ = NATIVE.frame([{"value": b"v" * 10, "timestamp": TS}] * 4, TS, None, None)
    buf = bytearray(body)
    stream = NATIVE.stream(memoryview(buf), 4, 0, first, None)
    assert next(stream).value == b"v" * 10
    with pytest.raises(BufferError):
        buf.append(0)
    buf[len(buf) // 2 :] = b"\xff" * (len(buf) - len(buf) // 2)
    with pytest.raises(RuntimeError, match="changed"):
        list(stream)


@needs_native
def test_iterating_a_batch_streams_its_records() -> None:
    (one,) = iter_batches(build_batch([{"value": b"v", "timestamp": TS}] * 3))
    assert type(iter(one)).__name__ == "stream"
    assert [r.offset for r in one] == [0, 1, 2]
    assert one._records is None  # iterating keeps nothing
    assert one.records == list(one)
    assert type(iter(one)) is type(iter([]))  # once kept, the list is iterated


@needs_native
def test_setup_refuses_a_class_without_the_slots() -> None:
    """Only a class whose five fields are writable object slots is taken; the one in use stays."""

    class Plain:
        offset = timestamp = key = value = headers = None

    for odd in (Plain, int, "Record"):
        with pytest.raises(TypeError):
            NATIVE.setup(odd)
    assert NATIVE.read(GOOD_RECORD, 1, 7, TS, None) == [Record(7, TS, None, b"v", [])]
