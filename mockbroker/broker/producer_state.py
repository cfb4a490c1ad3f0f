"""Idempotent-producer bookkeeping of one partition: epochs, sequences, recent batches."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from kipwire.codec import ErrorCode

INT32_MAX = 2**31 - 1
#: Kafka keeps the metadata of the last five batches of each producer to answer retries.
RECENT_BATCHES = 5


@dataclass(slots=True)
class _Producer:
    epoch: int
    last_sequence: int = -1
    last_timestamp: int = -1  # wall-clock ms of its last batch (DescribeProducers)
    # the epoch of the coordinator whose marker it last had; -1 until one (Kafka's
    # ProducerStateEntry), so an idempotent producer's stays -1
    coordinator_epoch: int = -1
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_BATCHES))


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    """The verdict on one batch: an error, the offset of the batch it repeats, or accept."""

    error: ErrorCode = ErrorCode.NONE
    duplicate_of: int | None = None


def _next_sequence(sequence: int, count: int) -> int:
    return (sequence + count) % (INT32_MAX + 1)


class ProducerStates:
    """Per-producer epoch and sequence state, checked before a batch is appended."""

    def __init__(self) -> None:
        self._producers: dict[int, _Producer] = {}

    def check(self, producer_id: int, epoch: int, first_sequence: int, count: int) -> SequenceCheck:
        """Judge a batch of `count` records; it is recorded only by a later `record` call."""
        state = self._producers.get(producer_id)
        if state is None:
            # Kafka (before transactions v2) accepts any sequence from a producer it has no
            # state for: its records may have been deleted, or lost with an unclean leader
            return SequenceCheck()
        if epoch < state.epoch:
            return SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH)
        if epoch > state.epoch:
            if first_sequence != 0:
                return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
            return SequenceCheck()
        last_sequence = _next_sequence(first_sequence, count - 1)
        for first, last, base_offset in state.recent:
            if (first, last) == (first_sequence, last_sequence):
                return SequenceCheck(duplicate_of=base_offset)
        if first_sequence == _next_sequence(state.last_sequence, 1):
            return SequenceCheck()
        if state.last_sequence >= 0 and _behind(first_sequence, state.last_sequence):
            # a retry of a batch older than the cache: already written, but its offset is gone
            return SequenceCheck(ErrorCode.DUPLICATE_SEQUENCE_NUMBER)
        return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)

    def record(
        self, producer_id: int, epoch: int, first_sequence: int, count: int, base_offset: int
    ) -> None:
        """Remember an appended batch as the producer's latest."""
        state = self._producers.get(producer_id)
        if state is None or epoch != state.epoch:
            marked = state.coordinator_epoch if state is not None else -1
            state = self._producers[producer_id] = _Producer(epoch, coordinator_epoch=marked)
        last = _next_sequence(first_sequence, count - 1)
        state.last_sequence = last
        state.last_timestamp = int(time.time() * 1000)
        state.recent.append((first_sequence, last, base_offset))

    def epoch_of(self, producer_id: int) -> int | None:
        """The producer's current epoch, None when the partition has no state for it."""
        state = self._producers.get(producer_id)
        return state.epoch if state is not None else None

    def active(self) -> Iterator[tuple[int, int, int, int, int]]:
        """(producer id, epoch, last sequence, last timestamp ms, coordinator epoch) of every
        known producer."""
        for producer_id, state in sorted(self._producers.items()):
            yield (
                producer_id,
                state.epoch,
                state.last_sequence,
                state.last_timestamp,
                state.coordinator_epoch,
            )

    def bump(self, producer_id: int, epoch: int, coordinator_epoch: int = 0) -> None:
        """A transaction marker at `epoch` from a coordinator at `coordinator_epoch`: later
        batches of older epochs are fenced."""
        state = self._producers.get(producer_id)
        if state is None or epoch > state.epoch:
            state = self._producers[producer_id] = _Producer(epoch)
        state.coordinator_epoch = coordinator_epoch


def _behind(sequence: int, last: int) -> bool:
    """True when `sequence` came at or before `last` (within half the int32 ring)."""
    return 0 <= (last - sequence) % (INT32_MAX + 1) < (INT32_MAX + 1) // 2
