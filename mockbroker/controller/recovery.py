"""The KIP's unclean recovery (E.26, Semantics.unclean_recovery): GetReplicaLogInfo, then the
replica with the highest (LastWrittenLeaderEpoch, LogEndOffset) leads, RECOVERING (KIP-704).

Unclean recovery's strategies: Aggressive starts at once; the Balanced strategy is
`balanced_strategy_may_start` and `balanced_strategy_may_elect`; None waits for an operator.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from kipwire.codec import ApiKey, ConfigResourceType, ErrorCode, UncleanRecoveryStrategy

from .configs import (
    RECOVERY_STRATEGY,
    recovery_strategy,
    recovery_timeout_ms,
    unclean_election_enabled,
)
from .draft import Draft, change_partition, is_active
from .election import Election
from .partition_change import Target
from .result import ControllerResult, ControllerView
from .state import NO_LEADER, ClusterState, PartitionState

AGGRESSIVE = UncleanRecoveryStrategy.AGGRESSIVE
BALANCED = UncleanRecoveryStrategy.BALANCED
NONE = UncleanRecoveryStrategy.NONE
# The fork's manager retries a replica that answered with an error: at once, then after
# 50 ms, doubling up to 3 s.
RETRY_BASE_MS = 50
RETRY_CAP_MS = 3000


def retry_delay_ms(attempt: int) -> int:
    """The wait before the attempt-th retry (1-based) of a GetReplicaLogInfo."""
    return 0 if attempt <= 1 else min(RETRY_BASE_MS * 2 ** (attempt - 2), RETRY_CAP_MS)


@dataclass
class Pending:
    """One partition's recovery in progress: whom it asked, what they said, until when."""

    topic_id: UUID
    partition_id: int
    strategy: str
    deadline_ms: int
    asked: set[int]
    # broker id -> (broker epoch, last written leader epoch, log end offset)
    answers: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    # broker id -> retries so far, and when the next one is due
    attempts: dict[int, int] = field(default_factory=dict)
    retry_at: dict[int, int] = field(default_factory=dict)


def strategy_of(state: ClusterState, topic: str) -> str:
    """E.26: the topic's strategy; the KIP maps unclean.leader.election.enable=true to
    Aggressive."""
    explicit = state.config(ConfigResourceType.TOPIC, topic, RECOVERY_STRATEGY) is not None
    if not explicit and unclean_election_enabled(state, topic):
        return AGGRESSIVE
    return recovery_strategy(state, topic)


def balanced_strategy_may_start(p: PartitionState, active: Callable[[int], bool]) -> bool:
    """E.26, unclean recovery's Balanced strategy, part 1: start only once the ELR is empty and
    every LastKnownElr member is back (registered, unfenced)."""
    return not p.elr and all(active(r) for r in p.last_known_elr)


def balanced_strategy_may_elect(p: PartitionState, answered: Collection[int]) -> bool:
    """E.26, unclean recovery's Balanced strategy, part 2: elect only once every LastKnownElr
    member has answered GetReplicaLogInfo (Aggressive elects among whoever answered)."""
    return set(p.last_known_elr) <= set(answered)


def needs_recovery(state: ClusterState, p: PartitionState) -> str | None:
    """E.26: the strategy to start now for a leaderless partition, or None to wait: not while
    an ISR member (or, the ISR empty, an ELR member) can still lead, as the KIP orders it."""
    if p.leader != NO_LEADER:
        return None

    def active(r: int) -> bool:
        return is_active(state, r)

    if any(active(r) for r in p.isr) or (not p.isr and any(active(r) for r in p.elr)):
        return None
    strategy = strategy_of(state, p.topic)
    if strategy == AGGRESSIVE:
        return strategy
    if strategy == BALANCED and balanced_strategy_may_start(p, active):
        return strategy
    return None


def _partition(state: ClusterState, key: tuple[UUID, int]) -> PartitionState | None:
    topic = state.topics.get(key[0])
    return None if topic is None else topic.partitions.get(key[1])


class Recovery:
    """The recovery manager: finds partitions to recover, asks replicas, elects the best.

    Its pending recoveries and outbox live in memory only; its elections come back as records
    in a ControllerResult, which the Controller appends.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.pending: dict[tuple[UUID, int], Pending] = {}
        self._outbox: list[tuple[int, int, int, dict]] = []
        self.finished = 0

    def drain_outbox(self) -> list[tuple[int, int, int, dict]]:
        """The GetReplicaLogInfo requests to send, oldest first; the outbox is emptied."""
        out, self._outbox = self._outbox, []
        return out

    def start(self, view: ControllerView, p: PartitionState, strategy: str) -> bool:
        """E.26: ask every live replica for its log; False when none is live."""
        live = [r for r in p.replicas if is_active(view.state, r)]
        if not live:
            return False
        deadline = view.now_ms + recovery_timeout_ms(view.state, p.topic)
        key = (p.topic_id, p.partition_id)
        pending = Pending(p.topic_id, p.partition_id, strategy, deadline, set(live))
        self.pending[key] = pending
        for broker_id in live:
            self._send(pending, broker_id)
        return True

    def start_requested(self, view: ControllerView, recoveries: Collection[tuple]) -> None:
        """Start the recoveries an ElectLeaders asked for (topic id, partition, strategy)."""
        for topic_id, index, strategy in recoveries:
            p = _partition(view.state, (topic_id, index))
            if p is not None:
                self.start(view, p, strategy)

    def _send(self, pending: Pending, broker_id: int) -> None:
        body = {
            "topic_partitions": [
                {"topic_id": pending.topic_id, "partitions": [pending.partition_id]}
            ]
        }
        self._outbox.append((broker_id, ApiKey.GET_REPLICA_LOG_INFO, 0, body))

    def _retry(self, view: ControllerView, pending: Pending, broker_id: int) -> None:
        attempt = pending.attempts.get(broker_id, 0) + 1
        pending.attempts[broker_id] = attempt
        pending.retry_at[broker_id] = view.now_ms + retry_delay_ms(attempt)
        self._send_due(view, pending)

    def _send_due(self, view: ControllerView, pending: Pending) -> None:
        for broker_id, due in sorted(pending.retry_at.items()):
            if due <= view.now_ms:
                del pending.retry_at[broker_id]
                if is_active(view.state, broker_id):
                    self._send(pending, broker_id)

    def scan(self, view: ControllerView) -> None:
        """Start recoveries for partitions that need one; drop those that found a leader."""
        if not self.enabled:
            return
        for key in list(self.pending):
            p = _partition(view.state, key)
            if p is None or p.leader != NO_LEADER:
                del self.pending[key]
        for p in view.state.leaderless_partitions():  # only they can need a recovery
            if (p.topic_id, p.partition_id) in self.pending:
                continue
            strategy = needs_recovery(view.state, p)
            if strategy is not None:
                self.start(view, p, strategy)

    def deliver(self, view: ControllerView, broker_id: int, body: Any) -> ControllerResult:
        """E.26: take a GetReplicaLogInfo v0 response (decoded); stale epochs (a restarted
        broker) are dropped; an election it completes comes back as records."""
        draft = Draft(view)
        b = view.state.brokers.get(broker_id)
        if b is None or b.epoch != body["broker_epoch"]:
            return draft.result()
        for topic in body["topic_partition_log_info_list"]:
            for info in topic["partition_log_info"]:
                key = (topic["topic_id"], info["partition"])
                pending = self.pending.get(key)
                p = _partition(draft.state, key)
                if pending is None or p is None or broker_id not in pending.asked:
                    continue
                if info["error_code"] != ErrorCode.NONE:
                    self._retry(view, pending, broker_id)
                    continue
                # KIP: the replica's view of the leader epoch fences stale answers.
                if info["current_leader_epoch"] != p.leader_epoch:
                    continue
                pending.answers[broker_id] = (
                    body["broker_epoch"],
                    info["last_written_leader_epoch"],
                    info["log_end_offset"],
                )
                self._maybe_elect(draft, key, pending)
        return draft.result()

    def tick(self, view: ControllerView) -> ControllerResult:
        """E.26's deadlines: elect with the answers gathered so far; the Controller scans
        after."""
        draft = Draft(view)
        if not self.enabled:
            return draft.result()
        for key, pending in list(self.pending.items()):
            self._send_due(view, pending)
            self._maybe_elect(draft, key, pending)
        return draft.result()

    def waiting_for_operator(self, state: ClusterState) -> int:
        """Leaderless partitions whose strategy is None (the KIP's manual-election gauge)."""
        return sum(
            1
            for p in state.partitions()
            if p.leader == NO_LEADER and strategy_of(state, p.topic) == NONE
        )

    def waiting(self, state: ClusterState) -> int:
        """Leaderless Balanced partitions waiting for LastKnownElr members to come back."""
        return sum(
            1
            for p in state.partitions()
            if p.leader == NO_LEADER
            and (p.topic_id, p.partition_id) not in self.pending
            and strategy_of(state, p.topic) == BALANCED
            and needs_recovery(state, p) is None
        )

    def _maybe_elect(self, draft: Draft, key: tuple[UUID, int], pending: Pending) -> None:
        state = draft.state
        p = _partition(state, key)
        if p is None or p.leader != NO_LEADER:
            self.pending.pop(key, None)
            return
        answered = {
            b: a
            for b, a in pending.answers.items()
            if is_active(state, b) and state.brokers[b].epoch == a[0]
        }
        if not answered:
            return
        everyone = pending.asked <= answered.keys()
        expired = draft.now_ms >= pending.deadline_ms
        if pending.strategy == BALANCED and not balanced_strategy_may_elect(p, answered):
            return
        if not (everyone or expired):
            return
        # Highest (LastWrittenLeaderEpoch, LogEndOffset); the assignment order breaks ties.
        order = {r: i for i, r in enumerate(p.replicas)}
        best = max(answered, key=lambda b: (answered[b][1], answered[b][2], -order.get(b, 0)))
        del self.pending[key]
        change = change_partition(
            draft, p, Target(election=Election.DESIGNATED, designated_leader=best)
        )
        if change.record is not None:
            self.finished += 1
