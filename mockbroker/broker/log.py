"""A partition's log: record batches stamped with offsets, fetched by offset, with its marks.

Batches are validated with the codec's record reader (lengths, CRC) and stored as the bytes the
producer sent, with only their base offset and leader epoch rewritten (`assign_offsets`): nothing
is re-encoded. The leader moves the high watermark (`advance_high_watermark`) as its ISR state
machine decides; a follower copies the leader's batches as they are (`append_replicated`) and
truncates (`truncate_to`) after a leader change. `flushed_offset` is what survives an unclean
shutdown.

The batches live in segments (segment.py), as Kafka's UnifiedLog keeps them: the last segment
is active and a new one rolls when it would pass `segment.bytes` or has waited `segment.ms`
(`config`, a `LogConfig` the broker sets per topic). Retention deletes whole segments from the
front (`delete_segments`, driven by cleaner.py); `batches` is a read-only view across them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from kipwire.codec import DecodeError, EncodeError, ErrorCode, OffsetSpec
from kipwire.codec.records import (
    Batch,
    ControlType,
    assign_offsets,
    build_batch,
    control_record,
    decode_control,
    iter_batches,
)

from .batch_headers import stamp_log_append_time, with_offsets
from .log_config import DEFAULT_LOG_CONFIG, LogConfig
from .producer_state import ProducerStates
from .segment import Segment, SegmentFactory, StoredBatch

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_TIMESTAMP",
    "AbortedTxn",
    "AppendResult",
    "LogError",
    "PartitionLog",
    "StoredBatch",
    "stamp_log_append_time",
]


#: ListOffsets' special timestamps.
EARLIEST, LATEST, MAX_TIMESTAMP = OffsetSpec.EARLIEST, OffsetSpec.LATEST, OffsetSpec.MAX_TIMESTAMP


class LogError(Exception):
    """A produce or fetch the log refuses, with the Kafka error code to answer."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class AppendResult:
    """Where a produce landed: base offset (of the original for a repeated batch)."""

    base_offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """An aborted transaction's offsets, reported to read_committed fetchers."""

    producer_id: int
    first_offset: int
    last_offset: int


class Batches(Sequence[StoredBatch]):
    """The batches of every segment, in order, as one read-only sequence."""

    def __init__(self, segments: list[Segment]) -> None:
        self._segments = segments

    def __len__(self) -> int:
        return sum(len(s.batches) for s in self._segments)

    def __bool__(self) -> bool:
        return any(s.batches for s in self._segments)

    def __iter__(self) -> Iterator[StoredBatch]:
        return itertools.chain.from_iterable(s.batches for s in self._segments)

    @overload
    def __getitem__(self, index: int) -> StoredBatch: ...
    @overload
    def __getitem__(self, index: slice) -> list[StoredBatch]: ...
    def __getitem__(self, index: int | slice) -> StoredBatch | list[StoredBatch]:
        if isinstance(index, slice):
            return list(self)[index]
        segments = self._segments if index >= 0 else reversed(self._segments)
        at = index if index >= 0 else -index - 1
        for segment in segments:
            if at < len(segment.batches):
                return segment.batches[at if index >= 0 else -at - 1]
            at -= len(segment.batches)
        raise IndexError("batch index out of range")


class PartitionLog:
    """The segments of one partition, its offsets and its transaction index.

    `new_segment` makes each segment (a storage back end plugs in here, segment.py); `clock`
    gives the time in ms that a new segment records as its creation time.
    """

    def __init__(
        self,
        leader_epoch: int = 0,
        *,
        name: str = "",
        config: LogConfig = DEFAULT_LOG_CONFIG,
        new_segment: SegmentFactory = Segment,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        #: topic-partition, as Kafka's messages name it (`orders-0`)
        self.name = name
        self._new_segment = new_segment
        self.clock = clock or _now_ms
        self.segments: list[Segment] = [new_segment(0, self.clock())]
        #: Called after a new segment rolled (the broker's cleaner watches logs with several).
        self.on_roll: Callable[[], None] | None = None
        self.log_start_offset = 0
        self.end_offset = 0
        self.leader_epoch = leader_epoch
        self.producers = ProducerStates()
        self.open_txns: dict[int, int] = {}  # producer id -> first offset of its open txn
        self.aborted: list[AbortedTxn] = []
        self.epoch_starts: list[tuple[int, int]] = []  # (leader epoch, its first offset)
        self.high_watermark = 0  # offsets below it are visible to consumers
        self.flushed_offset = 0  # offsets below it survive an unclean shutdown
        self.cleaned_offset = 0  # compaction's checkpoint: offsets below it are clean

    @property
    def batches(self) -> Batches:
        """Every segment's batches, oldest first, as one read-only sequence."""
        return Batches(self.segments)

    def advance_high_watermark(self, offset: int) -> bool:
        """Move the HWM forward to `offset` (capped at the log end); True if it moved."""
        offset = min(offset, self.end_offset)
        if offset <= self.high_watermark:
            return False
        self.high_watermark = offset
        return True

    def flush(self) -> None:
        """Everything written so far survives an unclean shutdown."""
        for segment in reversed(self.segments):
            if segment.next_offset <= self.flushed_offset and segment.batches:
                break  # this one and the older ones were flushed before
            segment.flush()
        self.flushed_offset = self.end_offset

    @property
    def size(self) -> int:
        """The bytes of every segment (Kafka's UnifiedLog.size)."""
        return sum(s.size for s in self.segments)

    @property
    def segment_count(self) -> int:
        """How many segments the log has (Kafka's NumLogSegments)."""
        return len(self.segments)

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, or the high watermark."""
        if self.open_txns:
            return min(min(self.open_txns.values()), self.high_watermark)
        return self.high_watermark

    def append(
        self, records: bytes | bytearray | memoryview, *, log_append_time: int | None = None
    ) -> AppendResult:
        """Validate a produce's batches, check producer sequences and append them; with
        `log_append_time` (message.timestamp.type=LogAppendTime) the broker's time is stamped
        into each batch, as Kafka's LogValidator does."""
        try:
            batches = list(iter_batches(records, verify_crc=True))
        except DecodeError as exc:
            raise LogError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
        if not batches:
            raise LogError(ErrorCode.INVALID_RECORD, "the produce holds no record batch")
        for batch in batches:
            if batch.truncated:
                raise LogError(ErrorCode.CORRUPT_MESSAGE, "a record batch is cut short")
            if batch.magic != 2:
                # Kafka 4 dropped message formats 0 and 1 (and the produce versions carrying them)
                raise LogError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, "only magic 2 batches")
            if batch.is_control:
                raise LogError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
            if self.config.compact:
                self._refuse_keyless(batch)
        first = batches[0]
        idempotent = first.magic == 2 and first.producer_id >= 0
        if idempotent:
            if len(batches) > 1:
                raise LogError(ErrorCode.INVALID_RECORD, "an idempotent produce holds one batch")
            count = first.last_offset_delta + 1
            verdict = self.producers.check(
                first.producer_id, first.producer_epoch, first.base_sequence, count
            )
            if verdict.duplicate_of is not None:
                return AppendResult(verdict.duplicate_of)
            if verdict.error:
                raise LogError(verdict.error, f"producer {first.producer_id}: {verdict.error.name}")
        base = self.end_offset
        if log_append_time is None:
            self._store_stamped(batches, base)
        else:
            # the stamp rewrites the batches in place: a bytearray copy, never the caller's buffer
            try:
                stamped = assign_offsets(
                    bytearray(records), base, partition_leader_epoch=self.leader_epoch
                )
            except EncodeError as exc:
                raise LogError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
            stamp_log_append_time(stamped, log_append_time)
            self._store(stamped)
        if idempotent:
            self.producers.record(
                first.producer_id, first.producer_epoch, first.base_sequence, count, base
            )
            if first.is_transactional:
                self.open_txns.setdefault(first.producer_id, base)
        return AppendResult(base)

    def _refuse_keyless(self, batch: Batch) -> None:
        """A compacted log refuses records without a key, as Kafka's LogValidator does (the
        cleaner could not tell what they replace), naming at most three in its message."""
        keyless = [i for i, r in enumerate(batch.records) if r.key is None]
        if keyless:
            why = (
                f"Compacted topic cannot accept message without key in topic partition {self.name}"
            )
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{why}')" for i in keyless[:3])
            raise LogError(
                ErrorCode.INVALID_RECORD,
                f"One or more records have been rejected due to {len(keyless)} record errors in "
                f"total, and only showing the first three errors at most: [{shown}]",
            )

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool) -> int:
        """Write a transaction's COMMIT or ABORT marker; return its offset."""
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        marker = build_batch(
            [control_record(kind, {"coordinator_epoch": 0}, timestamp=_now_ms())],
            base_offset=self.end_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=True,
            control=True,
            partition_leader_epoch=self.leader_epoch,
        )
        offset = self.end_offset
        self._store(marker)
        first = self.open_txns.pop(producer_id, None)
        if not commit and first is not None:
            self.aborted.append(AbortedTxn(producer_id, first, offset))
        self.producers.bump(producer_id, producer_epoch)
        return offset

    def append_replicated(self, records: bytes | bytearray | memoryview) -> int:
        """A follower's copy of the leader's batches, offsets and epochs kept; the count stored."""
        count = 0
        try:
            batches = list(iter_batches(records, verify_crc=True))
        except DecodeError as exc:
            raise LogError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
        for batch in batches:
            if batch.truncated or batch.last_offset < self.end_offset:
                continue
            # `_store` of the batch's bytes, from the header already read
            data = bytes(batch.raw)
            self._maybe_roll(len(data), batch.max_timestamp, batch.base_offset)
            self._place(self.segments[-1], batch, data)
            self._track(batch)
            count += 1
        return count

    def truncate_to(self, offset: int) -> None:
        """Drop every record at or above `offset` (a follower's divergent suffix, or lost data)."""
        offset = max(offset, self.log_start_offset)
        if offset >= self.end_offset:
            return
        # segments starting at or past the cut go; a batch straddling it goes whole, as Kafka
        # truncates on batch boundaries
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
        self.segments[-1].truncate_to(offset)
        last = self.batches[-1] if self.batches else None
        self.end_offset = last.last_offset + 1 if last is not None else offset
        self.epoch_starts = [e for e in self.epoch_starts if e[1] < self.end_offset]
        self.high_watermark = min(self.high_watermark, self.end_offset)
        self.flushed_offset = min(self.flushed_offset, self.end_offset)
        self.cleaned_offset = min(self.cleaned_offset, self.end_offset)
        self.aborted = [t for t in self.aborted if t.last_offset < self.end_offset]
        self.producers = ProducerStates()
        self.open_txns = {}
        for stored in self.batches:
            for batch in iter_batches(stored.data, verify_crc=False):
                self._track(batch)

    def _track(self, batch: Batch) -> None:
        """Producer and transaction state from a batch already in the log."""
        pid = batch.producer_id
        if pid < 0:
            return
        if batch.is_control:
            first = self.open_txns.pop(pid, None)
            markers = [decode_control(r) for r in batch.records]
            commit = any(m.type == ControlType.COMMIT for m in markers)
            if not commit and first is not None:
                self.aborted.append(AbortedTxn(pid, first, batch.base_offset))
            coordinator_epoch = markers[0].value.get("coordinator_epoch", 0) if markers else 0
            self.producers.bump(pid, batch.producer_epoch, coordinator_epoch)
            return
        count = batch.last_offset_delta + 1
        self.producers.record(
            pid, batch.producer_epoch, batch.base_sequence, count, batch.base_offset
        )
        if batch.is_transactional:
            self.open_txns.setdefault(pid, batch.base_offset)

    def _store_stamped(self, batches: list[Batch], base: int) -> None:
        """Store a produce's validated v2 batches with offsets from `base` and the leader's
        epoch (what `assign_offsets` writes), each copied once into the bytes the log keeps,
        from the headers already read (no batch is parsed again)."""
        epoch = self.leader_epoch
        size = sum(len(b.raw) for b in batches)
        self._maybe_roll(size, max(b.max_timestamp for b in batches), base)
        active = self.segments[-1]
        for batch in batches:
            raw = batch.raw
            last = base + batch.last_offset_delta
            # the CRC covers neither the base offset nor the leader epoch: it stays valid
            data = with_offsets(raw, base, epoch)
            self._keep(active, base, last, data, batch.max_timestamp, epoch)
            base = last + 1

    def _store(self, data: bytes | bytearray) -> None:
        batches = list(iter_batches(data, verify_crc=False))
        if batches:
            largest = max(b.max_timestamp for b in batches)
            self._maybe_roll(len(data), largest, batches[0].base_offset)
        active = self.segments[-1]
        # bytes holding one whole batch (most produces) are kept as they are, not copied
        whole = data if type(data) is bytes and len(batches) == 1 else None
        for batch in batches:
            self._place(active, batch, whole if batch.size == len(data) else None)

    def _place(self, segment: Segment, batch: Batch, data: bytes | None = None) -> None:
        """Put a batch at the end of `segment` (`data`: its bytes, when they are already
        exactly that): the log's end and leader epochs follow."""
        self._keep(
            segment,
            batch.base_offset,
            batch.last_offset,
            bytes(batch.raw) if data is None else data,
            batch.max_timestamp,
            batch.partition_leader_epoch,
        )

    def _keep(
        self, segment: Segment, base: int, last: int, data: bytes, max_timestamp: int, epoch: int
    ) -> None:
        """`_place` from the batch's header fields."""
        if not self.epoch_starts or self.epoch_starts[-1][0] != epoch:
            self.epoch_starts.append((epoch, base))
        segment.append(StoredBatch(base, last, data, max_timestamp, epoch))
        self.end_offset = last + 1

    def load_segments(self, segments: Iterable[tuple[int, Iterable[bytes]]]) -> None:
        """Rebuild a new log from the segments a storage back end found, (base offset, its
        batches) in order: the batches, producer and transaction state and leader epochs are
        as the log had them; the log start is the first batch's base; all of it is flushed."""
        self.segments.clear()
        for base, batches in segments:
            segment = self._new_segment(base, self.clock())
            self.segments.append(segment)
            self.end_offset = max(self.end_offset, base)
            for data in batches:
                for batch in iter_batches(data, verify_crc=False):
                    self._place(segment, batch)
                    self._track(batch)
        if not self.segments:
            self.segments.append(self._new_segment(0, self.clock()))
        self.log_start_offset = self._first_base(0)
        self.flushed_offset = self.end_offset

    def _maybe_roll(self, size: int, max_timestamp: int, base_offset: int) -> None:
        """Roll a new segment before an append the active one should not take: it would pass
        segment.bytes, or segment.ms has passed since its first batch's time (since its
        creation when it has none), as Kafka's LogSegment.shouldRoll decides."""
        active = self.segments[-1]
        if active.size == 0:
            return
        if active.rolling_timestamp is not None and active.rolling_timestamp >= 0:
            waited = max_timestamp - active.rolling_timestamp
        else:
            waited = self.clock() - active.created_ms
        if active.size > self.config.segment_bytes - size or waited > self.config.segment_ms:
            self.roll(base_offset)

    def roll(self, base_offset: int | None = None) -> Segment:
        """Start a new active segment at `base_offset` (the log end by default)."""
        segment = self._new_segment(
            self.end_offset if base_offset is None else base_offset, self.clock()
        )
        self.segments.append(segment)
        if self.on_roll is not None:
            self.on_roll()
        return segment

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        committed: bool = False,
        min_one: bool = True,
        replica: bool = False,
    ) -> bytes:
        """The batches from the one holding `offset`: at least one (KIP-74), then to `max_bytes`."""
        return b"".join(
            self.read_parts(
                offset, max_bytes, committed=committed, min_one=min_one, replica=replica
            )
        )

    def read_parts(
        self,
        offset: int,
        max_bytes: int,
        *,
        committed: bool = False,
        min_one: bool = True,
        replica: bool = False,
    ) -> list[bytes]:
        """`read`'s batches as the log holds them, not joined (a fetch sends them gathered)."""
        if offset < self.log_start_offset or offset > self.end_offset:
            raise LogError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is outside {self.log_start_offset}..{self.end_offset}",
            )
        if offset == self.end_offset:
            return []  # the common answer to a caught-up reader, without finding a batch
        if replica:
            limit = self.end_offset  # followers copy the whole log, not only what is committed
        else:
            limit = self.last_stable_offset if committed else self.high_watermark
        parts: list[bytes] = []
        size = 0
        for stored in self.batches_from(offset):
            if stored.base_offset >= limit:
                break
            if stored.last_offset < offset:
                continue
            if (parts or not min_one) and size + len(stored.data) > max_bytes:
                break
            parts.append(stored.data)
            size += len(stored.data)
        return parts

    def batches_from(self, offset: int) -> Iterator[StoredBatch]:
        """The stored batches in order, from the one holding `offset` (found by bisection)."""
        at = self._segment_index(offset)
        first = self.segments[at]
        return itertools.chain(
            itertools.islice(first.batches, first.index_of(offset), None),
            itertools.chain.from_iterable(s.batches for s in self.segments[at + 1 :]),
        )

    def _segment_index(self, offset: int) -> int:
        """The index of the segment holding `offset`: the last whose first batch is at or below
        it (the first below them all, the last past the end)."""
        low, high = 0, len(self.segments) - 1
        while low < high:
            mid = (low + high + 1) // 2
            if self._first_base(mid) <= offset:
                low = mid
            else:
                high = mid - 1
        return low

    def _first_base(self, index: int) -> int:
        segment = self.segments[index]
        return segment.batches[0].base_offset if segment.batches else segment.base_offset

    def aborted_in(self, start: int, stop: int) -> list[AbortedTxn]:
        """Aborted transactions that overlap offsets [start, stop)."""
        return [t for t in self.aborted if t.first_offset < stop and t.last_offset >= start]

    def offset_for_time(self, timestamp: int) -> tuple[int, int, int]:
        """(offset, timestamp, leader epoch) for a ListOffsets timestamp or special value.

        By time, the first record at or after `timestamp`; MAX_TIMESTAMP, the first record with
        the largest timestamp: record by record, as Kafka reads the batch its time index points
        to (a LogAppendTime batch's records all carry the batch's time).
        """
        if timestamp == EARLIEST:
            return self.log_start_offset, -1, self._epoch_at(self.log_start_offset)
        if timestamp == LATEST:
            return self.high_watermark, -1, self.leader_epoch
        live = [b for b in self.batches if b.last_offset >= self.log_start_offset]
        exact = timestamp == MAX_TIMESTAMP
        if exact:
            if not live:
                return -1, -1, -1
            timestamp = max(b.max_timestamp for b in live)
        for stored in live:
            if stored.max_timestamp >= timestamp:
                found = self._first_record_at(stored, timestamp, exact=exact)
                if found is not None:
                    return found
        return -1, -1, -1

    def _first_record_at(
        self, stored: StoredBatch, timestamp: int, *, exact: bool
    ) -> tuple[int, int, int] | None:
        """The first record of a batch, at or above the log start, whose timestamp is at or after
        `timestamp` (equal to it when `exact`), or None."""
        for batch in iter_batches(stored.data, verify_crc=False):
            for record in batch.records:
                if record.offset < self.log_start_offset:
                    continue
                if record.timestamp == timestamp or (not exact and record.timestamp > timestamp):
                    return record.offset, record.timestamp, stored.leader_epoch
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(largest epoch <= `epoch`, its end offset) as OffsetForLeaderEpoch answers."""
        if not self.epoch_starts or epoch < self.epoch_starts[0][0]:
            return -1, -1
        for i, (start_epoch, _) in enumerate(self.epoch_starts):
            if start_epoch > epoch:
                return self.epoch_starts[i - 1][0], self.epoch_starts[i][1]
        return self.epoch_starts[-1][0], self.end_offset

    def delete_before(self, offset: int) -> int:
        """Move the log start offset to `offset` (DeleteRecords); return the new start."""
        if offset == LATEST:
            offset = self.high_watermark
        if offset < 0 or offset > self.high_watermark:
            raise LogError(ErrorCode.OFFSET_OUT_OF_RANGE, f"offset {offset} is past the HWM")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
                self.segments.pop(0).delete()
            self.segments[0].drop_before(offset)
        return self.log_start_offset

    def delete_segments(self, count: int) -> int:
        """Delete the `count` oldest segments (retention) and move the log start offset to the
        first offset left; a new active segment rolls first when every one goes, as Kafka's
        UnifiedLog.deleteSegments does. Returns the new log start offset."""
        if count <= 0:
            return self.log_start_offset
        if count >= len(self.segments):
            self.roll()
            count = len(self.segments) - 1
        for segment in self.segments[:count]:
            segment.delete()
        del self.segments[:count]
        self.log_start_offset = max(self.log_start_offset, self._first_base(0))
        self.aborted = [t for t in self.aborted if t.last_offset >= self.log_start_offset]
        return self.log_start_offset

    def _epoch_at(self, offset: int) -> int:
        epoch = -1
        for start_epoch, start in self.epoch_starts:
            if start <= offset:
                epoch = start_epoch
        return epoch


def _now_ms() -> int:
    return int(time.time() * 1000)
