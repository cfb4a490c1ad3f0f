"""The KIP's unclean recovery (Semantics.unclean_recovery): GetReplicaLogInfo, then the replica
with the highest (LastWrittenLeaderEpoch, LogEndOffset) leads, RECOVERING (KIP-704)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from construct import Container

from kipwire.codec import ApiKey, ErrorCode, message

from .configs import (
    RECOVERY_STRATEGY,
    recovery_strategy,
    recovery_timeout_ms,
    unclean_election_enabled,
)
from .election import Election
from .partition_change import Target
from .state import NO_LEADER, TOPIC_RESOURCE, PartitionState

if TYPE_CHECKING:
    from .controller import Controller

GET_REPLICA_LOG_INFO = ApiKey.GET_REPLICA_LOG_INFO
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


class Recovery:
    """The recovery manager: finds partitions to recover, asks replicas, elects the best."""

    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl
        self.pending: dict[tuple[UUID, int], Pending] = {}
        self._outbox: list[tuple[int, int, int, dict]] = []
        self.finished = 0

    @property
    def enabled(self) -> bool:
        """Whether the semantics use the KIP's unclean recovery."""
        return self.ctl.semantics.unclean_recovery

    def strategy(self, topic: str) -> str:
        """The topic's strategy; the KIP maps unclean.leader.election.enable=true to Aggressive."""
        state = self.ctl.state
        explicit = state.config(TOPIC_RESOURCE, topic, RECOVERY_STRATEGY) is not None
        if not explicit and unclean_election_enabled(state, topic):
            return "Aggressive"
        return recovery_strategy(state, topic)

    def needs_recovery(self, p: PartitionState) -> str | None:
        """The strategy to start now for a leaderless partition, or None to wait (KIP order)."""
        if p.leader != NO_LEADER:
            return None
        active = self.ctl.is_active
        if any(active(r) for r in p.isr) or (not p.isr and any(active(r) for r in p.elr)):
            return None
        strategy = self.strategy(p.topic)
        if strategy == "Aggressive":
            return strategy
        if strategy == "Balanced" and not p.elr and all(active(r) for r in p.last_known_elr):
            return strategy
        return None

    def drain_outbox(self) -> list[tuple[int, int, int, dict]]:
        """The GetReplicaLogInfo requests to send, oldest first; the outbox is emptied."""
        out, self._outbox = self._outbox, []
        return out

    def start(self, p: PartitionState, strategy: str) -> bool:
        """Ask every live replica for its log; False when none is live."""
        live = [r for r in p.replicas if self.ctl.is_active(r)]
        if not live:
            return False
        deadline = self.ctl.now_ms + recovery_timeout_ms(self.ctl.state, p.topic)
        key = (p.topic_id, p.partition_id)
        pending = Pending(p.topic_id, p.partition_id, strategy, deadline, set(live))
        self.pending[key] = pending
        for broker_id in live:
            self._send(pending, broker_id)
        return True

    def _send(self, pending: Pending, broker_id: int) -> None:
        body = {
            "topic_partitions": [
                {"topic_id": pending.topic_id, "partitions": [pending.partition_id]}
            ]
        }
        self._outbox.append((broker_id, GET_REPLICA_LOG_INFO, 0, body))

    def _retry(self, pending: Pending, broker_id: int) -> None:
        attempt = pending.attempts.get(broker_id, 0) + 1
        pending.attempts[broker_id] = attempt
        pending.retry_at[broker_id] = self.ctl.now_ms + retry_delay_ms(attempt)
        self._send_due(pending)

    def _send_due(self, pending: Pending) -> None:
        for broker_id, due in sorted(pending.retry_at.items()):
            if due <= self.ctl.now_ms:
                del pending.retry_at[broker_id]
                if self.ctl.is_active(broker_id):
                    self._send(pending, broker_id)

    def scan(self) -> None:
        """Start recoveries for partitions that need one; drop those that found a leader."""
        if not self.enabled:
            return
        for key in list(self.pending):
            p = self._partition(key)
            if p is None or p.leader != NO_LEADER:
                del self.pending[key]
        for p in self.ctl.state.partitions():
            if (p.topic_id, p.partition_id) in self.pending:
                continue
            strategy = self.needs_recovery(p)
            if strategy is not None:
                self.start(p, strategy)

    def deliver(self, broker_id: int, api_key: int, api_version: int, body: Any) -> None:
        """Take a GetReplicaLogInfo response; stale epochs (a restarted broker) are dropped."""
        if api_key != GET_REPLICA_LOG_INFO or api_version != 0:
            return
        if not isinstance(body, Container):
            codec = message("GetReplicaLogInfoResponse", 0)
            body = codec.parse(codec.build(dict(body)))
        b = self.ctl.state.brokers.get(broker_id)
        if b is None or b.epoch != body["broker_epoch"]:
            return
        for topic in body["topic_partition_log_info_list"]:
            for info in topic["partition_log_info"]:
                key = (topic["topic_id"], info["partition"])
                pending = self.pending.get(key)
                p = self._partition(key)
                if pending is None or p is None or broker_id not in pending.asked:
                    continue
                if info["error_code"] != ErrorCode.NONE:
                    self._retry(pending, broker_id)
                    continue
                # KIP: the replica's view of the leader epoch fences stale answers.
                if info["current_leader_epoch"] != p.leader_epoch:
                    continue
                pending.answers[broker_id] = (
                    body["broker_epoch"],
                    info["last_written_leader_epoch"],
                    info["log_end_offset"],
                )
                self._maybe_elect(key, pending)

    def tick(self) -> None:
        """Deadlines: elect with the answers gathered so far, and start due recoveries."""
        if not self.enabled:
            return
        for key, pending in list(self.pending.items()):
            self._send_due(pending)
            self._maybe_elect(key, pending)
        self.scan()

    def broker_unfenced(self, broker_id: int) -> None:
        """A Balanced recovery may be waiting for this broker."""
        self.scan()

    def broker_registered(self, broker_id: int) -> None:
        """A new incarnation's old answers no longer describe its log."""
        for pending in self.pending.values():
            pending.answers.pop(broker_id, None)

    def forget_topic(self, topic_id: UUID) -> None:
        """Drop the recoveries of a deleted topic."""
        for key in [k for k in self.pending if k[0] == topic_id]:
            del self.pending[key]

    def waiting_for_operator(self) -> int:
        """Leaderless partitions whose strategy is None (the KIP's manual-election gauge)."""
        return sum(
            1
            for p in self.ctl.state.partitions()
            if p.leader == NO_LEADER and self.strategy(p.topic) == "None"
        )

    def waiting(self) -> int:
        """Leaderless Balanced partitions waiting for LastKnownElr members to come back."""
        return sum(
            1
            for p in self.ctl.state.partitions()
            if p.leader == NO_LEADER
            and (p.topic_id, p.partition_id) not in self.pending
            and self.strategy(p.topic) == "Balanced"
            and self.needs_recovery(p) is None
        )

    def _partition(self, key: tuple[UUID, int]) -> PartitionState | None:
        topic = self.ctl.state.topics.get(key[0])
        return None if topic is None else topic.partitions.get(key[1])

    def _maybe_elect(self, key: tuple[UUID, int], pending: Pending) -> None:
        p = self._partition(key)
        if p is None or p.leader != NO_LEADER:
            self.pending.pop(key, None)
            return
        answered = {
            b: a
            for b, a in pending.answers.items()
            if self.ctl.is_active(b) and self.ctl.state.brokers[b].epoch == a[0]
        }
        if not answered:
            return
        everyone = pending.asked <= answered.keys()
        expired = self.ctl.now_ms >= pending.deadline_ms
        if pending.strategy == "Balanced" and not set(p.last_known_elr) <= answered.keys():
            return
        if not (everyone or expired):
            return
        # Highest (LastWrittenLeaderEpoch, LogEndOffset); the assignment order breaks ties.
        order = {r: i for i, r in enumerate(p.replicas)}
        best = max(answered, key=lambda b: (answered[b][1], answered[b][2], -order.get(b, 0)))
        del self.pending[key]
        change = self.ctl.change_partition(
            p, Target(election=Election.DESIGNATED, designated_leader=best)
        )
        if change.record is not None:
            self.finished += 1
