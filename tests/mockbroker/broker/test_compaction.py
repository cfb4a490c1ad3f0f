"""Compaction: the latest record per key in inactive segments, offsets kept as gaps, tombstones
and transaction markers removed after their delete horizon, aborted records removed."""

from __future__ import annotations

import pytest

from kipwire.codec import ErrorCode
from kipwire.codec.records import build_batch, iter_batches
from kipwire.mockbroker.broker.compaction import compact
from kipwire.mockbroker.broker.log import LogError, PartitionLog
from kipwire.mockbroker.broker.log_config import LogConfig

DAY = 86_400_000


def _log(**config: object) -> PartitionLog:
    settings = {"segment_bytes": 1 << 20, "delete": False, "compact": True, **config}
    return PartitionLog(config=LogConfig(**settings))  # type: ignore[arg-type]


def _put(log: PartitionLog, *pairs: tuple[bytes, bytes | None], ts: int = 1000, **batch) -> None:
    records = [{"key": k, "value": v, "timestamp": ts} for k, v in pairs]
    log.append(build_batch(records, compression="lz4", **batch))


def _records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.key, r.value)
        for stored in log.batches
        for b in iter_batches(stored.data, verify_crc=True)
        if not b.is_control
        for r in b.records
    ]


def test_the_latest_value_per_key_stays_at_its_offset_in_inactive_segments():
    log = _log()
    _put(log, (b"a", b"1"), (b"b", b"1"), (b"a", b"2"))
    _put(log, (b"c", b"1"), (b"b", b"2"))
    log.roll()
    _put(log, (b"a", b"3"))  # the active segment is never cleaned
    log.advance_high_watermark(log.end_offset)
    cleaned = compact(log, now_ms=10_000)
    assert cleaned is not None and cleaned.bytes_after < cleaned.bytes_before
    assert _records(log) == [(2, b"a", b"2"), (3, b"c", b"1"), (4, b"b", b"2"), (5, b"a", b"3")]
    # base and last offsets kept: the first batch still spans 0..2 with a gap at 0 and 1
    assert [(b.base_offset, b.last_offset) for b in log.batches] == [(0, 2), (3, 4), (5, 5)]
    assert log.cleaned_offset == 5
    log.advance_high_watermark(log.end_offset)
    assert [r.offset for b in iter_batches(log.read(0, 1 << 20)) for r in b.records] == [2, 3, 4, 5]
    assert compact(log, now_ms=10_000) is None  # nothing dirty is left


def test_a_tombstone_gets_a_horizon_then_goes_after_delete_retention():
    log = _log(delete_retention_ms=DAY)
    _put(log, (b"a", b"1"), (b"b", b"1"))
    _put(log, (b"a", None))
    log.roll()
    _put(log, (b"z", b"1"))
    log.advance_high_watermark(log.end_offset)
    compact(log, now_ms=5_000)
    assert _records(log) == [(1, b"b", b"1"), (2, b"a", None), (3, b"z", b"1")]
    tombstone = next(iter_batches(log.batches[1].data))
    assert tombstone.delete_horizon_ms == 5_000 + DAY
    # more writes make the log dirty again; before the horizon the tombstone stays
    log.roll()
    _put(log, (b"z", b"2"))
    log.roll()
    log.advance_high_watermark(log.end_offset)
    compact(log, now_ms=6_000)
    assert (2, b"a", None) in _records(log)
    _put(log, (b"z", b"3"))
    log.roll()
    log.advance_high_watermark(log.end_offset)
    compact(log, now_ms=5_000 + DAY + 1)
    assert _records(log) == [(1, b"b", b"1"), (5, b"z", b"3")]


def test_aborted_records_go_and_markers_stay_until_their_horizon():
    log = _log(delete_retention_ms=1000, min_cleanable_dirty_ratio=0.0)
    _put(
        log,
        (b"a", b"committed"),
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )
    log.append_marker(7, 0, commit=True)
    _put(
        log,
        (b"a", b"aborted"),
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
        transactional=True,
    )
    log.append_marker(7, 1, commit=False)
    now = log.batches[-1].max_timestamp + 1  # markers carry the broker's wall-clock time
    log.roll()
    _put(log, (b"z", b"1"))
    log.advance_high_watermark(log.end_offset)
    compact(log, now_ms=now)
    assert _records(log) == [(0, b"a", b"committed"), (4, b"z", b"1")]
    markers = [b for s in log.batches for b in iter_batches(s.data) if b.is_control]
    horizon = now + 1000
    assert [(m.base_offset, m.delete_horizon_ms) for m in markers] == [(1, horizon), (3, horizon)]
    # past the horizon: the abort marker has no record left and goes; the commit's record stays
    log.roll()
    _put(log, (b"z", b"2"))
    log.roll()
    log.advance_high_watermark(log.end_offset)
    compact(log, now_ms=now + 1000)
    markers = [b.base_offset for s in log.batches for b in iter_batches(s.data) if b.is_control]
    assert markers == [1]


def test_min_compaction_lag_and_the_dirty_ratio_hold_cleaning_back():
    log = _log(min_compaction_lag_ms=60_000)
    _put(log, (b"a", b"1"), (b"a", b"2"), ts=1000)
    log.roll()
    _put(log, (b"z", b"1"))
    log.advance_high_watermark(log.end_offset)
    assert compact(log, now_ms=30_000) is None  # written 29 s ago, the lag is 60 s
    assert compact(log, now_ms=62_000) is not None
    log = _log(min_cleanable_dirty_ratio=0.9)
    _put(log, (b"a", b"1"), (b"b", b"1"))
    log.roll()
    _put(log, (b"z", b"1"))
    log.advance_high_watermark(log.end_offset)
    compact(log, now_ms=2_000)
    log.roll()
    _put(log, (b"z", b"2"))
    log.advance_high_watermark(log.end_offset)
    # the clean part is as big as the dirty one: a ratio of 0.5 is below 0.9
    assert compact(log, now_ms=3_000) is None


def test_an_open_transaction_bounds_the_cleanable_part():
    log = _log()
    _put(log, (b"a", b"1"))
    log.roll()
    _put(log, (b"a", b"2"), producer_id=3, producer_epoch=0, base_sequence=0, transactional=True)
    log.roll()
    _put(log, (b"z", b"1"))
    log.advance_high_watermark(log.end_offset)
    compact(log, now_ms=5_000)
    assert _records(log)[0] == (0, b"a", b"1")  # its key's later value is not committed yet


def test_a_compacted_log_refuses_a_record_without_a_key():
    log = PartitionLog(name="prices-0", config=LogConfig(compact=True))
    with pytest.raises(LogError) as err:
        log.append(build_batch([{"key": b"a", "value": b"1"}, {"key": None, "value": b"2"}]))
    assert err.value.code == ErrorCode.INVALID_RECORD
    assert str(err.value).endswith(
        "1 record errors in total, and only showing the first three errors at most: "
        "[RecordError(batchIndex=1, message='Compacted topic cannot accept message without key "
        "in topic partition prices-0')]"
    )
    assert log.end_offset == 0
