"""The online migration between the classic protocol and KIP-848 consumer groups.

Kafka 4 lets a group change protocol one member at a time (`group.consumer.migration.policy`,
bidirectional by default):

- **Upgrade.** A ConsumerGroupHeartbeat joining a stable classic group of the `consumer`
  protocol type turns it into a consumer group (`upgrade`): each classic member keeps its
  subscription and assignment (decoded from its ConsumerProtocolSubscription and
  ConsumerProtocolAssignment), at the group's generation as its member epoch.
- **Classic members inside a consumer group** keep speaking JoinGroup, SyncGroup, Heartbeat and
  LeaveGroup (`join`, `sync`, `heartbeat`, `leave`): a JoinGroup is a heartbeat that reconciles
  (the owned partitions come from the subscription's OwnedPartitions, empty for an eager
  assignor), SyncGroup hands back the member's assignment in the consumer protocol's bytes, and
  a Heartbeat answers REBALANCE_IN_PROGRESS once the group epoch passed the member's, as Kafka
  does, or while partitions it is due are still held by others.
- **Downgrade.** When the last consumer-protocol member leaves, the group becomes a classic
  group again (`downgrade`), in a rebalance every member rejoins.

The mock does not replace a static classic member by a new incarnation inside a consumer group,
and has no sync timeout; everything else follows Kafka's GroupMetadataManager.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from kipwire.codec import DecodeError, ErrorCode, message

from .assignors import Assignment
from .consumer_group import (
    ClassicMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Topics,
)
from .groups import Group, GroupState, JoinResult, Member

#: The classic protocol type of Kafka consumers.
PROTOCOL_TYPE = "consumer"
#: The newest ConsumerProtocolSubscription / ConsumerProtocolAssignment version the codec has.
LATEST_VERSION = 3


class Reconciler(Protocol):
    """What the migration needs of the consumer-group coordinator."""

    def update(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        before: tuple | None,
        owned: Assignment | None,
        topics: Topics,
        settings: object,
        now: float,
    ) -> None: ...

    def remove(self, group: ConsumerGroup, member_id: str, why: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Subscription:
    """A decoded ConsumerProtocolSubscription."""

    version: int
    topics: tuple[str, ...]
    owned: dict[str, frozenset[int]]
    rack_id: str | None


def decode_subscription(metadata: bytes) -> Subscription:
    """A classic member's subscription (a version, then the struct); empty when unreadable."""
    if len(metadata) < 2:
        return Subscription(0, (), {}, None)
    (version,) = struct.unpack_from(">h", metadata)
    version = min(max(version, 0), LATEST_VERSION)
    try:
        parsed = message("ConsumerProtocolSubscription", version).parse(metadata[2:])
    except DecodeError:
        return Subscription(version, (), {}, None)
    owned = {p["topic"]: frozenset(p["partitions"]) for p in parsed.get("owned_partitions") or []}
    return Subscription(version, tuple(parsed["topics"]), owned, parsed.get("rack_id"))


def decode_assignment(data: bytes) -> dict[str, frozenset[int]]:
    """A ConsumerProtocolAssignment as topic name -> partitions; empty when unreadable."""
    if len(data) < 2:
        return {}
    (version,) = struct.unpack_from(">h", data)
    try:
        parsed = message("ConsumerProtocolAssignment", min(max(version, 0), LATEST_VERSION)).parse(
            data[2:]
        )
    except DecodeError:
        return {}
    return {p["topic"]: frozenset(p["partitions"]) for p in parsed["assigned_partitions"]}


def encode_assignment(
    assignment: Assignment, names: Mapping[uuid.UUID, str], version: int
) -> bytes:
    """A member's partitions as the ConsumerProtocolAssignment its classic client reads."""
    body = {
        "assigned_partitions": [
            {"topic": names[topic], "partitions": sorted(parts)}
            for topic, parts in sorted(assignment.items(), key=lambda item: names.get(item[0], ""))
            if topic in names
        ]
    }
    version = min(max(version, 0), LATEST_VERSION)
    return struct.pack(">h", version) + message("ConsumerProtocolAssignment", version).build(body)


def _names(group: ConsumerGroup) -> dict[uuid.UUID, str]:
    return {info[0]: name for name, info in group.subscription.items()}


# -- converting a group ---------------------------------------------------------------------


def can_upgrade(classic: Group, max_size: int) -> bool:
    """Whether a consumer-protocol member may turn this classic group into a consumer group:
    its members use the consumer protocol and fit in a consumer group."""
    return classic.protocol_type == PROTOCOL_TYPE and len(classic.members) <= max_size


def upgrade(classic: Group, topics: Topics, now: float) -> ConsumerGroup:
    """The consumer group a classic group becomes, members, assignments and offsets kept; a
    rebalance under way ends with REBALANCE_IN_PROGRESS for those waiting in it."""
    for waiting in classic.members.values():
        if waiting.joining is not None:
            waiting.join_result = JoinResult(
                ErrorCode.REBALANCE_IN_PROGRESS, member_id=waiting.member_id
            )
            waiting.joining.set()
            waiting.joining = None
    classic.state = GroupState.DEAD
    classic.synced.set()  # a SyncGroup waiting for its leader now finds the group gone
    group = ConsumerGroup(classic.group_id, classic.offsets)
    group.epoch = group.assignment_epoch = classic.generation
    for old in classic.members.values():
        metadata = dict(old.protocols).get(classic.protocol or "", b"")
        subscription = decode_subscription(metadata)
        assigned = {
            topics[name][0]: parts
            for name, parts in decode_assignment(old.assignment).items()
            if name in topics and parts
        }
        group.members[old.member_id] = ConsumerMember(
            old.member_id,
            instance_id=old.instance_id,
            rack_id=subscription.rack_id,
            client_id=old.client_id,
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            subscribed_names=tuple(sorted(subscription.topics)),
            epoch=classic.generation,
            assigned=assigned,
            session_deadline=old.deadline or now + old.session_timeout_ms / 1000,
            classic=ClassicMetadata(old.session_timeout_ms, old.protocols, subscription.version),
        )
        group.members[old.member_id].settle_assignment_epochs()
        group.target[old.member_id] = assigned
    names = set().union(*(m.subscribed_names for m in group.members.values()))
    group.subscription = {name: topics[name] for name in sorted(names) if name in topics}
    return group


def downgrade(group: ConsumerGroup) -> Group:
    """The classic group a consumer group of classic members only becomes: every member must
    rejoin (a rebalance starts at once), its current partitions as its last assignment."""
    names = _names(group)
    classic = Group(group.group_id)
    classic.offsets = group.offsets
    classic.protocol_type = PROTOCOL_TYPE
    classic.generation = group.epoch
    for member in group.members.values():
        assert member.classic is not None
        classic.members[member.member_id] = Member(
            member.member_id,
            member.instance_id,
            member.client_id,
            member.client_host,
            member.classic.session_timeout_ms,
            member.rebalance_timeout_ms,
            member.classic.protocols,
            assignment=encode_assignment(member.assigned, names, member.classic.version),
            deadline=member.session_deadline,
        )
    first = next(iter(classic.members.values()))
    common = [name for name, _ in first.protocols if _supported_by(classic.members, name)]
    classic.protocol = common[0] if common else None
    classic.leader = first.member_id
    classic.state = GroupState.STABLE
    classic.prepare_rebalance()
    return classic


def _supported_by(members: Mapping[str, Member], protocol: str) -> bool:
    return all(protocol in dict(m.protocols) for m in members.values())


# -- classic members inside a consumer group ------------------------------------------------


def join(
    coordinator: Reconciler,
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    client_id: str,
    protocol_type: str,
    protocols: list[tuple[str, bytes]],
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    require_known_member: bool,
    topics: Topics,
    settings: object,
    now: float,
) -> JoinResult:
    """JoinGroup into a consumer group: the member's subscription in, its epoch back as the
    generation (no leader: the coordinator assigns)."""
    offered = {name for name, _ in protocols}
    classic_members = [m.classic for m in group.members.values() if m.classic is not None]
    if (
        protocol_type != PROTOCOL_TYPE
        or not protocols
        or not all(offered & {name for name, _ in c.protocols} for c in classic_members)
    ):
        return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if not member_id:
        member_id = f"{client_id}-{uuid.uuid4()}"
        if require_known_member:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
    member = group.members.get(member_id)
    if member is not None and member.classic is None:
        return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)
    before = member.subscription() if member is not None else None
    member = member or ConsumerMember(member_id)
    subscription = decode_subscription(protocols[0][1])
    member.instance_id = instance_id
    member.rack_id = subscription.rack_id
    member.client_id = client_id
    member.rebalance_timeout_ms = rebalance_timeout_ms
    member.subscribed_names = tuple(sorted(subscription.topics))
    member.classic = ClassicMetadata(session_timeout_ms, protocols, subscription.version)
    owned = {topics[t][0]: parts for t, parts in subscription.owned.items() if t in topics}
    coordinator.update(group, member, before, owned, topics, settings, now)
    return JoinResult(ErrorCode.NONE, member.epoch, protocols[0][0], "", member_id, [])


def _classic_member(group: ConsumerGroup, member_id: str) -> ConsumerMember | None:
    member = group.members.get(member_id)
    return member if member is not None and member.classic is not None else None


def sync(group: ConsumerGroup, member_id: str, generation: int) -> tuple[int, bytes, str | None]:
    """SyncGroup in a consumer group: the member's assigned partitions, in its protocol."""
    member = _classic_member(group, member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID, b"", None
    assert member.classic is not None
    if generation != member.epoch:
        return ErrorCode.ILLEGAL_GENERATION, b"", None
    if _behind(group, member):
        return ErrorCode.REBALANCE_IN_PROGRESS, b"", None
    assignment = encode_assignment(member.assigned, _names(group), member.classic.version)
    return ErrorCode.NONE, assignment, member.classic.protocols[0][0]


def heartbeat(group: ConsumerGroup, member_id: str, generation: int, now: float) -> int:
    """Heartbeat in a consumer group: REBALANCE_IN_PROGRESS when the member must rejoin."""
    member = _classic_member(group, member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    assert member.classic is not None
    if generation != member.epoch:
        return ErrorCode.ILLEGAL_GENERATION
    member.session_deadline = now + member.classic.session_timeout_ms / 1000
    # partitions it is due were still held by others when it joined: a rejoin picks them up
    waiting = member.state is MemberState.UNRELEASED_PARTITIONS
    return ErrorCode.REBALANCE_IN_PROGRESS if _behind(group, member) or waiting else ErrorCode.NONE


def _behind(group: ConsumerGroup, member: ConsumerMember) -> bool:
    # the group moved on, unless the member is still giving partitions up (Kafka's rule)
    return group.epoch > member.epoch and member.state is not MemberState.UNREVOKED_PARTITIONS


def leave(coordinator: Reconciler, group: ConsumerGroup, member_id: str) -> int:
    """LeaveGroup of a classic member of a consumer group."""
    if _classic_member(group, member_id) is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    coordinator.remove(group, member_id, "left (classic protocol)")
    return ErrorCode.NONE
