"""Compaction: the latest record per key in a log's inactive segments (Kafka's LogCleaner).

`compact(log, now_ms)` cleans a log whose cleanable part is dirty enough: the segments before
the active one, below the last stable offset and the high watermark, older than
`min.compaction.lag.ms`; dirty past the log's `cleaned_offset` (Kafka's cleaner checkpoint) by
more than `min.cleanable.dirty.ratio` of their bytes, or for longer than
`max.compaction.lag.ms`. It maps every key of the dirty part to its last offset, then rebuilds
each batch of the cleanable part with the codec's record builder, keeping its base and last
offsets, producer fields, leader epoch and timestamps (offsets of removed records stay gaps):

- a record stays when no later record in the dirty part has its key; a keyless one goes;
- a tombstone (null value) or a transaction marker first gets a delete horizon, now plus
  `delete.retention.ms` (KIP-534, in the batch's base timestamp), and goes in a later cleaning
  once the horizon has passed (a marker only once none of its transaction's records is left);
- an aborted transaction's records go (the log's aborted index names them).

A batch left with no record goes; a segment left with no batch goes. Small segments are not
merged, as Kafka's cleaner groups them: a compacted log keeps its segment count.
"""

from __future__ import annotations

from dataclasses import dataclass

from kipwire.codec.records import Batch, Record, TimestampType, build_batch, iter_batches

from .log import PartitionLog
from .segment import Segment, StoredBatch


@dataclass(frozen=True, slots=True)
class Cleaned:
    """What one cleaning did: the offsets it covered and the bytes before and after."""

    end_offset: int
    bytes_before: int
    bytes_after: int


def cleanable_count(log: PartitionLog, now_ms: int) -> int:
    """How many of the oldest segments compaction may rewrite now."""
    config = log.config
    bound = min(log.segments[-1].base_offset, log.last_stable_offset, log.high_watermark)
    count = 0
    for segment, following in zip(log.segments, log.segments[1:], strict=False):
        if following.base_offset > bound:
            break
        dirty = segment.next_offset > log.cleaned_offset
        if dirty and segment.max_timestamp > now_ms - config.min_compaction_lag_ms:
            break
        count += 1
    return count


def due(log: PartitionLog, count: int, now_ms: int) -> bool:
    """Whether the first `count` segments are dirty enough to clean (ratio or max lag)."""
    segments = log.segments[:count]
    dirty = [s for s in segments if s.next_offset > log.cleaned_offset and s.batches]
    if not dirty:
        return False
    total = sum(s.size for s in segments)
    ratio = sum(s.size for s in dirty) / total if total else 0.0
    first = dirty[0].rolling_timestamp
    overdue = first is not None and first >= 0
    overdue = overdue and now_ms - first > log.config.max_compaction_lag_ms
    return overdue or ratio > log.config.min_cleanable_dirty_ratio


def compact(log: PartitionLog, now_ms: int) -> Cleaned | None:
    """Clean the log when it is due (see the module); None when it was not."""
    count = cleanable_count(log, now_ms)
    if count == 0 or not due(log, count, now_ms):
        return None
    segments = log.segments[:count]
    end = log.segments[count].base_offset
    latest = _latest_offsets(log, segments, end)
    before = sum(s.size for s in segments)
    _Rewrite(log, latest, now_ms).run(segments)
    for segment in [s for s in segments if not s.batches]:
        log.segments.remove(segment)
        segment.delete()
    log.cleaned_offset = max(log.cleaned_offset, end)
    return Cleaned(end, before, sum(s.size for s in segments if s.batches))


def _latest_offsets(log: PartitionLog, segments: list[Segment], end: int) -> dict[bytes, int]:
    """Kafka's OffsetMap: each key of the dirty part, at the offset of its last record."""
    aborted = _aborted_ranges(log)
    latest: dict[bytes, int] = {}
    for segment in segments:
        if segment.next_offset <= log.cleaned_offset:
            continue
        for stored in segment.batches:
            if stored.last_offset < log.cleaned_offset:
                continue
            for batch in iter_batches(stored.data, verify_crc=False):
                if batch.is_control or _is_aborted(batch, aborted):
                    continue
                for record in batch.records:
                    if record.key is not None and log.cleaned_offset <= record.offset < end:
                        latest[record.key] = record.offset
    return latest


def _aborted_ranges(log: PartitionLog) -> dict[int, list[tuple[int, int]]]:
    ranges: dict[int, list[tuple[int, int]]] = {}
    for txn in log.aborted:
        ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    return ranges


def _is_aborted(batch: Batch, aborted: dict[int, list[tuple[int, int]]]) -> bool:
    if not batch.is_transactional:
        return False
    return any(a <= batch.base_offset <= b for a, b in aborted.get(batch.producer_id, ()))


class _Rewrite:
    """One pass over the cleanable segments, oldest first, deciding batch by batch."""

    def __init__(self, log: PartitionLog, latest: dict[bytes, int], now_ms: int) -> None:
        self.latest = latest
        self.now_ms = now_ms
        self.horizon = now_ms + log.config.delete_retention_ms
        self.aborted = _aborted_ranges(log)
        #: Per producer, whether its open transaction has kept a record so far in this pass.
        self.txn_kept: dict[int, bool] = {}

    def run(self, segments: list[Segment]) -> None:
        for segment in segments:
            kept: list[StoredBatch] = []
            changed = False
            for stored in segment.batches:
                new = self._batch(stored)
                changed = changed or new is not stored
                if new is not None:
                    kept.append(new)
            if changed:
                segment.replace(kept)

    def _batch(self, stored: StoredBatch) -> StoredBatch | None:
        (batch,) = iter_batches(stored.data, verify_crc=False)
        if batch.is_control:
            return self._marker(stored, batch)
        if _is_aborted(batch, self.aborted):
            return None
        records = batch.records
        kept = [r for r in records if self._keeps(r, batch)]
        if batch.is_transactional and kept:
            self.txn_kept[batch.producer_id] = True
        elif batch.is_transactional:
            self.txn_kept.setdefault(batch.producer_id, False)
        tombstones = any(r.value is None for r in kept)
        if len(kept) == len(records) and (not tombstones or batch.has_delete_horizon):
            return stored
        if not kept:
            return None
        return self._rebuilt(batch, kept, stored, tombstones)

    def _keeps(self, record: Record, batch: Batch) -> bool:
        if record.key is None:
            return False
        if record.offset < self.latest.get(record.key, record.offset):
            return False  # a later record has the key
        if record.value is not None:
            return True
        horizon = batch.delete_horizon_ms
        return horizon is None or self.now_ms < horizon

    def _marker(self, stored: StoredBatch, batch: Batch) -> StoredBatch | None:
        """A transaction marker stays until its delete horizon has passed and none of its
        transaction's records is left."""
        data_left = self.txn_kept.pop(batch.producer_id, False)
        horizon = batch.delete_horizon_ms
        if horizon is None:
            return self._rebuilt(batch, batch.records, stored, True)
        if not data_left and self.now_ms >= horizon:
            return None
        return stored

    def _rebuilt(
        self, batch: Batch, records: list[Record], stored: StoredBatch, horizon: bool
    ) -> StoredBatch:
        appended = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        keep_horizon = batch.delete_horizon_ms if batch.has_delete_horizon else None
        data = build_batch(
            records,
            compression=batch.compression,
            base_offset=batch.base_offset,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            transactional=batch.is_transactional,
            control=batch.is_control,
            partition_leader_epoch=batch.partition_leader_epoch,
            log_append_time=batch.max_timestamp if appended else None,
            keep_offsets=True,
            last_offset_delta=batch.last_offset_delta,
            delete_horizon_ms=(keep_horizon or self.horizon) if horizon else None,
        )
        (new,) = iter_batches(data, verify_crc=False)
        return StoredBatch(
            stored.base_offset, stored.last_offset, data, new.max_timestamp, stored.leader_epoch
        )
