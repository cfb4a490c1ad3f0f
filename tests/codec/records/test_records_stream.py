"""iter_batches, build_batch and assign_offsets: laziness, zero copy, truncation, mixed formats."""

from __future__ import annotations

import struct

import pytest

from kipwire.codec.errors import DecodeError, EncodeError
from kipwire.codec.records import (
    Compression,
    Record,
    TimestampType,
    assign_offsets,
    build_batch,
    iter_batches,
)

pytestmark = pytest.mark.usefixtures("records_path")

TS = 1_700_000_000_000


def recs(n: int, start: int = 0) -> list[dict]:
    return [{"key": b"k", "value": b"v%d" % (start + i), "timestamp": TS + i} for i in range(n)]


def test_iteration_is_lazy_and_zero_copy() -> None:
    data = build_batch(recs(3)) + build_batch(recs(2), base_offset=3)
    # break a record length inside the second batch, then fix its CRC: iterating must not care
    second = bytearray(data[len(build_batch(recs(3))) :])
    second[61] = 0x7E
    from crc32c import crc32c

    struct.pack_into(">I", second, 17, crc32c(bytes(second[21:])))
    data = data[: -len(second)] + bytes(second)
    first, broken = iter_batches(data)
    assert broken.record_count == 2 and broken.base_offset == 3
    assert broken.raw.obj is data  # a view of the caller's buffer, not a copy
    assert first.raw.obj is data and first.position == 0 and broken.position == first.size
    assert [r.value for r in first.records] == [b"v0", b"v1", b"v2"]
    with pytest.raises(DecodeError, match="records"):
        broken.records  # noqa: B018 - the damage shows when the records are decoded


def test_records_are_cached() -> None:
    (batch,) = iter_batches(build_batch(recs(2), compression="lz4"))
    assert batch.records is batch.records


@pytest.mark.parametrize("cut", [1, 8, 12, 16, 17, 40, 60, 61, 70])
def test_truncated_last_batch_is_flagged_not_an_error(cut) -> None:
    whole = build_batch(recs(2), base_offset=10)
    second = build_batch(recs(2, 2), base_offset=12)
    batches = list(iter_batches(whole + second[: len(second) - cut]))
    assert len(batches) == 2
    assert not batches[0].truncated and len(batches[0].records) == 2
    partial = batches[1]
    assert partial.truncated and partial.records == []
    assert partial.size == len(second) - cut
    if len(second) - cut >= 8:
        assert partial.base_offset == 12
    if len(second) - cut >= 17:
        assert partial.magic == 2
    if len(second) - cut >= 61:
        assert partial.record_count == 2 and partial.producer_id == -1


def test_truncated_batch_with_a_bad_header_is_still_just_truncated() -> None:
    data = bytearray(build_batch(recs(2), base_offset=4))
    data[22] = 0x07  # compression code 7 does not exist
    (batch,) = iter_batches(data[:-1])
    assert batch.truncated and batch.base_offset == 4 and batch.records == []


def test_truncated_legacy_message() -> None:
    data = build_batch(recs(3), magic=1)
    batches = list(iter_batches(data[:-5]))
    # the run keeps the two complete messages; the cut one comes after, truncated
    assert [b.truncated for b in batches] == [False, True]
    assert batches[0].record_count == 2 and batches[1].base_offset == 2
    assert batches[1].magic == 1 and batches[1].records == []


def test_empty_buffer_has_no_batches() -> None:
    assert list(iter_batches(b"")) == []


def test_mixed_formats_in_one_buffer() -> None:
    data = (
        build_batch(recs(2), magic=0, base_offset=0)
        + build_batch(recs(2, 2), magic=1, base_offset=2)
        + build_batch(recs(2, 4), magic=1, base_offset=4, compression="gzip")
        + build_batch(recs(2, 6), magic=2, base_offset=6, compression="zstd")
    )
    batches = list(iter_batches(data))
    # plain messages of one magic form a run; a change of magic or a wrapper starts a batch
    assert [(b.magic, b.compression, b.record_count) for b in batches] == [
        (0, Compression.NONE, 2),
        (1, Compression.NONE, 2),
        (1, Compression.GZIP, 2),
        (2, Compression.ZSTD, 2),
    ]
    assert [r.offset for b in batches for r in b.records] == list(range(8))
    assert [r.value for b in batches for r in b.records] == [b"v%d" % i for i in range(8)]
    assert sum(b.size for b in batches) == len(data)


def test_accepts_bytearray_and_memoryview() -> None:
    data = build_batch(recs(2))
    for buffer in (bytearray(data), memoryview(data), memoryview(bytearray(data)).cast("c")):
        (batch,) = iter_batches(buffer)
        assert [r.value for r in batch.records] == [b"v0", b"v1"]


def test_batch_properties() -> None:
    (batch,) = iter_batches(build_batch(recs(4), base_offset=100))
    assert (batch.last_offset, batch.next_offset) == (103, 104)
    assert batch.delete_horizon_ms is None
    assert "offsets=100..103" in repr(batch) and "records=4" in repr(batch)


def test_delete_horizon_bit() -> None:
    data = bytearray(build_batch(recs(1)))
    struct.pack_into(">h", data, 21, 0x40)
    (batch,) = iter_batches(data, verify_crc=False)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == TS


def test_log_append_time_overrides_record_timestamps() -> None:
    data = build_batch(recs(3), log_append_time=TS + 999)
    (batch,) = iter_batches(data)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == TS + 999 and batch.base_timestamp == TS
    assert [r.timestamp for r in batch.records] == [TS + 999] * 3


def test_legacy_log_append_time_wrapper() -> None:
    data = build_batch(recs(3), magic=1, compression="snappy", log_append_time=TS + 5)
    (batch,) = iter_batches(data)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records] == [TS + 5] * 3


def test_null_and_empty_are_kept_apart() -> None:
    records = [
        {"key": None, "value": b"", "headers": [("a", None), ("b", b"")], "timestamp": TS},
        {"key": b"", "value": None, "timestamp": TS},
    ]
    for magic in (0, 1, 2):
        use = records if magic == 2 else [dict(r, headers=[]) for r in records]
        (batch,) = iter_batches(build_batch(use, magic=magic))
        got = batch.records
        assert (got[0].key, got[0].value, got[1].key, got[1].value) == (None, b"", b"", None)
        if magic == 2:
            assert got[0].headers == [("a", None), ("b", b"")]


def test_build_accepts_records_and_missing_timestamps() -> None:
    (batch,) = iter_batches(
        build_batch([Record(0, TS, b"k", b"v", [("h", b"1")]), {"value": b"x"}])
    )
    first, second = batch.records
    assert first == Record(0, TS, b"k", b"v", [("h", b"1")])
    assert second.key is None and second.timestamp > TS  # stamped with the current time


def test_build_applies_compression_even_when_it_does_not_shrink() -> None:
    (batch,) = iter_batches(build_batch([{"value": b"\x01", "timestamp": TS}], compression="gzip"))
    assert batch.compression is Compression.GZIP and batch.records[0].value == b"\x01"


@pytest.mark.parametrize(
    ("records", "options", "message"),
    [
        ([], {}, "at least one record"),
        ([{"value": "text", "timestamp": TS}], {}, "records\\[0\\]"),
        ([{"value": b"x", "headers": [(b"k", b"v")], "timestamp": TS}], {}, "records\\[0\\]"),
        ([{"value": b"x", "timestamp": 1.5}], {}, "records\\[0\\]"),
        ([{"value": b"x"}], {"compression": "brotli"}, "compression"),
        ([{"value": b"x"}], {"magic": 3}, "magic"),
        ([{"value": b"x"}], {"magic": 1, "compression": "zstd"}, "zstd"),
        ([{"value": b"x"}], {"magic": 1, "transactional": True}, "magic 2"),
        ([{"value": b"x", "headers": [("h", b"v")]}], {"magic": 0}, "headers"),
        ([{"value": b"x"}], {"producer_epoch": 1 << 20}, "out of range"),
    ],
)
def test_build_errors(records, options, message) -> None:
    with pytest.raises(EncodeError, match=message):
        build_batch(records, **options)


def test_assign_offsets_rewrites_eight_bytes_in_place() -> None:
    data = bytearray(build_batch(recs(3)) + build_batch(recs(2)))
    before = bytes(data)
    assert assign_offsets(data, 500) is data
    changed = [i for i in range(len(data)) if data[i] != before[i]]
    second = len(build_batch(recs(3)))
    assert all(i < 8 or second <= i < second + 8 for i in changed)
    assert [r.offset for b in iter_batches(data) for r in b.records] == [500, 501, 502, 503, 504]


def test_assign_offsets_on_bytes_returns_new_bytes() -> None:
    data = build_batch(recs(2), compression="snappy")
    stamped = assign_offsets(data, 7, partition_leader_epoch=3)
    assert isinstance(stamped, bytes) and stamped != data
    (batch,) = iter_batches(stamped)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.crc) == (7, 3, batch.crc)
    assert [r.offset for r in batch.records] == [7, 8]


@pytest.mark.parametrize("codec", ["none", "gzip", "lz4"])
@pytest.mark.parametrize("magic", [0, 1])
def test_assign_offsets_legacy(codec, magic) -> None:
    data = build_batch(recs(3), magic=magic, compression=codec) + build_batch(
        recs(2), magic=magic, compression=codec
    )
    stamped = assign_offsets(bytearray(data), 40)
    assert [r.offset for b in iter_batches(stamped) for r in b.records] == list(range(40, 45))


def test_assign_offsets_refuses_a_truncated_batch() -> None:
    with pytest.raises(EncodeError, match="truncated"):
        assign_offsets(build_batch(recs(2))[:-1], 0)


def test_a_compacted_batch_keeps_offsets_its_last_offset_and_a_delete_horizon() -> None:
    (original,) = iter_batches(build_batch(recs(5), base_offset=100, compression="zstd"))
    kept = [original.records[1], original.records[3]]
    data = build_batch(
        kept,
        base_offset=100,
        compression="zstd",
        keep_offsets=True,
        last_offset_delta=original.last_offset_delta,
        delete_horizon_ms=TS + 86_400_000,
    )
    (batch,) = iter_batches(data, verify_crc=True)
    assert [(r.offset, r.value, r.timestamp) for r in batch.records] == [
        (101, b"v1", TS + 1),
        (103, b"v3", TS + 3),
    ]
    assert batch.last_offset == 104 and batch.record_count == 2
    assert batch.delete_horizon_ms == TS + 86_400_000
    assert batch.max_timestamp == TS + 3


@pytest.mark.parametrize(
    ("records", "options", "message"),
    [
        (recs(1), {"keep_offsets": True}, "Record values"),
        ([Record(5, TS, b"k", b"v", [])], {"keep_offsets": True, "base_offset": 6}, "rise"),
        ([Record(5, TS, b"k", b"v", [])], {"keep_offsets": True, "last_offset_delta": -1}, "below"),
        (recs(1), {"delete_horizon_ms": TS, "magic": 1}, "magic 2"),
    ],
)
def test_compacted_build_errors(records, options, message) -> None:
    with pytest.raises(EncodeError, match=message):
        build_batch(records, **options)
