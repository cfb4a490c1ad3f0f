"""The transaction coordinator: producer ids and epochs, the partitions and groups of each
transaction, and the commit or abort that writes control markers to every partition."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Protocol

import trio

from kipwire.codec import ErrorCode

from .groups import CommittedOffset

MAX_EPOCH = 32767
#: writes a COMMIT (True) or ABORT marker to a partition: (topic, index, pid, epoch, commit)
MarkerWriter = Callable[[str, int, int, int, bool], None]


class OffsetStores(Protocol):
    """Where groups' committed offsets live, whichever kind holds the group id: a classic
    coordinator, a consumer-group one (it falls back to the classic group), or the cluster's
    `GroupOffsets` over every kind (streams groups keep their own offsets)."""

    def offsets_for(self, group_id: str) -> MutableMapping[tuple[str, int], CommittedOffset]: ...


@dataclass(slots=True)
class Transaction:
    """A transactional id's producer and its open transaction, if any."""

    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    state: str = "Empty"
    deadline: float = 0.0  # trio time at which an ongoing transaction is aborted
    # wall-clock ms the last transaction began (DescribeTransactions), -1 after InitProducerId
    started_ms: int = -1
    partitions: set[tuple[str, int]] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = field(default_factory=dict)
    #: (producer id, epoch) of the EndTxn v5 that ended the last transaction and bumped the
    #: epoch: its retry is answered alike until the next transaction begins.
    bumped_from: tuple[int, int] | None = None


class TransactionCoordinator:
    """Every transactional id of the cluster."""

    def __init__(self, groups: OffsetStores, write_marker: MarkerWriter) -> None:
        self._ids = itertools.count(1000)
        self.transactions: dict[str, Transaction] = {}
        self._groups = groups
        self._write_marker = write_marker
        self._changed = trio.Event()

    def new_producer_id(self) -> int:
        """A producer id never handed out before."""
        return next(self._ids)

    def skip_producer_ids_below(self, first: int) -> None:
        """Hand out ids from `first` on, at least: a restarted cluster's logs hold the ones
        below (Kafka's controller keeps its producer id blocks in the metadata log)."""
        self._ids = itertools.count(max(next(self._ids), first))

    def init_producer_id(
        self, transactional_id: str | None, timeout_ms: int, producer_id: int, epoch: int
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch): a fresh idempotent producer or the id's next epoch."""
        if transactional_id is None:
            return ErrorCode.NONE, self.new_producer_id(), 0
        txn = self.transactions.get(transactional_id)
        if txn is None:
            txn = Transaction(transactional_id, self.new_producer_id(), 0, timeout_ms)
            self.transactions[transactional_id] = txn
            return ErrorCode.NONE, txn.producer_id, txn.epoch
        if producer_id >= 0 and (producer_id, epoch) != (txn.producer_id, txn.epoch):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if txn.state == "Ongoing":
            self._finish(txn, commit=False)
        txn.timeout_ms = timeout_ms
        txn.bumped_from = None
        txn.started_ms = -1  # Kafka's epoch bump clears txnStartTimestamp
        if txn.epoch >= MAX_EPOCH - 1:
            txn.producer_id, txn.epoch = self.new_producer_id(), 0
        else:
            txn.epoch += 1
        return ErrorCode.NONE, txn.producer_id, txn.epoch

    def _check(self, transactional_id: str, producer_id: int, epoch: int) -> Transaction | int:
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if epoch != txn.epoch:
            return ErrorCode.PRODUCER_FENCED
        return txn

    def add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: list[tuple[str, int]]
    ) -> int:
        """AddPartitionsToTxn: the partitions join the ongoing transaction."""
        txn = self._check(transactional_id, producer_id, epoch)
        if isinstance(txn, int):
            return txn
        txn.partitions.update(partitions)
        self._begin(txn)
        return ErrorCode.NONE

    def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group: str) -> int:
        """AddOffsetsToTxn: the group's offsets will commit with the transaction."""
        txn = self._check(transactional_id, producer_id, epoch)
        if isinstance(txn, int):
            return txn
        txn.groups.add(group)
        self._begin(txn)
        return ErrorCode.NONE

    def commit_offsets(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        group: str,
        offsets: dict[tuple[str, int], CommittedOffset],
        check_member: Callable[[], int] | None = None,
    ) -> int:
        """TxnOffsetCommit: offsets held until the transaction commits; once the transaction
        checks pass, `check_member` (the group's member and epoch check) may refuse them."""
        txn = self._check(transactional_id, producer_id, epoch)
        if isinstance(txn, int):
            return txn
        if group not in txn.groups:
            return ErrorCode.INVALID_TXN_STATE
        if check_member is not None:
            code = check_member()
            if code != ErrorCode.NONE:
                return code
        txn.offsets.setdefault(group, {}).update(offsets)
        return ErrorCode.NONE

    def end(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        """EndTxn: write the markers, apply or drop the offsets."""
        txn = self._check(transactional_id, producer_id, epoch)
        if isinstance(txn, int):
            return txn
        if txn.state in ("CompleteCommit", "CompleteAbort"):
            # a retried EndTxn of the same outcome succeeds; the other outcome is refused
            done = "CompleteCommit" if commit else "CompleteAbort"
            return ErrorCode.NONE if txn.state == done else ErrorCode.INVALID_TXN_STATE
        self._finish(txn, commit)
        return ErrorCode.NONE

    def end_and_bump(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool
    ) -> tuple[int, int, int]:
        """EndTxn v5 (transactions v2, KIP-890 part 2): end as `end` does, then bump the epoch
        the producer's next transaction uses; (error, producer id, epoch) to answer with.

        Kafka writes the markers at the bumped epoch; here they carry the transaction's own
        and the bump follows, which a producer cannot tell apart: its next batch starts the
        new epoch at sequence 0 either way.
        """
        txn = self.transactions.get(transactional_id)
        if txn is not None and txn.bumped_from == (producer_id, epoch):
            # a retry of the EndTxn that already ended it (its answer was lost)
            done = "CompleteCommit" if commit else "CompleteAbort"
            if txn.state != done:
                return ErrorCode.INVALID_TXN_STATE, -1, -1
            return ErrorCode.NONE, txn.producer_id, txn.epoch
        code = self.end(transactional_id, producer_id, epoch, commit)
        if code != ErrorCode.NONE or txn is None or txn.epoch != epoch:
            return code, -1, -1
        if txn.epoch >= MAX_EPOCH - 1:
            txn.producer_id, txn.epoch = self.new_producer_id(), 0
        else:
            txn.epoch += 1
        txn.bumped_from = (producer_id, epoch)
        return ErrorCode.NONE, txn.producer_id, txn.epoch

    def _begin(self, txn: Transaction) -> None:
        txn.bumped_from = None
        if txn.state != "Ongoing":
            txn.state = "Ongoing"
            txn.deadline = trio.current_time() + txn.timeout_ms / 1000
            txn.started_ms = int(time.time() * 1000)
            self._changed.set()
            self._changed = trio.Event()

    def expire(self, now: float) -> float:
        """Abort transactions past their timeout, fencing their producer; the next deadline."""
        upcoming = now + 1.0
        for txn in self.transactions.values():
            if txn.state != "Ongoing":
                continue
            if txn.deadline <= now:
                # as Kafka's coordinator does: the epoch is bumped, so the producer is fenced
                txn.epoch += 1
                self._finish(txn, commit=False)
            else:
                upcoming = min(upcoming, txn.deadline)
        return upcoming

    async def run_timers(self) -> None:
        """Abort timed-out transactions, sleeping until the next deadline or a new one."""
        while True:
            upcoming = self.expire(trio.current_time())
            with trio.move_on_at(upcoming):
                await self._changed.wait()

    def _finish(self, txn: Transaction, commit: bool) -> None:
        for topic, index in sorted(txn.partitions):
            self._write_marker(topic, index, txn.producer_id, txn.epoch, commit)
        if commit:
            for group_id, offsets in txn.offsets.items():
                self._groups.offsets_for(group_id).update(offsets)
        txn.partitions.clear()
        txn.groups.clear()
        txn.offsets.clear()
        txn.state = "CompleteCommit" if commit else "CompleteAbort"
