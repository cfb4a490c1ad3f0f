"""Classic consumer groups: members, generations, rebalances, committed offsets.

A rebalance (PreparingRebalance) completes when every member has rejoined, or when the longest
rebalance timeout of the members runs out (those that did not rejoin are removed). The leader's
SyncGroup hands out the assignments. Members whose session times out are removed by `expire`.
"""

from __future__ import annotations

import enum
import logging
import uuid
from dataclasses import dataclass, field

import trio

from kipwire.codec import ErrorCode

log = logging.getLogger("kipwire.mockbroker.groups")


class GroupState(enum.Enum):
    """Kafka's classic group states (the names DescribeGroups and ListGroups report)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class JoinResult:
    """What a JoinGroup call returns once its rebalance completes."""

    error: int
    generation: int = -1
    protocol: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass(slots=True)
class Member:
    """A group member and what it sent in its last JoinGroup."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    deadline: float = 0.0
    joining: trio.Event | None = None
    join_result: JoinResult | None = None


@dataclass(slots=True)
class CommittedOffset:
    """A committed offset, with the leader epoch and metadata the committer sent."""

    offset: int
    leader_epoch: int
    metadata: str | None


class Group:
    """One classic group."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: dict[str, Member] = {}
        self.pending: set[str] = set()  # member ids handed out by MEMBER_ID_REQUIRED
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        self.rebalance_deadline = 0.0
        self.initial_until = 0.0  # group.initial.rebalance.delay.ms: a new group waits for more
        self.synced = trio.Event()

    def prepare_rebalance(self) -> None:
        """Start a rebalance: every member must rejoin before the deadline."""
        if self.state is not GroupState.PREPARING_REBALANCE:
            self.state = GroupState.PREPARING_REBALANCE
            self.synced.set()  # members waiting in SyncGroup learn of the rebalance
            self.synced = trio.Event()
            timeout = max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
            self.rebalance_deadline = trio.current_time() + timeout / 1000

    def maybe_complete(self, now: float) -> None:
        """Finish the rebalance when everyone rejoined or the deadline passed."""
        if self.state is not GroupState.PREPARING_REBALANCE or now < self.initial_until:
            return
        waiting = [m for m in self.members.values() if m.joining is None]
        if waiting and now < self.rebalance_deadline:
            return
        for member in waiting:
            log.info("group %s: %s did not rejoin in time", self.group_id, member.member_id)
            del self.members[member.member_id]
        if not self.members:
            self.state = GroupState.EMPTY
            self.generation += 1
            self.leader = self.protocol = None
            return
        self.generation += 1
        log.info(
            "group %s: generation %d with %s", self.group_id, self.generation, list(self.members)
        )
        self.protocol = self._choose_protocol()
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        self.state = GroupState.COMPLETING_REBALANCE
        listing = [
            (m.member_id, m.instance_id, dict(m.protocols).get(self.protocol, b""))
            for m in self.members.values()
        ]
        for member in self.members.values():
            member.join_result = JoinResult(
                0,
                self.generation,
                self.protocol,
                self.leader,
                member.member_id,
                listing if member.member_id == self.leader else [],
            )
            assert member.joining is not None
            member.joining.set()
            member.joining = None
            member.deadline = now + member.session_timeout_ms / 1000

    def _choose_protocol(self) -> str | None:
        members = list(self.members.values())
        common = set.intersection(*(set(name for name, _ in m.protocols) for m in members))
        votes: dict[str, int] = {}
        for member in members:
            for name, _ in member.protocols:
                if name in common:
                    votes[name] = votes.get(name, 0) + 1
                    break
        return max(votes, key=votes.__getitem__) if votes else None

    def remove(self, member_id: str) -> None:
        """A member leaves (LeaveGroup or session expiry): the others rebalance."""
        member = self.members.pop(member_id, None)
        if member is None:
            return
        log.info("group %s: %s removed", self.group_id, member_id)
        if member.joining is not None:
            member.join_result = JoinResult(ErrorCode.UNKNOWN_MEMBER_ID)
            member.joining.set()
        if self.members:
            self.prepare_rebalance()
            self.maybe_complete(trio.current_time())
        else:
            self.state = GroupState.EMPTY
            self.generation += 1
            self.leader = self.protocol = None
            self.synced.set()
            self.synced = trio.Event()


class GroupCoordinator:
    """Every classic group of the cluster."""

    def __init__(self, initial_rebalance_delay_ms: int = 0) -> None:
        self.groups: dict[str, Group] = {}
        self.changed = trio.Event()
        self.initial_delay = initial_rebalance_delay_ms / 1000

    def group(self, group_id: str, create: bool = False) -> Group | None:
        """A group by id (created when asked)."""
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.groups[group_id] = Group(group_id)
        return group

    def offsets_for(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        """Where a group's offsets are committed (the group is created when new)."""
        group = self.group(group_id, create=True)
        assert group is not None
        return group.offsets

    def new_member_id(self, client_id: str) -> str:
        """A fresh member id, Kafka style: client id, dash, UUID."""
        return f"{client_id}-{uuid.uuid4()}"

    async def join(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        client_id: str,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        require_known_member: bool,
    ) -> JoinResult:
        """JoinGroup: enter the rebalance and wait until it completes."""
        if not group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID)
        if not protocols:
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        group = self.group(group_id, create=True)
        assert group is not None
        if (
            group.protocol_type is not None
            and group.members
            and protocol_type != group.protocol_type
        ):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if not member_id:
            member_id = self.new_member_id(client_id)
            if require_known_member:
                # KIP-394: the member must come back with this id before it counts
                group.pending.add(member_id)
                return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
        elif member_id not in group.members and member_id not in group.pending:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)
        group.pending.discard(member_id)
        group.protocol_type = protocol_type
        member = group.members.get(member_id)
        if member is None:
            self._delay_initial_rebalance(group, rebalance_timeout_ms)
            member = group.members[member_id] = Member(
                member_id,
                instance_id,
                client_id,
                "/127.0.0.1",
                session_timeout_ms,
                rebalance_timeout_ms if rebalance_timeout_ms > 0 else session_timeout_ms,
                protocols,
            )
            group.prepare_rebalance()
        elif group.state is GroupState.STABLE and member.protocols == protocols:
            if member.member_id != group.leader:
                # a follower rejoining with nothing new gets the current generation back
                return JoinResult(
                    0, group.generation, group.protocol, group.leader or "", member_id
                )
            group.prepare_rebalance()
        else:
            member.protocols = protocols
            group.prepare_rebalance()
        member.joining = trio.Event()
        member.join_result = None
        event = member.joining
        group.maybe_complete(trio.current_time())
        self._wake()
        await event.wait()
        assert member.join_result is not None
        return member.join_result

    def _delay_initial_rebalance(self, group: Group, rebalance_timeout_ms: int) -> None:
        """Kafka's InitialDelayedJoin: a new group's first rebalance waits for more members,
        each arrival extending the wait by the delay, up to the rebalance timeout."""
        if not self.initial_delay:
            return
        now = trio.current_time()
        if not group.members:
            group.initial_until = now + self.initial_delay
            group.rebalance_deadline = now + max(rebalance_timeout_ms, 0) / 1000
        elif now < group.initial_until:
            group.initial_until = min(now + self.initial_delay, group.rebalance_deadline)

    async def sync(
        self, group_id: str, generation: int, member_id: str, assignments: dict[str, bytes]
    ) -> tuple[int, bytes, str | None]:
        """SyncGroup: the leader hands out assignments; everyone gets its own."""
        group = self.group(group_id)
        if group is None or member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID, b"", None
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION, b"", None
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS, b"", None
        if group.state is GroupState.COMPLETING_REBALANCE:
            if member_id == group.leader:
                for member in group.members.values():
                    member.assignment = assignments.get(member.member_id, b"")
                group.state = GroupState.STABLE
                group.synced.set()
                group.synced = trio.Event()
            else:
                await group.synced.wait()
        member = group.members.get(member_id)
        if member is None or group.state is not GroupState.STABLE or generation != group.generation:
            return ErrorCode.REBALANCE_IN_PROGRESS, b"", None
        member.deadline = trio.current_time() + member.session_timeout_ms / 1000
        return ErrorCode.NONE, member.assignment, group.protocol

    def heartbeat(self, group_id: str, generation: int, member_id: str) -> int:
        """Heartbeat: keep the session alive, or say a rebalance is on."""
        group = self.group(group_id)
        if group is None or member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        member.deadline = trio.current_time() + member.session_timeout_ms / 1000
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def leave(self, group_id: str, member_id: str) -> int:
        """LeaveGroup for one member."""
        group = self.group(group_id)
        if group is None or member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        log.info("group %s: %s leaves", group_id, member_id)
        group.remove(member_id)
        self._wake()
        return ErrorCode.NONE

    def check_commit(
        self, group_id: str, generation: int, member_id: str
    ) -> tuple[int, Group | None]:
        """Whether an OffsetCommit may write: simple commits, or the current generation."""
        if group_id not in self.groups and generation >= 0:
            # Only a simple commit (generation -1) creates a group, as in Kafka's coordinator.
            return ErrorCode.ILLEGAL_GENERATION, None
        group = self.group(group_id, create=True)
        assert group is not None
        if generation < 0 and not member_id:
            if group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID, group
            return ErrorCode.NONE, group
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID, group
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION, group
        if group.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS, group
        return ErrorCode.NONE, group

    def expire(self, now: float) -> float:
        """Remove members whose session ran out, end overdue rebalances; the next deadline."""
        upcoming = now + 1.0
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                if member.joining is None and member.deadline and member.deadline <= now:
                    log.info("group %s: %s session expired", group.group_id, member.member_id)
                    group.remove(member.member_id)
                elif member.joining is None and member.deadline:
                    upcoming = min(upcoming, member.deadline)
            group.maybe_complete(now)
            if group.state is GroupState.PREPARING_REBALANCE:
                wake = (
                    group.initial_until if now < group.initial_until else group.rebalance_deadline
                )
                upcoming = min(upcoming, wake)
        return upcoming

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def run_timers(self) -> None:
        """Expire sessions and rebalances, sleeping until the next deadline or a change."""
        while True:
            upcoming = self.expire(trio.current_time())
            with trio.move_on_at(upcoming):
                await self.changed.wait()
