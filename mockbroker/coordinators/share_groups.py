"""Share groups (KIP-932): members and their heartbeats, the server-side assignor, the share
partitions' delivery state and the brokers' share sessions.

Kafka splits this between the group coordinator (members, assignments), the share coordinator
(persisted share-partition state) and each partition leader (in-memory `SharePartition`s and share
sessions). The mock keeps one cluster-wide `ShareCoordinator`: the state survives a leader change
with its locks, where Kafka's new leader re-reads it and every acquired record becomes available.
Settings (`group.share.*` and the group's own `share.*` configs) are resolved by the handlers from
the broker's metadata image and passed in, so this module holds only state and rules.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import trio

from kipwire.codec import ErrorCode

from .share_partition import SharePartition

log = logging.getLogger("kipwire.mockbroker.share")

#: Kafka's name for the server-side share assignor (ShareGroupDescribe `AssignorName`).
SIMPLE_ASSIGNOR = "simple"
#: ListGroups `ProtocolType` and `GroupType` of a share group.
SHARE = "share"
LEAVE_EPOCH = -1
#: Kafka's `group.share.delivery.count.limit` default, for lock expiry before any request
#: of the group said otherwise.
DEFAULT_DELIVERY_LIMIT = 5

TopicPartition = tuple[str, int]


class ShareGroupState(enum.Enum):
    """A share group's states as ListGroups and ShareGroupDescribe name them."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class ShareMember:
    """A share group member as its heartbeats describe it."""

    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list[str]
    epoch: int = 0
    assignment: dict[str, list[int]] = field(default_factory=dict)
    #: the assignment last sent; a heartbeat carries the assignment only when it changed
    sent: dict[str, list[int]] | None = None
    deadline: float = 0.0


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """What ShareGroupHeartbeat answers."""

    error: int
    message: str | None = None
    member_epoch: int = 0
    assignment: dict[str, list[int]] | None = None


@dataclass(slots=True)
class ShareSession:
    """A member's share session on one broker (ShareFetch `ShareSessionEpoch`)."""

    next_epoch: int
    partitions: set[TopicPartition] = field(default_factory=set)


def assign(members: Mapping[str, list[str]], partitions: Mapping[str, int]) -> dict[str, dict]:
    """The simple assignor: each topic's partitions spread over the members subscribed to it.

    With at least as many partitions as members, partition i goes to the i-th member (by member
    id, round robin); with more members than partitions, member j shares partition j mod P with
    the others, so every member gets records (a share group may give one partition to many).
    """
    out: dict[str, dict[str, list[int]]] = {m: {} for m in members}
    for topic, count in sorted(partitions.items()):
        subscribers = sorted(m for m, topics in members.items() if topic in topics)
        if not subscribers or count <= 0:
            continue
        if count >= len(subscribers):
            for index in range(count):
                owner = subscribers[index % len(subscribers)]
                out[owner].setdefault(topic, []).append(index)
        else:
            for position, member in enumerate(subscribers):
                out[member][topic] = [position % count]
    return out


class ShareGroup:
    """One share group: members, the target assignment and the share partitions."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareMember] = {}
        self.partitions: dict[TopicPartition, SharePartition] = {}
        #: the subscribed topics' partition counts the assignment was computed from
        self.topology: dict[str, int] = {}
        #: members or subscriptions changed since the last assignment
        self.dirty = False

    @property
    def state(self) -> ShareGroupState:
        """Empty without members, else Stable (a share group has no reconciliation)."""
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topics(self) -> set[str]:
        """Every topic some member subscribes to."""
        return {t for m in self.members.values() for t in m.subscribed}

    def reassign(self, partitions: Mapping[str, int]) -> None:
        """A new group epoch: recompute the target assignment and give it to every member."""
        self.epoch += 1
        self.dirty = False
        self.topology = dict(partitions)
        target = assign({m.member_id: m.subscribed for m in self.members.values()}, partitions)
        for member in self.members.values():
            # a member takes the new epoch with its own next heartbeat (Kafka's reconciliation)
            member.assignment = target[member.member_id]
        self.assignment_epoch = self.epoch


class ShareCoordinator:
    """Every share group of the cluster, and every broker's share sessions."""

    def __init__(self) -> None:
        self.groups: dict[str, ShareGroup] = {}
        self.sessions: dict[tuple[str, str, int], ShareSession] = {}
        self.changed = trio.Event()
        #: the delivery count limit of each group as last used, for lock expiry by the timer
        self._limits: dict[str, int] = {}

    def group(self, group_id: str, create: bool = False) -> ShareGroup | None:
        """A share group by id (created when asked)."""
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    def wake(self) -> None:
        """Something changed that a waiting ShareFetch or the timer should see."""
        self.changed.set()
        self.changed = trio.Event()

    # -- membership -----------------------------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        member: ShareMember,
        member_epoch: int,
        partitions: Mapping[str, int],
        session_timeout_ms: int,
        max_size: int,
        delivery_limit: int,
    ) -> HeartbeatResult:
        """ShareGroupHeartbeat: join (epoch 0), stay (the current epoch) or leave (-1).

        `member` carries what this request says (its subscription is empty when the request
        left it null); `partitions` maps every topic the group may subscribe to its count.
        """
        group = self.group(group_id, create=member_epoch == 0)
        known = group.members.get(member.member_id) if group is not None else None
        if member_epoch == LEAVE_EPOCH:
            if group is not None and known is not None:
                self.remove(group, member.member_id, delivery_limit)
                self._reassign(group, partitions)
            return HeartbeatResult(ErrorCode.NONE, member_epoch=LEAVE_EPOCH)
        if group is None or (known is None and member_epoch != 0):
            return HeartbeatResult(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member.member_id} is not a member of group {group_id}.",
            )
        now = trio.current_time()
        if known is None:
            if len(group.members) >= max_size:
                return HeartbeatResult(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"share group {group_id} has reached its maximum size {max_size}",
                )
            known = group.members[member.member_id] = member
            log.info("share group %s: %s joins", group_id, member.member_id)
            group.dirty = True
        elif member_epoch not in (0, known.epoch):
            relation = "greater" if member_epoch > known.epoch else "smaller"
            return HeartbeatResult(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a {relation} member epoch ({member_epoch}) than the"
                f" one known by the group coordinator ({known.epoch}). The member must abandon"
                " all its partitions and rejoin.",
            )
        else:
            if member_epoch == 0:
                known.sent = None  # a rejoin gets its assignment again
            if member.subscribed and member.subscribed != known.subscribed:
                known.subscribed = member.subscribed
                group.dirty = True
            if member.rack_id is not None:
                known.rack_id = member.rack_id
        known.deadline = now + session_timeout_ms / 1000
        self._reassign(group, partitions)
        known.epoch = group.assignment_epoch
        assignment = None
        if known.sent != known.assignment:
            assignment = known.sent = {t: list(p) for t, p in known.assignment.items()}
        self.wake()
        return HeartbeatResult(ErrorCode.NONE, member_epoch=known.epoch, assignment=assignment)

    def _reassign(self, group: ShareGroup, partitions: Mapping[str, int]) -> None:
        """A new epoch when the members or their topics' partitions changed."""
        wanted = group.subscribed_topics()
        current = {t: n for t, n in partitions.items() if t in wanted}
        if not group.members:
            if group.dirty:
                group.epoch += 1
                group.assignment_epoch = group.epoch  # the empty target, as Kafka computes it
                group.dirty = False
            group.topology = current
        elif group.dirty or current != group.topology:
            if group.dirty and current != group.topology:
                # Kafka bumps the epoch once for the members and once for the topics' metadata
                group.epoch += 1
            group.reassign(current)
            log.info("share group %s: epoch %d", group.group_id, group.epoch)

    def remove(self, group: ShareGroup, member_id: str, delivery_limit: int) -> None:
        """A member leaves or its session expires: its acquired records are released."""
        if group.members.pop(member_id, None) is None:
            return
        log.info("share group %s: %s removed", group.group_id, member_id)
        group.dirty = True
        for partition in group.partitions.values():
            partition.release_member(member_id, delivery_limit)
        # its share sessions on every broker end with it
        for key in [k for k in self.sessions if k[:2] == (group.group_id, member_id)]:
            del self.sessions[key]
        self.wake()

    # -- share sessions -------------------------------------------------------------------------

    def open_session(self, group_id: str, member_id: str, broker: int) -> ShareSession:
        """ShareSessionEpoch 0: a new session (replacing any the member had on this broker)."""
        session = self.sessions[group_id, member_id, broker] = ShareSession(next_epoch=1)
        return session

    def session(self, group_id: str, member_id: str, broker: int) -> ShareSession | None:
        """The member's session on `broker`, None when it has none."""
        return self.sessions.get((group_id, member_id, broker))

    def close_session(
        self, group_id: str, member_id: str, broker: int, delivery_limit: int
    ) -> None:
        """ShareSessionEpoch -1: the session ends and the records its member holds return."""
        session = self.sessions.pop((group_id, member_id, broker), None)
        group = self.group(group_id)
        if session is None or group is None:
            return
        for key in session.partitions:
            partition = group.partitions.get(key)
            if partition is not None and partition.release_member(member_id, delivery_limit):
                self.wake()

    def remember_limit(self, group_id: str, delivery_limit: int) -> None:
        """The delivery count limit lock expiry applies to this group's records."""
        self._limits[group_id] = delivery_limit

    # -- administration -------------------------------------------------------------------------

    def delete(self, group_id: str) -> int:
        """DeleteGroups for a share group: only an empty one goes, with its share partitions."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        for key in [k for k in self.sessions if k[0] == group_id]:
            del self.sessions[key]
        return ErrorCode.NONE

    # -- time -----------------------------------------------------------------------------------

    def expire(self, now: float) -> float:
        """Remove members whose session ran out and release expired locks; the next deadline."""
        upcoming = now + 1.0
        for group in list(self.groups.values()):
            limit = self._limits.get(group.group_id, DEFAULT_DELIVERY_LIMIT)
            for member in list(group.members.values()):
                if member.deadline <= now:
                    log.info("share group %s: %s expired", group.group_id, member.member_id)
                    self.remove(group, member.member_id, limit)
                else:
                    upcoming = min(upcoming, member.deadline)
            for partition in group.partitions.values():
                if partition.expire_locks(now, limit):
                    self.wake()
                deadline = partition.next_deadline()
                if deadline is not None:
                    upcoming = min(upcoming, deadline)
        return upcoming

    async def run_timers(self) -> None:
        """Expire member sessions and acquisition locks, sleeping until the next deadline."""
        while True:
            upcoming = self.expire(trio.current_time())
            with trio.move_on_at(upcoming):
                await self.changed.wait()
