"""Hostile input: every malformed batch is a DecodeError, in bounded time and memory."""

from __future__ import annotations

import struct
import time
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipwire.codec.errors import DecodeError
from kipwire.codec.records import Compression, build_batch, iter_batches
from kipwire.codec.records.compression import compress

pytestmark = pytest.mark.usefixtures("records_path")

TS = 1_700_000_000_000


def v2_batch(records: bytes, count: int, *, attributes: int = 0, base_offset: int = 0) -> bytes:
    """A v2 batch around hand-made record bytes, with a correct CRC-32C."""
    from crc32c import crc32c

    tail = struct.pack(">hiqqqhii", attributes, max(count - 1, 0), TS, TS, -1, -1, -1, count)
    tail += records
    head = struct.pack(">qiib", base_offset, 49 + len(records), -1, 2)
    return head + struct.pack(">I", crc32c(tail)) + tail


def legacy_message(
    offset: int, value: bytes | None, *, attributes: int = 0, magic: int = 1
) -> bytes:
    """A legacy message with a correct CRC-32."""
    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", TS) if magic else b"")
    body += b"\xff\xff\xff\xff"  # null key
    body += b"\xff\xff\xff\xff" if value is None else struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def decode_all(data: bytes, **options) -> list:
    return [batch.records for batch in iter_batches(data, **options)]


# A well-formed record: length 7, attributes, deltas 0, null key, value b"v", no headers.
GOOD_RECORD = bytes.fromhex("0e 00 00 00 01 02 76 00")


def test_hand_made_batch_is_valid() -> None:
    # the helpers themselves, so the failures below are about the one thing each changes
    (records,) = decode_all(v2_batch(GOOD_RECORD * 2, 2))
    assert [r.value for r in records] == [b"v", b"v"]


def test_wrong_crc_names_the_base_offset() -> None:
    data = bytearray(build_batch([{"value": b"x", "timestamp": TS}], base_offset=77))
    data[-2] ^= 0xFF  # the value's one byte
    with pytest.raises(DecodeError, match="base offset 77") as info:
        decode_all(bytes(data))
    assert info.value.offset == 17  # where the CRC field sits
    # a forensic read skips the check and sees the damaged byte
    (records,) = decode_all(bytes(data), verify_crc=False)
    assert records[0].value == bytes([ord("x") ^ 0xFF])


def test_wrong_legacy_crc() -> None:
    data = bytearray(legacy_message(3, b"hello"))
    data[-1] ^= 0x01
    with pytest.raises(DecodeError, match="CRC-32 mismatch.*offset 3"):
        decode_all(bytes(data))


@pytest.mark.parametrize("count", [3, 1, 2**31 - 1, 0, -1])
def test_lying_record_count(count) -> None:
    with pytest.raises(DecodeError):
        decode_all(v2_batch(GOOD_RECORD * 2, count))


@pytest.mark.parametrize("length_byte", ["0c", "10", "7e", "01", "00"])
def test_lying_record_length(length_byte) -> None:
    record = bytes.fromhex(length_byte) + GOOD_RECORD[1:]
    with pytest.raises(DecodeError, match=r"records\[0\]"):
        decode_all(v2_batch(record + GOOD_RECORD, 2))


@pytest.mark.parametrize(
    "varint",
    [
        "ffffffffff01",  # six bytes for an int32 varint
        "ffffffff7f",  # five bytes, but 35 bits set: overflows int32
        "ffffffffffffffffffff01",  # eleven bytes for the varlong timestamp delta (see below)
    ],
)
def test_varint_overflow(varint) -> None:
    if len(varint) > 12:  # put it where the varlong is
        record = bytes.fromhex("0e 00") + bytes.fromhex(varint) + GOOD_RECORD[3:]
    else:
        record = bytes.fromhex(varint) + GOOD_RECORD[1:]
    with pytest.raises(DecodeError, match="varint"):
        decode_all(v2_batch(record, 1))


def test_varint_running_off_the_end() -> None:
    # length 6, attributes, then a varlong whose continuation bits run out of record bytes: the
    # error points at the varint's first byte (61 bytes of batch header, then 2 of the record)
    with pytest.raises(DecodeError, match="ends inside a varint") as info:
        decode_all(v2_batch(b"\x0c\x00" + b"\xff" * 5, 1))
    assert info.value.offset == 63


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("key", "03"),  # key length -2
        ("value", "05"),  # value length -3
        ("headers", "7f"),  # header count -64
        ("headers", "feffffff0f"),  # header count 2**31 - 1 (lying: 2 bytes left)
    ],
)
def test_lying_inner_lengths(field, bad) -> None:
    records = {
        "key": "00 00 00" + bad + "02 76 00",
        "value": "00 00 00 01" + bad + "00",
        "headers": "00 00 00 01 02 76" + bad,
    }[field]
    body = bytes.fromhex(records)
    record = bytes([len(body) << 1]) + body
    with pytest.raises(DecodeError):
        decode_all(v2_batch(record, 1))


def test_header_key_must_be_utf8() -> None:
    body = bytes.fromhex("00 00 00 01 01 02 02 ff 00")  # null key and value, header key 0xff
    with pytest.raises(DecodeError, match="UTF-8"):
        decode_all(v2_batch(bytes([len(body) << 1]) + body, 1))


@pytest.mark.parametrize("magic", [3, 4, 127, 128, 255])
def test_unknown_magic(magic) -> None:
    data = bytearray(build_batch([{"value": b"x", "timestamp": TS}]))
    data[16] = magic
    with pytest.raises(DecodeError, match="unknown magic"):
        decode_all(bytes(data))


@pytest.mark.parametrize("code", [5, 6, 7])
def test_unknown_compression_code(code) -> None:
    with pytest.raises(DecodeError, match="compression code"):
        decode_all(v2_batch(GOOD_RECORD, 1, attributes=code))


@pytest.mark.parametrize("length", [-1, 0, 48])
def test_batch_length_below_the_header(length) -> None:
    data = bytearray(v2_batch(GOOD_RECORD, 1))
    struct.pack_into(">i", data, 8, length)
    with pytest.raises(DecodeError, match="batch length"):
        decode_all(bytes(data))


@pytest.mark.parametrize("codec", list(Compression)[1:], ids=lambda c: c.name.lower())
def test_corrupt_compressed_payload(codec) -> None:
    payload = compress(codec, GOOD_RECORD * 100)
    payload = payload[: len(payload) // 2] + b"\x00" * (len(payload) - len(payload) // 2)
    with pytest.raises(DecodeError):
        decode_all(v2_batch(payload, 100, attributes=codec.value))


@pytest.mark.parametrize("codec", list(Compression)[1:], ids=lambda c: c.name.lower())
def test_decompression_bomb_small_limit(codec) -> None:
    # 16 MiB of zeros against a 1 MiB limit: refused, and not by allocating the 16 MiB
    payload = compress(codec, bytes(16 << 20))
    data = v2_batch(payload, 1, attributes=codec.value)
    (batch,) = iter_batches(data, max_decompressed=1 << 20)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(DecodeError, match="more than 1048576 bytes"):
            batch.records  # noqa: B018
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 5
    assert peak < 8 << 20


@pytest.mark.parametrize("codec", list(Compression)[1:], ids=lambda c: c.name.lower())
def test_decompression_bomb_default_limit(codec) -> None:
    payload = compress(codec, bytes((64 << 20) + 1))  # one byte over the default 64 MiB
    with pytest.raises(DecodeError, match="more than 67108864 bytes"):
        decode_all(v2_batch(payload, 1, attributes=codec.value))


def test_decompression_limit_allows_exactly_the_limit() -> None:
    records = [{"value": b"v" * 1000, "timestamp": TS}] * 10
    data = build_batch(records, compression="zstd")
    body_size = len(build_batch(records)) - 61
    (exact,) = iter_batches(data, max_decompressed=body_size)
    assert len(exact.records) == 10
    (short,) = iter_batches(data, max_decompressed=body_size - 1)
    with pytest.raises(DecodeError):
        short.records  # noqa: B018


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_nested_compression_in_legacy_sets(codec) -> None:
    inner_wrapper = legacy_message(0, compress(codec, legacy_message(0, b"x")), attributes=codec)
    outer = legacy_message(0, compress(codec, inner_wrapper), attributes=codec)
    with pytest.raises(DecodeError, match="nested compression"):
        decode_all(outer)


def test_legacy_inner_magic_must_match_the_wrapper() -> None:
    inner = legacy_message(0, b"x", magic=0)
    wrapper = legacy_message(0, compress(Compression.GZIP, inner), attributes=1, magic=1)
    with pytest.raises(DecodeError, match="magic"):
        decode_all(wrapper)


def test_legacy_wrapper_offset_below_its_inner_offsets() -> None:
    inner = legacy_message(5, b"x") + legacy_message(9, b"y")
    wrapper = legacy_message(2, compress(Compression.GZIP, inner), attributes=1)
    with pytest.raises(DecodeError, match="below its last inner offset"):
        decode_all(wrapper)


MESSAGE = legacy_message(0, b"hello")


@pytest.mark.parametrize(
    "damaged",
    [
        MESSAGE[:8] + struct.pack(">i", 5) + MESSAGE[12:],  # size below the minimum
        MESSAGE[:8] + struct.pack(">i", -20) + MESSAGE[12:],  # negative size
        MESSAGE[:26] + struct.pack(">i", 1000) + MESSAGE[30:],  # key length past the message
        MESSAGE[:26] + struct.pack(">i", -7) + MESSAGE[30:],  # key length negative
        MESSAGE[:30] + struct.pack(">i", 4) + MESSAGE[34:],  # value shorter than the message
        legacy_message(0, None, attributes=1),  # a wrapper whose value is null
    ],
    ids=["small-size", "negative-size", "key-too-long", "key-negative", "value-short", "null"],
)
def test_legacy_lying_lengths(damaged) -> None:
    with pytest.raises(DecodeError):
        decode_all(damaged, verify_crc=False)


def test_empty_legacy_wrapper() -> None:
    with pytest.raises(DecodeError, match="no messages"):
        decode_all(legacy_message(0, compress(Compression.GZIP, b""), attributes=1))


VALID = build_batch(
    [
        {"key": b"k%d" % i, "value": b"v" * i, "headers": [("h", b"x")], "timestamp": TS + i}
        for i in range(20)
    ]
) + build_batch([{"key": None, "value": b"legacy", "timestamp": TS}], magic=1, base_offset=20)


@settings(max_examples=300, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=6))
def test_damaged_bytes_only_ever_raise_decode_error(damage) -> None:
    data = bytearray(VALID)
    for position, byte in damage:
        data[position] = byte
    try:
        for batch in iter_batches(bytes(data), verify_crc=False):
            batch.records  # noqa: B018
    except DecodeError:
        pass


@settings(max_examples=300, deadline=1000)
@given(st.binary(max_size=200))
def test_random_bytes_only_ever_raise_decode_error(data) -> None:
    try:
        for batch in iter_batches(data, verify_crc=False):
            batch.records  # noqa: B018
    except DecodeError:
        pass
