"""A leader's ISR and high-watermark state machine for one partition (kip-rules A.1-A.3, B.4-B.8).

Sans-I/O: follower fetches, clock readings, metadata and AlterPartition replies go in; ISR
proposals and high watermarks come out. The broker runtime moves the bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from kipwire.codec import ErrorCode, LeaderRecoveryState

RECOVERED, RECOVERING = LeaderRecoveryState.RECOVERED, LeaderRecoveryState.RECOVERING
#: Whether a follower may join the ISR: (broker id, broker epoch from its fetches) -> bool (B.5).
Eligible = Callable[[int, int], bool]
#: The caught-up time of a follower never seen caught up (a clock may start at 0).
NEVER = -(2**62)


class Outcome(Enum):
    """What the leader does after an AlterPartition reply (B.8)."""

    COMMITTED = "committed"
    IGNORED = "ignored"
    REVERTED = "reverted"
    WAIT_FOR_METADATA = "wait"
    RETRY = "retry"


_REVERT = {ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED}
_WAIT = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.INVALID_UPDATE_VERSION,
    ErrorCode.INVALID_REQUEST,
    ErrorCode.NEW_LEADER_ELECTED,
}


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower from its fetches."""

    broker_id: int
    log_end_offset: int = -1
    broker_epoch: int = -1
    last_caught_up_ms: int = NEVER
    last_fetch_ms: int = 0
    last_fetch_leader_end: int = -1


@dataclass(frozen=True, slots=True)
class Proposal:
    """An AlterPartition in flight: the ISR asked for, with epochs (B.7)."""

    isr: tuple[int, ...]
    isr_with_epochs: tuple[tuple[int, int], ...]
    leader_recovery_state: int
    expansion: bool


class LeaderIsr:
    """The ISR, pending change and high watermark of a partition this broker leads."""

    def __init__(
        self,
        leader_id: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: list[int],
        isr: list[int],
        *,
        now_ms: int,
        lag_ms: int,
        leader_recovery_state: int = RECOVERED,
        recovering_rejects_fetch: bool = False,
    ) -> None:
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = list(replicas)
        self.isr = tuple(isr)
        self.lag_ms = lag_ms
        self.pending: Proposal | None = None
        self.in_flight = False
        self.followers = {
            r: FollowerState(r, last_caught_up_ms=now_ms if r in isr else NEVER)
            for r in replicas
            if r != leader_id
        }
        self.recovering_rejects_fetch = recovering_rejects_fetch
        # G.31: shipped Kafka marks itself RECOVERED at once; the KIP waits for the controller
        self.leader_recovery_state = leader_recovery_state
        self.local_recovery_state = leader_recovery_state if recovering_rejects_fetch else RECOVERED

    # -- views --------------------------------------------------------------------------------

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR plus a pending expansion (B.6: a pending shrink does not count)."""
        if self.pending is not None and self.pending.expansion:
            return self.pending.isr
        return self.isr

    @property
    def serves_fetches(self) -> bool:
        """False while a KIP-704 leader is RECOVERING under `recovering_rejects_fetch`."""
        return self.local_recovery_state == RECOVERED

    def caught_up(self, broker_id: int, now_ms: int, leader_end: int) -> bool:
        """Replica#isCaughtUp: at the leader's end, or caught up within replica.lag.time.max.ms."""
        f = self.followers.get(broker_id)
        if f is None:
            return broker_id == self.leader_id
        return f.log_end_offset == leader_end or now_ms - f.last_caught_up_ms <= self.lag_ms

    # -- inputs -------------------------------------------------------------------------------

    def follower_fetched(
        self, broker_id: int, fetch_offset: int, broker_epoch: int, now_ms: int, leader_end: int
    ) -> None:
        """Record a follower's fetch (Replica#updateFetchStateOrThrow)."""
        f = self.followers.get(broker_id)
        if f is None:
            return
        if fetch_offset >= leader_end:
            f.last_caught_up_ms = max(f.last_caught_up_ms, now_ms)
        elif fetch_offset >= f.last_fetch_leader_end:
            f.last_caught_up_ms = max(f.last_caught_up_ms, f.last_fetch_ms)
        f.log_end_offset = fetch_offset
        f.broker_epoch = broker_epoch
        f.last_fetch_ms = now_ms
        f.last_fetch_leader_end = leader_end

    def expansion(
        self, high_watermark: int, epoch_start: int, eligible: Eligible
    ) -> Proposal | None:
        """B.4: propose adding the first follower that caught up, if none is pending."""
        if self.pending is not None:
            return None
        for f in self.followers.values():
            if (
                f.broker_id not in self.isr
                and f.log_end_offset >= high_watermark
                and f.log_end_offset >= epoch_start
                and eligible(f.broker_id, f.broker_epoch)
            ):
                return self._propose((*self.isr, f.broker_id), expansion=True)
        return None

    def shrink(self, now_ms: int, leader_end: int) -> Proposal | None:
        """B.6: propose removing ISR followers not caught up within the lag, if none is pending."""
        if self.pending is not None:
            return None
        late = [
            r for r in self.isr if r != self.leader_id and not self.caught_up(r, now_ms, leader_end)
        ]
        if not late:
            return None
        return self._propose(tuple(r for r in self.isr if r not in late), expansion=False)

    def recovered(self) -> Proposal | None:
        """KIP-704: recovery done (nothing to recover in memory); report RECOVERED."""
        if self.pending is not None or self.leader_recovery_state == RECOVERED:
            return None
        return self._propose(self.isr, expansion=False)

    def _propose(self, isr: tuple[int, ...], *, expansion: bool) -> Proposal:
        # B.7: the leader's epoch is its own (filled in by the sender: -1 here means "mine")
        epochs = tuple(
            (r, -1 if r == self.leader_id else self.followers[r].broker_epoch) for r in isr
        )
        self.pending = Proposal(isr, epochs, RECOVERED, expansion)
        self.in_flight = False
        return self.pending

    def alter_partition_reply(self, error_code: int, reply: dict | None = None) -> Outcome:
        """B.8: commit, revert, wait for metadata or retry, by the reply's error."""
        self.in_flight = False
        if error_code == ErrorCode.NONE and reply is not None:
            if (
                reply["leader_epoch"] != self.leader_epoch
                or reply["partition_epoch"] < self.partition_epoch
            ):
                return Outcome.IGNORED
            self._commit(reply["isr"], reply["partition_epoch"], reply["leader_recovery_state"])
            return Outcome.COMMITTED
        if error_code in _REVERT:
            self.pending = None
            return Outcome.REVERTED
        if error_code in _WAIT:
            return Outcome.WAIT_FOR_METADATA
        return Outcome.RETRY

    def metadata(self, isr: list[int], partition_epoch: int, leader_recovery_state: int) -> None:
        """A newer partition state from the metadata log replaces the committed one."""
        if partition_epoch > self.partition_epoch:
            self._commit(isr, partition_epoch, leader_recovery_state)

    def _commit(self, isr: list[int], partition_epoch: int, leader_recovery_state: int) -> None:
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        self.leader_recovery_state = leader_recovery_state
        if leader_recovery_state == RECOVERED:
            self.local_recovery_state = RECOVERED
        self.pending = None

    # -- the high watermark -------------------------------------------------------------------

    def high_watermark(
        self, current: int, leader_end: int, min_isr: int, now_ms: int, eligible: Eligible
    ) -> int:
        """A.1-A.2: the new HWM (never lower than `current`)."""
        if len(self.isr) < min_isr:
            return current
        ends = [leader_end]
        for f in self.followers.values():
            in_isr = f.broker_id in self.maximal_isr
            waiting = self.caught_up(f.broker_id, now_ms, leader_end) and eligible(
                f.broker_id, f.broker_epoch
            )
            if in_isr or waiting:
                ends.append(max(f.log_end_offset, 0))
        return max(current, min(ends))

    def enough_replicas_to_append(self, min_isr: int) -> bool:
        """A.3: acks=all is refused before the append when the committed ISR is too small."""
        return len(self.isr) >= min_isr

    def enough_replicas_after_append(self, min_isr: int) -> bool:
        """A.3: once the HWM passes the batch, the maximal ISR must still reach min ISR."""
        return len(self.maximal_isr) >= min_isr
