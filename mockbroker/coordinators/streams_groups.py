"""Streams groups (KIP-1071): members of a Kafka Streams application, the topology they
registered, their tasks and the reconciliation that hands tasks over, and the group's committed
offsets. KIP-1331's topology description is kept as the members send it.

Reconciliation follows KIP-848's rule, as Kafka's streams group does: a member first gives up the
tasks its new target lacks (keeping its epoch), and takes the new epoch with its target only once
it reports owning no more than it was left; a task still held by another member is withheld until
that member has let it go. The topology and settings come from the handler, which also creates
the internal topics before the heartbeat gets here.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from kipwire.codec import ErrorCode

from .groups import CommittedOffset
from .streams_assignor import Tasks, TopologyPlan, assign, task_lags, warm_ups

log = logging.getLogger("kipwire.mockbroker.streams")

STREAMS = "streams"
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class StreamsGroupState(enum.Enum):
    """A streams group's states as ListGroups and StreamsGroupDescribe name them."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class StatusCode(enum.IntEnum):
    """StreamsGroupHeartbeat `Status` codes."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4


@dataclass(slots=True)
class StreamsMember:
    """A member as its heartbeats describe it."""

    member_id: str
    process_id: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    topology_epoch: int = 0
    epoch: int = 0
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)
    #: what the member last reported owning (ActiveTasks), None before it ever did
    owned: Tasks | None = None
    sent: tuple[Tasks, Tasks, Tasks] | None = None
    deadline: float = 0.0
    task_offsets: list[Any] = field(default_factory=list)
    task_end_offsets: list[Any] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StreamsHeartbeat:
    """What StreamsGroupHeartbeat answers, besides the settings."""

    error: int
    message: str | None = None
    member_epoch: int = 0
    active: Tasks | None = None
    standby: Tasks | None = None
    warmup: Tasks | None = None
    status: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class WarmupSettings:
    """The mock's warm-up extension (`streams_assignor.warm_ups`): how many warm-up tasks the
    group may have at once and the lag under which a member counts as caught up."""

    replicas: int
    acceptable_lag: int


def _reported(entries: list[Any]) -> dict[tuple[str, int], int]:
    """TaskOffsets or TaskEndOffsets as task -> offset."""
    return {(e["subtopology_id"], e["partition"]): e["offset"] for e in entries}


def _tasks_in(tasks: Tasks, other: Tasks) -> Tasks:
    return {s: [p for p in ps if p in other.get(s, [])] for s, ps in tasks.items() if s in other}


def _minus(tasks: Tasks, held: set[tuple[str, int]]) -> Tasks:
    out = {s: [p for p in ps if (s, p) not in held] for s, ps in tasks.items()}
    return {s: ps for s, ps in out.items() if ps}


def _pairs(tasks: Tasks | None) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in (tasks or {}).items() for p in ps}


class StreamsGroup:
    """One streams group."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.epoch = 0
        self.assignment_epoch = 0
        self.topology: dict | None = None
        self.description: Any = None
        self.description_epoch = -1
        self.members: dict[str, StreamsMember] = {}
        self.target: dict[str, tuple[Tasks, Tasks]] = {}
        self.warmup_target: dict[str, Tasks] = {}
        self.tasks: dict[str, int] = {}
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        self.endpoint_epoch = 0
        self.dirty = False

    @property
    def state(self) -> StreamsGroupState:
        """Empty, NotReady (no tasks yet), Reconciling, or Stable."""
        if not self.members:
            return StreamsGroupState.EMPTY
        if not self.tasks:
            return StreamsGroupState.NOT_READY
        if any(m.epoch != self.assignment_epoch for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    @property
    def topology_epoch(self) -> int:
        """The registered topology's epoch, -1 before any."""
        return self.topology["epoch"] if self.topology else -1

    def reassign(
        self, tasks: Mapping[str, int], standbys: int, warmup: WarmupSettings | None = None
    ) -> None:
        """A new group epoch and target assignment (with warm-up tasks under the extension)."""
        self.epoch += 1
        self.dirty = False
        self.tasks = dict(tasks)
        current = {m.member_id: m.active for m in self.members.values()}
        active, standby = assign(
            {m.member_id: m.process_id for m in self.members.values()}, tasks, current, standbys
        )
        warm: dict[str, Tasks] = {}
        if warmup is not None:
            active, warm = warm_ups(
                active,
                current,
                self.lags(),
                self.stateful(),
                warmup.replicas,
                warmup.acceptable_lag,
            )
        self.warmup_target = warm
        self.target = {m: (active[m], standby[m]) for m in active}
        self.assignment_epoch = self.epoch
        if any(m.user_endpoint for m in self.members.values()):
            self.endpoint_epoch += 1  # the IQ endpoints' partitions changed

    def lags(self) -> dict[str, dict[tuple[str, int], int]]:
        """member -> task -> its lag, from the members' TaskOffsets and TaskEndOffsets."""
        members = self.members.values()
        return task_lags(
            {m.member_id: _reported(m.task_offsets) for m in members},
            {m.member_id: _reported(m.task_end_offsets) for m in members},
        )

    def stateful(self) -> set[str]:
        """The subtopologies with state (a changelog topic)."""
        return {
            sub["subtopology_id"]
            for sub in (self.topology or {}).get("subtopologies", [])
            if sub.get("state_changelog_topics")
        }

    def warmed_up(self, member: StreamsMember, acceptable_lag: int) -> bool:
        """Whether a member has caught up on one of its warm-up tasks (time to move it)."""
        lags = self.lags().get(member.member_id, {})
        return any(
            lags.get((sub, part), acceptable_lag + 1) <= acceptable_lag
            for sub, parts in member.warmup.items()
            for part in parts
        )

    def is_subscribed(self, topic: str) -> bool:
        """Whether the registered topology reads the topic, as a source or a repartition source
        (OffsetDelete refuses its offsets; Kafka's StreamsGroup#isSubscribedToTopic)."""
        for sub in (self.topology or {}).get("subtopologies", []):
            repartition = {t["name"] for t in sub.get("repartition_source_topics") or []}
            if topic in (sub.get("source_topics") or []) or topic in repartition:
                return True
        return False

    def check_commit(self, member_id: str, epoch: int, version: int = -1) -> int:
        """Whether an OffsetCommit may write (Kafka's StreamsGroup#validateOffsetCommit): a
        memberless commit while the group is empty, else a member at its current epoch. The
        same signature as a consumer group's (`consumer_group.py`); `version` changes nothing."""
        if not member_id and epoch < 0:
            return ErrorCode.UNKNOWN_MEMBER_ID if self.members else ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch != member.epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def check_fetch(self, member_id: str | None, epoch: int) -> int:
        """Whether an OffsetFetch (v9+) may read (Kafka's StreamsGroup#validateOffsetFetch): an
        admin (no member, epoch -1) or a member at its current epoch."""
        if member_id is None and epoch < 0:
            return ErrorCode.NONE
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch != member.epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def reconcile(self, member: StreamsMember) -> None:
        """Move `member` toward its target: revoke first, then take the new epoch."""
        target_active, target_standby = self.target.get(member.member_id, ({}, {}))
        kept = _tasks_in(member.active, target_active)
        if _pairs(kept) != _pairs(member.active):
            member.active = {s: ps for s, ps in kept.items() if ps}
            member.standby = _tasks_in(member.standby, target_standby)
            return
        if member.owned is not None and not _pairs(member.owned) <= _pairs(member.active):
            return  # it has not let go of what it was told to revoke
        held = set()
        for other in self.members.values():
            if other is not member:
                held |= _pairs(other.active) | _pairs(other.owned)
        member.epoch = self.assignment_epoch
        member.active = _minus(target_active, held)
        member.standby = {s: ps for s, ps in target_standby.items() if ps}
        member.warmup = {s: ps for s, ps in self.warmup_target.get(member.member_id, {}).items()}


class StreamsCoordinator:
    """Every streams group of the cluster."""

    def __init__(self) -> None:
        self.groups: dict[str, StreamsGroup] = {}
        self.changed = trio.Event()

    def group(self, group_id: str, create: bool = False) -> StreamsGroup | None:
        """A streams group by id (created when asked)."""
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.groups[group_id] = StreamsGroup(group_id)
        return group

    def heartbeat(
        self,
        group_id: str,
        member: StreamsMember,
        member_epoch: int,
        topology: dict | None,
        topology_plan: TopologyPlan | None,
        session_timeout_ms: int,
        standbys: int,
        warmup: WarmupSettings | None = None,
    ) -> StreamsHeartbeat:
        """StreamsGroupHeartbeat: join (0), stay (the member's epoch) or leave (-1, -2).

        `member` carries this request's fields (`owned` None when ActiveTasks was null);
        `topology_plan` is the group's topology planned against the topics that exist.
        """
        group = self.group(group_id, create=member_epoch == 0)
        known = group.members.get(member.member_id) if group is not None else None
        if member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            if group is not None and known is not None:
                self.remove(group, member.member_id)
            return StreamsHeartbeat(ErrorCode.NONE, member_epoch=member_epoch)
        if group is None or (known is None and member_epoch != 0):
            return StreamsHeartbeat(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member.member_id} is not a member of group {group_id}.",
            )
        if known is not None and member_epoch not in (0, known.epoch):
            relation = "greater" if member_epoch > known.epoch else "smaller"
            return StreamsHeartbeat(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The streams group member has a {relation} member epoch ({member_epoch}) than"
                f" the one known by the group coordinator ({known.epoch}). The member must"
                " abandon all its partitions and rejoin.",
            )
        if topology is not None and topology["epoch"] > group.topology_epoch:
            group.topology = topology
            group.dirty = True
        if known is None:
            known = group.members[member.member_id] = member
            log.info("streams group %s: %s joins", group_id, member.member_id)
            group.dirty = True
        else:
            self._update(known, member, member_epoch)
        known.deadline = trio.current_time() + session_timeout_ms / 1000
        status: list[tuple[int, str]] = []
        if topology_plan is not None and topology_plan.missing_sources:
            missing = ", ".join(sorted(set(topology_plan.missing_sources)))
            status.append(
                (StatusCode.MISSING_SOURCE_TOPICS, f"Source topics {missing} are missing.")
            )
        tasks = topology_plan.tasks if topology_plan is not None and not status else {}
        if warmup is not None and group.warmed_up(known, warmup.acceptable_lag):
            group.dirty = True  # a warm-up task caught up: its move to this member can happen
        if group.dirty or tasks != group.tasks:
            group.reassign(tasks, standbys, warmup)
            log.info("streams group %s: epoch %d, tasks %s", group_id, group.epoch, tasks)
        group.reconcile(known)
        now = ({s: sorted(p) for s, p in known.active.items()}, known.standby, known.warmup)
        changed = known.sent != now
        known.sent = now
        self._wake()
        return StreamsHeartbeat(
            ErrorCode.NONE,
            member_epoch=known.epoch,
            active=now[0] if changed else None,
            standby=now[1] if changed else None,
            warmup=now[2] if changed else None,
            status=status,
        )

    @staticmethod
    def _update(known: StreamsMember, request: StreamsMember, member_epoch: int) -> None:
        if member_epoch == 0:
            known.sent = None
        if request.owned is not None:
            known.owned = request.owned
        for name in ("process_id", "rack_id", "instance_id", "user_endpoint"):
            value = getattr(request, name)
            if value:
                setattr(known, name, value)
        if request.client_tags:
            known.client_tags = request.client_tags
        if request.task_offsets:
            known.task_offsets = request.task_offsets
        if request.task_end_offsets:
            known.task_end_offsets = request.task_end_offsets
        if request.topology_epoch:
            known.topology_epoch = request.topology_epoch

    def remove(self, group: StreamsGroup, member_id: str) -> None:
        """A member leaves or its session expires: the others rebalance."""
        if group.members.pop(member_id, None) is not None:
            log.info("streams group %s: %s removed", group.group_id, member_id)
            group.dirty = True
            group.target.pop(member_id, None)
            if not group.members:
                group.epoch += 1
                group.assignment_epoch = group.epoch  # the empty target, as Kafka computes it
                group.tasks = {}
            self._wake()

    def check_commit(self, group_id: str, member_id: str, epoch: int) -> int | None:
        """OffsetCommit's check for a streams group; None when `group_id` is not one."""
        group = self.groups.get(group_id)
        return None if group is None else group.check_commit(member_id, epoch)

    def delete(self, group_id: str) -> int:
        """DeleteGroups for a streams group: only an empty one goes, with its offsets."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        return ErrorCode.NONE

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    def expire(self, now: float) -> float:
        """Remove members whose session ran out; the next deadline."""
        upcoming = now + 1.0
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                if member.deadline <= now:
                    self.remove(group, member.member_id)
                else:
                    upcoming = min(upcoming, member.deadline)
        return upcoming

    async def run_timers(self) -> None:
        """Expire member sessions, sleeping until the next deadline or a change."""
        while True:
            upcoming = self.expire(trio.current_time())
            with trio.move_on_at(upcoming):
                await self.changed.wait()
