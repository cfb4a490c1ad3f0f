"""Segments: a log rolls by segment.bytes and segment.ms, reads cross segments, truncation and
DeleteRecords drop whole segments, and a storage back end sees every change through its hooks."""

from __future__ import annotations

from kipwire.codec.records import build_batch, iter_batches
from kipwire.mockbroker.broker.log import PartitionLog
from kipwire.mockbroker.broker.log_config import LogConfig
from kipwire.mockbroker.broker.segment import Segment, StoredBatch

VALUE = b"x" * 1000


def _batch(n: int, ts: int = 1000) -> bytes:
    return build_batch([{"key": b"k%d" % i, "value": VALUE, "timestamp": ts} for i in range(n)])


def _offsets(data: bytes) -> list[int]:
    return [r.offset for b in iter_batches(data) for r in b.records]


def test_a_segment_rolls_when_the_next_append_would_pass_segment_bytes():
    size = len(_batch(1))
    log = PartitionLog(config=LogConfig(segment_bytes=3 * size))
    for _ in range(7):
        log.append(_batch(1))
    # three batches fill a segment; the fourth would pass it and starts the next
    assert [(s.base_offset, len(s.batches)) for s in log.segments] == [(0, 3), (3, 3), (6, 1)]
    assert [s.size for s in log.segments] == [3 * size, 3 * size, size]
    assert log.size == 7 * size
    log.advance_high_watermark(log.end_offset)
    assert _offsets(log.read(2, 1 << 20)) == [2, 3, 4, 5, 6]  # a read crosses segments
    assert [b.base_offset for b in log.batches_from(4)] == [4, 5, 6]
    assert len(log.batches) == 7 and log.batches[-1].base_offset == 6
    assert log.batches[-4].base_offset == 3


def test_a_segment_rolls_after_segment_ms_of_record_time():
    log = PartitionLog(config=LogConfig(segment_ms=60_000))
    log.append(_batch(1, ts=1_000))
    log.append(_batch(1, ts=61_000))  # 60 s after the segment's first batch: not past it
    log.append(_batch(1, ts=61_001))
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert [s.max_timestamp for s in log.segments] == [61_000, 61_001]


def test_without_record_times_segment_ms_counts_from_the_segment_creation():
    now = [0]
    log = PartitionLog(config=LogConfig(segment_ms=1_000), clock=lambda: now[0])
    log.segments[0].rolling_timestamp = -1  # as a batch with no timestamp (-1) leaves it
    log.segments[0].size = 1
    now[0] = 1_001
    log.append(_batch(1, ts=5))
    assert [s.base_offset for s in log.segments] == [0, 0]
    assert log.segments[1].created_ms == 1_001


def test_truncation_and_delete_records_drop_whole_segments():
    size = len(_batch(1))
    log = PartitionLog(config=LogConfig(segment_bytes=2 * size))
    for _ in range(6):
        log.append(_batch(1))
    log.advance_high_watermark(log.end_offset)
    log.truncate_to(3)
    assert [(s.base_offset, len(s.batches)) for s in log.segments] == [(0, 2), (2, 1)]
    assert log.end_offset == 3
    assert log.delete_before(2) == 2
    assert [s.base_offset for s in log.segments] == [2]
    assert log.append(_batch(1)).base_offset == 3


class _Recording(Segment):
    """A back end that writes down the hooks it is called with."""

    calls: list[tuple[str, int]] = []

    def append(self, stored: StoredBatch) -> None:
        super().append(stored)
        self.calls.append(("append", stored.base_offset))

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset)
        self.calls.append(("truncate", offset))

    def flush(self) -> None:
        self.calls.append(("flush", self.base_offset))

    def delete(self) -> None:
        self.calls.append(("delete", self.base_offset))


def test_a_storage_back_end_sees_appends_rolls_flushes_and_deletions():
    size = len(_batch(1))
    _Recording.calls = []
    log = PartitionLog(config=LogConfig(segment_bytes=2 * size), new_segment=_Recording)
    for _ in range(3):
        log.append(_batch(1))
    log.flush()
    log.append(_batch(1))
    log.flush()  # only the active segment has unflushed records now
    log.advance_high_watermark(log.end_offset)
    log.delete_segments(1)
    assert _Recording.calls == [
        ("append", 0),
        ("append", 1),
        ("append", 2),
        ("flush", 2),
        ("flush", 0),
        ("append", 3),
        ("flush", 2),
        ("delete", 0),
    ]
    assert log.log_start_offset == 2
    assert all(isinstance(s, _Recording) for s in log.segments)
