"""One share-partition's state (KIP-932): which records a share group has delivered, to whom,
and what became of them. Sans-I/O: times come in as arguments, records as batch bounds.

The share-partition start offset (SPSO) is the first offset not yet ACKNOWLEDGED or ARCHIVED;
`next_offset` is the first offset never acquired (Kafka's end offset plus one). Between them each
offset is in flight: AVAILABLE (released, to be delivered again), ACQUIRED by one member under an
acquisition lock until a deadline, ACKNOWLEDGED (accepted) or ARCHIVED (rejected, a gap, or out
of deliveries). A release or an expired lock makes a record AVAILABLE again, or ARCHIVED once its
delivery count has reached `group.share.delivery.count.limit` (Kafka's SharePartition).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from kipwire.codec import ErrorCode


class RecordState(enum.IntEnum):
    """An in-flight record's state, numbered as Kafka's share-group state records store it."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """ShareFetch and ShareAcknowledge `AcknowledgeTypes` values (KIP-932, KIP-1222's RENEW)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class AcquireMode(enum.IntEnum):
    """ShareFetch v2 `ShareAcquireMode` (`share.acquire.mode` on the consumer)."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


@dataclass(slots=True)
class InFlight:
    """One in-flight offset."""

    state: RecordState
    delivery_count: int
    member_id: str = ""
    deadline: float = 0.0


@dataclass(frozen=True, slots=True)
class Acquired:
    """A run of acquired offsets with one delivery count (ShareFetch `AcquiredRecords`)."""

    first_offset: int
    last_offset: int
    delivery_count: int


class AcknowledgeError(Exception):
    """An acknowledgement the partition refuses, with the protocol's error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


_DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class SharePartition:
    """The delivery state of one topic-partition for one share group."""

    def __init__(self, start_offset: int) -> None:
        self.start_offset = start_offset
        self.next_offset = start_offset
        self.records: dict[int, InFlight] = {}
        # what DescribeShareGroupOffsets reports: Kafka's SharePartition writes the share-group
        # state (its start offset, the changed batches) before it moves the start offset over
        # them, so its share coordinator holds the start offset before the latest change
        self.persisted_start_offset = start_offset

    # -- acquiring ------------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        batches: Iterable[tuple[int, int]],
        high_watermark: int,
        max_records: int,
        *,
        deadline: float,
        max_in_flight: int,
        mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
    ) -> list[Acquired]:
        """Acquire for `member_id`: released records first, then new ones below the HWM.

        `batches` are the log's (base, last) offsets in order. In batch-optimized mode new
        records are taken a whole batch at a time, so `max_records` may be exceeded to the end of
        a batch (Kafka aligns acquisitions to batches); in record-limit mode never.
        """
        taken: list[tuple[int, int]] = []  # (offset, delivery count)
        for offset in sorted(self.records):
            if len(taken) >= max_records:
                break
            record = self.records[offset]
            if record.state is RecordState.AVAILABLE:
                self._hold(record, member_id, deadline)
                taken.append((offset, record.delivery_count))
        for base, last in batches:
            if len(taken) >= max_records or self.next_offset - self.start_offset >= max_in_flight:
                break
            if last < self.next_offset:
                continue
            if base >= high_watermark:
                break
            first = max(base, self.next_offset)
            stop = min(last, high_watermark - 1)
            if mode is AcquireMode.RECORD_LIMIT:
                stop = min(stop, first + max_records - len(taken) - 1)
            for offset in range(first, stop + 1):
                self.records[offset] = InFlight(RecordState.ACQUIRED, 1, member_id, deadline)
                taken.append((offset, 1))
            self.next_offset = stop + 1
        return _runs(taken)

    @staticmethod
    def _hold(record: InFlight, member_id: str, deadline: float) -> None:
        record.state = RecordState.ACQUIRED
        record.delivery_count += 1
        record.member_id = member_id
        record.deadline = deadline

    def archive(self, runs: list[Acquired], offsets: set[int]) -> list[Acquired]:
        """Archive acquired `offsets` a member must never see (an aborted transaction's records
        under read_committed, as Kafka's SharePartition filters them); the runs without them."""
        for offset in offsets:
            record = self.records.get(offset)
            if record is not None and record.state is RecordState.ACQUIRED:
                record.state = RecordState.ARCHIVED
        self._advance()
        kept = [
            (o, r.delivery_count)
            for r in runs
            for o in range(r.first_offset, r.last_offset + 1)
            if o not in offsets
        ]
        return _runs(kept)

    def skip_to(self, offset: int) -> None:
        """Records below `offset` are gone from the log (deleted or never there): forget them."""
        if offset > self.start_offset:
            for gone in [o for o in self.records if o < offset]:
                del self.records[gone]
            self.start_offset = offset
            self.next_offset = max(self.next_offset, offset)
            # nothing below the log start is left to report
            self.persisted_start_offset = max(self.persisted_start_offset, offset)

    # -- acknowledging --------------------------------------------------------------------------

    def acknowledge(
        self,
        member_id: str,
        first: int,
        last: int,
        types: list[int],
        *,
        delivery_limit: int,
        renewed_deadline: float,
    ) -> None:
        """Apply one acknowledgement batch, all or nothing; AcknowledgeError if refused.

        One type covers the whole range; otherwise there is one type per offset. Offsets below
        the start offset are finished already and skipped, as Kafka's SharePartition does.
        """
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            raise AcknowledgeError(
                ErrorCode.INVALID_REQUEST, f"acknowledgement types do not cover {first}..{last}"
            )
        try:
            kinds = [AcknowledgeType(t) for t in types]
        except ValueError:
            raise AcknowledgeError(
                ErrorCode.INVALID_REQUEST, f"unknown acknowledge type in {types}"
            ) from None
        for offset in range(max(first, self.start_offset), last + 1):
            record = self.records.get(offset)
            if (
                record is None
                or record.state is not RecordState.ACQUIRED
                or record.member_id != member_id
            ):
                raise AcknowledgeError(
                    ErrorCode.INVALID_RECORD_STATE,
                    f"offset {offset} is not acquired by member {member_id}",
                )
        for offset in range(max(first, self.start_offset), last + 1):
            kind = kinds[0] if len(kinds) == 1 else kinds[offset - first]
            record = self.records[offset]
            if kind is AcknowledgeType.ACCEPT:
                record.state = RecordState.ACKNOWLEDGED
            elif kind in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
                record.state = RecordState.ARCHIVED
            elif kind is AcknowledgeType.RELEASE:
                self._release(record, delivery_limit)
            else:
                record.deadline = renewed_deadline
        if last >= self.start_offset:  # Kafka writes no state for finished offsets alone
            self.persisted_start_offset = self.start_offset
        self._advance()

    @staticmethod
    def _release(record: InFlight, delivery_limit: int) -> None:
        done = record.delivery_count >= delivery_limit
        record.state = RecordState.ARCHIVED if done else RecordState.AVAILABLE
        record.member_id = ""
        record.deadline = 0.0

    def release_member(self, member_id: str, delivery_limit: int) -> bool:
        """Release every record `member_id` holds (its session closed or it left); True if any."""
        held = [
            r
            for r in self.records.values()
            if r.state is RecordState.ACQUIRED and r.member_id == member_id
        ]
        for record in held:
            self._release(record, delivery_limit)
        if held:
            self.persisted_start_offset = self.start_offset
        self._advance()
        return bool(held)

    def expire_locks(self, now: float, delivery_limit: int) -> bool:
        """Release records whose acquisition lock ran out; True if any did."""
        expired = [
            r
            for r in self.records.values()
            if r.state is RecordState.ACQUIRED and r.deadline <= now
        ]
        for record in expired:
            self._release(record, delivery_limit)
        if expired:
            self.persisted_start_offset = self.start_offset
        self._advance()
        return bool(expired)

    def next_deadline(self) -> float | None:
        """The earliest acquisition lock deadline, None when nothing is acquired."""
        return min(
            (r.deadline for r in self.records.values() if r.state is RecordState.ACQUIRED),
            default=None,
        )

    def _advance(self) -> None:
        # the SPSO moves over the finished prefix; finished records above it stay until then
        while self.start_offset < self.next_offset:
            record = self.records.get(self.start_offset)
            if record is not None and record.state not in _DONE:
                break
            self.records.pop(self.start_offset, None)
            self.start_offset += 1

    # -- what admin APIs report -----------------------------------------------------------------

    def reset(self, offset: int) -> None:
        """AlterShareGroupOffsets: start again at `offset` with nothing in flight."""
        self.records.clear()
        self.start_offset = self.next_offset = self.persisted_start_offset = offset

    def lag(self, high_watermark: int) -> int:
        """Records below the HWM not yet acknowledged or archived."""
        finished = sum(
            1 for o, r in self.records.items() if r.state in _DONE and o < high_watermark
        )
        return max(high_watermark - self.start_offset - finished, 0)

    def state_of(self, offset: int) -> InFlight | None:
        """The in-flight entry of `offset`, None when it is not in flight."""
        return self.records.get(offset)


def _runs(taken: list[tuple[int, int]]) -> list[Acquired]:
    """Consecutive offsets with the same delivery count, as ShareFetch reports them."""
    runs: list[Acquired] = []
    for offset, count in sorted(taken):
        if runs and runs[-1].last_offset == offset - 1 and runs[-1].delivery_count == count:
            runs[-1] = Acquired(runs[-1].first_offset, offset, count)
        else:
            runs.append(Acquired(offset, offset, count))
    return runs
