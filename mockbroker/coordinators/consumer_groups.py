"""KIP-848 consumer groups: the coordinator behind ConsumerGroupHeartbeat (68); a group's state
is `consumer_group.py`, the assignors `assignors.py`.

Everything that moves a consumer group lives here, as Kafka's GroupMetadataManager and
CurrentAssignmentBuilder do it:

- **Epochs.** A change of any member's subscription (or of the subscribed topics' partitions, or
  a member joining or leaving) bumps the *group epoch*; the next heartbeat then computes a new
  *target assignment* with the server-side assignor (`assignors.py`) at that epoch. Each member
  walks to its target at its own pace and takes the target's epoch as its *member epoch*.
- **Reconciliation.** A member first gives up what its target no longer holds (state
  UNREVOKED_PARTITIONS, its epoch unchanged, until a heartbeat's owned partitions leave them
  out, or its rebalance timeout removes it). A partition is never handed to a member while
  another member still owns it (UNRELEASED_PARTITIONS until it is free).
- **Membership.** Epoch 0 joins; -1 leaves; -2 is a static member (`group.instance.id`) leaving
  for a while: it keeps its assignment until its session times out or a member with the same
  instance id takes over its place, epoch and partitions. A request with a stale or future epoch
  is FENCED_MEMBER_EPOCH, except the previous epoch with owned partitions within the assignment
  (the response that bumped it may have been lost).
- **Regex subscriptions** (`SubscribedTopicRegex`) are resolved at each heartbeat against the
  topics: a Python `re.fullmatch` where Kafka uses RE2J. Python accepts more (backreferences,
  lookaround, atomic groups), which Kafka refuses with INVALID_REGULAR_EXPRESSION; RE2J's `\\p{..}`
  classes are refused here.

An empty classic group turns into a consumer group at a member's first heartbeat, keeping its
committed offsets (Kafka does the same); a classic group with members is GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass

import trio

from kipwire.codec import ErrorCode

from .assignors import ASSIGNORS, Assignment, AssignmentSpec
from .consumer_classic import can_upgrade, downgrade, upgrade
from .consumer_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Offsets,
    Topics,
    overlaps,
    within,
)
from .groups import GroupCoordinator

log = logging.getLogger("kipwire.mockbroker.consumer_groups")


class GroupError(Exception):
    """A heartbeat refused with a Kafka error code and its message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The coordinator's settings for one heartbeat (broker configs, read from the image)."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    assignors: tuple[str, ...] = ("uniform", "range")
    max_size: int = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A ConsumerGroupHeartbeat request; None means "unchanged since the last heartbeat"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = "/127.0.0.1"
    #: version 0 lets the coordinator pick the member id (KIP-1082 made it the client's in v1)
    member_id_required: bool = True


@dataclass(slots=True)
class HeartbeatResult:
    """The answer to a heartbeat; `assignment` is None when it need not be sent."""

    error: int = ErrorCode.NONE
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class ConsumerGroupCoordinator:
    """Every consumer group of the cluster, beside the classic groups it shares ids with."""

    def __init__(self, classic: GroupCoordinator) -> None:
        self.classic = classic
        self.groups: dict[str, ConsumerGroup] = {}
        self._changed = trio.Event()

    def group(self, group_id: str) -> ConsumerGroup | None:
        """A consumer group by id."""
        return self.groups.get(group_id)

    def offsets_for(self, group_id: str) -> Offsets:
        """Where a group's offsets are committed, whichever kind the group is."""
        group = self.groups.get(group_id)
        if group is not None:
            return group.offsets
        return self.classic.offsets_for(group_id)

    def delete(self, group_id: str) -> int:
        """DeleteGroups of a consumer group: NON_EMPTY_GROUP while it has members."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        return ErrorCode.NONE

    def adopt_classic(self, group_id: str) -> bool:
        """A JoinGroup for an empty consumer group turns it back into a classic one (offsets
        kept); False when a non-empty consumer group holds the id."""
        group = self.groups.get(group_id)
        if group is None:
            return True
        if group.members:
            return False
        del self.groups[group_id]
        self.classic.offsets_for(group_id).update(group.offsets)
        return True

    # -- the heartbeat ------------------------------------------------------------------------

    def heartbeat(
        self, request: Heartbeat, topics: Topics, settings: GroupSettings, now: float
    ) -> HeartbeatResult:
        """ConsumerGroupHeartbeat: join, leave, or heartbeat and reconcile."""
        try:
            _validate(request, settings)
            if request.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
                return self._leave(request)
            return self._heartbeat(request, topics, settings, now)
        except GroupError as error:
            return HeartbeatResult(error.code, str(error))

    def _leave(self, request: Heartbeat) -> HeartbeatResult:
        group = self._existing(request.group_id)
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise GroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member."
                )
        else:
            member = group.static_member(request.instance_id)
            if member is None:
                raise GroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown."
                )
            _check_instance(member, request)
            if request.member_epoch == LEAVE_STATIC_EPOCH:
                log.info("group %s: static member %s leaves for now", group.group_id, member)
                member.previous_epoch, member.epoch = member.epoch, LEAVE_STATIC_EPOCH
                self._wake()
                return HeartbeatResult(member_id=member.member_id, member_epoch=LEAVE_STATIC_EPOCH)
        self.remove(group, member.member_id, "left")
        return HeartbeatResult(member_id=member.member_id, member_epoch=request.member_epoch)

    def _heartbeat(
        self, request: Heartbeat, topics: Topics, settings: GroupSettings, now: float
    ) -> HeartbeatResult:
        joining = request.member_epoch == JOIN_EPOCH
        group = (
            self._for_join(request.group_id, topics, settings, now)
            if joining
            else self._existing(request.group_id)
        )
        member_id = request.member_id or str(uuid.uuid4())
        if joining and len(group.members) >= settings.max_size and member_id not in group.members:
            raise GroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of "
                f"{settings.max_size} members.",
            )
        member, before = self._member(group, request, member_id)
        _update(member, request)
        assigned_before = dict(member.assigned)
        self.update(group, member, before, request.owned, topics, settings, now)
        full = joining or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.owned is not None
        )
        return HeartbeatResult(
            member_id=member.member_id,
            member_epoch=member.epoch,
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            assignment=member.assigned if full or member.assigned != assigned_before else None,
        )

    def update(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        before: tuple | None,
        owned: Assignment | None,
        topics: Topics,
        settings: GroupSettings,
        now: float,
    ) -> None:
        """A member's request is in: bump the group epoch if its subscription (or the topics it
        names) changed, compute the target if it is behind, reconcile, restart its session."""
        bump = group.epoch == 0 or before is None or before != member.subscription()
        subscription = {
            name: topics[name]
            for name in sorted(
                set().union(
                    *(m.topics(topics) for m in group.members.values() if m is not member),
                    member.topics(topics),
                )
            )
        }
        group.members[member.member_id] = member
        if subscription != group.subscription:
            group.subscription = subscription
            bump = True
        if bump:
            group.epoch += 1
            log.info("group %s: epoch %d", group.group_id, group.epoch)
        if group.epoch > group.assignment_epoch:
            self._assign(group, topics, settings)
        self._reconcile(group, member, owned, now)
        session_ms = member.classic.session_timeout_ms if member.classic else None
        member.session_deadline = now + (session_ms or settings.session_timeout_ms) / 1000
        self._wake()

    def _existing(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self.classic.group(group_id) is not None:
            raise GroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")

    def _for_join(
        self, group_id: str, topics: Topics, settings: GroupSettings, now: float
    ) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = self.classic.group(group_id)
        if classic is not None and classic.members:
            if not can_upgrade(classic, settings.max_size):
                raise GroupError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
                )
            log.info("group %s: a consumer-protocol member upgrades the classic group", group_id)
            del self.classic.groups[group_id]
            group = self.groups[group_id] = upgrade(classic, topics, now)
            return group
        offsets = None
        if classic is not None:
            log.info("group %s: the empty classic group becomes a consumer group", group_id)
            offsets = self.classic.groups.pop(group_id).offsets
        group = self.groups[group_id] = ConsumerGroup(group_id, offsets)
        return group

    def _member(
        self, group: ConsumerGroup, request: Heartbeat, member_id: str
    ) -> tuple[ConsumerMember, tuple | None]:
        """The member the request speaks for (new, rejoining, or a static replacement) and its
        subscription before this request (None for a member new to the group)."""
        static = group.static_member(request.instance_id)
        if request.member_epoch != JOIN_EPOCH:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member."
                )
            if static is not None:
                _check_instance(static, request)
            _check_epoch(member, request)
            return member, member.subscription()
        if static is None:
            member = group.members.get(member_id)
            if member is None:
                return ConsumerMember(member_id), None
            return member, member.subscription()
        if static.epoch != LEAVE_STATIC_EPOCH:
            raise GroupError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {request.instance_id} cannot join "
                f"the group because the instance id is owned by {static.member_id} member.",
            )
        # the new incarnation takes the old one's place: its epoch and its partitions
        del group.members[static.member_id]
        target = group.target.pop(static.member_id, {})
        group.target[member_id] = target
        before = static.subscription()
        static.member_id = member_id
        static.epoch = static.previous_epoch = 0
        log.info("group %s: %s replaces static member %s", group.group_id, member_id, static)
        return static, before

    def _assign(self, group: ConsumerGroup, topics: Topics, settings: GroupSettings) -> None:
        name = group.preferred_assignor(settings.assignors[0])
        ids = {info[0]: (topic, info[1]) for topic, info in group.subscription.items()}
        spec = AssignmentSpec(
            members={
                m.member_id: frozenset(topics[t][0] for t in m.topics(topics) if t in topics)
                for m in group.members.values()
            },
            topics=ids,
            previous=group.target,
        )
        group.target = ASSIGNORS[name](spec)
        group.assignment_epoch = group.epoch

    # -- reconciliation (Kafka's CurrentAssignmentBuilder) -----------------------------------

    def _reconcile(
        self, group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None, now: float
    ) -> None:
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if owned is None or overlaps(owned, member.revoking):
                return  # still revoking
            member.revoking = {}
            member.settle_assignment_epochs()
            member.state = MemberState.STABLE
            member.revoke_deadline = 0.0
        elif member.state is MemberState.STABLE and member.epoch == group.assignment_epoch:
            return
        self._next(group, member, owned, now)

    def _next(
        self, group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None, now: float
    ) -> None:
        target = group.target.get(member.member_id, {})
        others = group.owners(member.member_id)
        keep: Assignment = {}
        grown: Assignment = {}
        revoke: Assignment = {}
        unreleased = False
        for topic in set(target) | set(member.assigned):
            want = target.get(topic, frozenset())
            have = member.assigned.get(topic, frozenset())
            free = frozenset(p for p in want - have if (topic, p) not in others)
            unreleased |= free != want - have
            if have & want:
                keep[topic] = have & want
            if (have & want) | free:
                grown[topic] = (have & want) | free
            if have - want:
                revoke[topic] = have - want
        if revoke and (owned is None or overlaps(owned, revoke)):
            member.state = MemberState.UNREVOKED_PARTITIONS
            member.assigned, member.revoking = keep, revoke
            member.settle_assignment_epochs()
            member.revoke_deadline = now + max(member.rebalance_timeout_ms, 0) / 1000
            return
        if member.epoch != group.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, group.assignment_epoch
        member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        member.assigned, member.revoking = grown, {}
        member.settle_assignment_epochs()

    # -- removal and timers ------------------------------------------------------------------

    def remove(self, group: ConsumerGroup, member_id: str, why: str) -> None:
        """A member leaves or times out: the group epoch moves on (back to classic when only
        classic members remain)."""
        log.info("group %s: member %s %s", group.group_id, member_id, why)
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        if group.members and all(m.classic is not None for m in group.members.values()):
            # the last consumer-protocol member is gone: the group goes back to the classic
            # protocol at its epoch as the generation, whose members rejoin (Kafka's online
            # downgrade; commits at that generation still count meanwhile)
            log.info("group %s: only classic members remain: a classic group", group.group_id)
            del self.groups[group.group_id]
            self.classic.groups[group.group_id] = downgrade(group)
        else:
            group.epoch += 1
            if not group.members:
                group.subscription = {}
        self._wake()

    def expire(self, now: float) -> float:
        """Remove members past their session or revocation deadline; the next deadline."""
        upcoming = now + 1.0
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                if member.session_deadline and member.session_deadline <= now:
                    self.remove(group, member.member_id, "timed out (session)")
                elif member.revoke_deadline and member.revoke_deadline <= now:
                    self.remove(group, member.member_id, "timed out revoking (rebalance)")
                else:
                    for deadline in (member.session_deadline, member.revoke_deadline):
                        if deadline:
                            upcoming = min(upcoming, deadline)
        return upcoming

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def run_timers(self) -> None:
        """Expire sessions and revocations, sleeping until the next deadline or a change."""
        while True:
            upcoming = self.expire(trio.current_time())
            with trio.move_on_at(upcoming):
                await self._changed.wait()


def _validate(request: Heartbeat, settings: GroupSettings) -> None:
    """Kafka's request checks, in its order, with its messages."""

    def invalid(message: str) -> GroupError:
        return GroupError(ErrorCode.INVALID_REQUEST, message)

    if not request.group_id:
        raise invalid("GroupId can't be empty.")
    if request.instance_id == "":
        raise invalid("InstanceId can't be empty.")
    if request.rack_id == "":
        raise invalid("RackId can't be empty.")
    if not request.member_id and (
        request.member_id_required or request.member_epoch not in (JOIN_EPOCH,)
    ):
        raise invalid("MemberId can't be empty.")
    if request.member_epoch == JOIN_EPOCH:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or any(request.owned.values()):
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise invalid(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
            )
    elif request.member_epoch == LEAVE_STATIC_EPOCH and request.instance_id is None:
        raise invalid("InstanceId can't be null.")
    elif request.member_epoch < LEAVE_STATIC_EPOCH:
        raise invalid(f"MemberEpoch is invalid: {request.member_epoch}.")
    if request.subscribed_topic_regex is not None:
        try:
            re.compile(request.subscribed_topic_regex)
        except re.error as error:
            raise GroupError(
                ErrorCode.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{request.subscribed_topic_regex}` is not a valid "
                f"regular expression: {error}.",
            ) from None
    if request.server_assignor is not None and request.server_assignor not in settings.assignors:
        raise GroupError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(settings.assignors)}.",
        )


def _check_instance(member: ConsumerMember, request: Heartbeat) -> None:
    if member.member_id != request.member_id:
        raise GroupError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {request.member_id} with instance id {request.instance_id} was "
            f"fenced by member {member.member_id}.",
        )


def _check_epoch(member: ConsumerMember, request: Heartbeat) -> None:
    """A future epoch, or a past one that is not the previous epoch with owned partitions
    inside the assignment, fences the member (it must give everything up and rejoin)."""
    received = request.member_epoch
    if received > member.epoch:
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.epoch}). The member must abandon all its "
            f"partitions and rejoin.",
        )
    if received < member.epoch and (
        received != member.previous_epoch or not within(request.owned, member.assigned)
    ):
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.epoch}). The member must abandon all its "
            f"partitions and rejoin.",
        )


def _update(member: ConsumerMember, request: Heartbeat) -> None:
    """Fields the request sets (None leaves them as they were)."""
    if request.instance_id is not None:
        member.instance_id = request.instance_id
    if request.rack_id is not None:
        member.rack_id = request.rack_id
    if request.rebalance_timeout_ms != -1:
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
    if request.server_assignor is not None:
        member.server_assignor = request.server_assignor
    if request.subscribed_topic_names is not None:
        member.subscribed_names = tuple(sorted(request.subscribed_topic_names))
    if request.subscribed_topic_regex is not None:
        member.subscribed_regex = request.subscribed_topic_regex or None
    member.client_id = request.client_id
    member.client_host = request.client_host
