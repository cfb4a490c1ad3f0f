"""Retention: whole segments go by time and by size, never past the high watermark, and the log
start offset follows; the cleaner visits only logs with more than one segment."""

from __future__ import annotations

from kipwire.codec.records import build_batch
from kipwire.mockbroker.broker.cleaner import LogCleaner
from kipwire.mockbroker.broker.log import EARLIEST, PartitionLog
from kipwire.mockbroker.broker.log_config import LogConfig
from kipwire.mockbroker.broker.retention import deletable_segments, enforce_retention

VALUE = b"x" * 1000
SIZE = len(build_batch([{"key": b"k", "value": VALUE, "timestamp": 0}]))


def _log(**config: int) -> PartitionLog:
    """A log of six one-record batches, two per segment, at timestamps 1000..6000."""
    log = PartitionLog(config=LogConfig(segment_bytes=2 * SIZE, **config))
    for i in range(6):
        log.append(build_batch([{"key": b"k", "value": VALUE, "timestamp": 1000 * (i + 1)}]))
    log.advance_high_watermark(log.end_offset)
    return log


def test_time_retention_deletes_segments_whose_largest_timestamp_is_too_old():
    log = _log(retention_ms=10_000)
    assert deletable_segments(log, now_ms=12_000) == 0  # segment 0's largest is 2000: 10 s ago
    assert enforce_retention(log, now_ms=14_001)  # 4000 is now older than 10 s: two segments
    assert log.log_start_offset == 4
    assert log.offset_for_time(EARLIEST)[0] == 4
    assert [s.base_offset for s in log.segments] == [4]


def test_time_retention_may_take_every_segment_and_rolls_a_new_one():
    log = _log(retention_ms=1_000)
    assert enforce_retention(log, now_ms=100_000)
    assert log.log_start_offset == log.end_offset == 6
    assert [(s.base_offset, s.size) for s in log.segments] == [(6, 0)]
    assert log.append(build_batch([{"key": b"k", "value": b"v"}])).base_offset == 6


def test_size_retention_keeps_the_log_at_or_above_retention_bytes():
    log = _log(retention_bytes=3 * SIZE)
    assert enforce_retention(log, now_ms=0)
    # 6 batches, 3 allowed: segment 0 goes (4 left), segment 1 would leave 2: it stays
    assert log.log_start_offset == 2
    assert log.size == 4 * SIZE


def test_retention_never_passes_the_high_watermark():
    log = PartitionLog(config=LogConfig(segment_bytes=2 * SIZE, retention_bytes=0))
    for i in range(6):
        log.append(build_batch([{"key": b"k", "value": VALUE, "timestamp": i}]))
    log.advance_high_watermark(3)
    enforce_retention(log, now_ms=0)
    assert log.log_start_offset == 2  # segment 1 (2..3) holds offset 3, above the HWM


def test_compact_only_policy_keeps_old_segments():
    log = _log(retention_ms=1, retention_bytes=0, delete=False, compact=True)
    assert not enforce_retention(log, now_ms=10**9)
    assert log.log_start_offset == 0


def test_delete_records_past_whole_segments_drops_them():
    log = _log()
    log.delete_before(5)
    assert [s.base_offset for s in log.segments] == [4]
    assert [b.base_offset for b in log.batches] == [5]


class _Host:
    """A broker as the cleaner sees it: its logs, its config, its wake-ups."""

    node_id = 1
    config: dict[str, str] = {}

    def __init__(self, logs: dict) -> None:
        self.logs = logs
        self.woken: list = []

    def data_arrived(self, key=None) -> None:
        self.woken.append(key)


def test_the_cleaner_applies_delete_then_compact_to_a_compact_delete_log():
    config = LogConfig(
        segment_bytes=2 * SIZE + 2,  # these keys are a byte longer: two batches a segment
        retention_bytes=4 * SIZE,
        compact=True,
        delete=True,
        min_cleanable_dirty_ratio=0.1,
    )
    log = PartitionLog(config=config)
    for i in range(8):  # keys k0, k1, k0, k1, ...: two per segment
        log.append(build_batch([{"key": b"k%d" % (i % 2), "value": VALUE, "timestamp": i}]))
    log.advance_high_watermark(log.end_offset)
    host = _Host({("t", 0): log, ("gone", 0): None})
    cleaner = LogCleaner(host)
    cleaner.watch(("t", 0))
    cleaner.watch(("gone", 0))
    cleaner.check(now_ms=100)
    assert log.log_start_offset == 4  # retention: 8 batches, 4 kept
    assert host.woken == [("t", 0)]
    # compaction: 4 and 5 stay, as their keys' later records (6, 7) are in the active segment
    assert [b.base_offset for b in log.batches] == [4, 5, 6, 7]
    log.roll()
    log.append(build_batch([{"key": b"z", "value": b"v", "timestamp": 9}]))
    log.advance_high_watermark(log.end_offset)
    cleaner.check(now_ms=100)
    # 6..7 are no longer active: 4 and 5 go, and their emptied segment with them
    assert [b.base_offset for b in log.batches] == [6, 7, 8]
    assert [s.base_offset for s in log.segments] == [6, 8]
    assert ("gone", 0) not in cleaner.watched
