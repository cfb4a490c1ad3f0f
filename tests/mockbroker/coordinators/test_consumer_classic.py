"""The online migration: a classic group upgraded by a consumer-protocol member, classic members
inside the consumer group, and the downgrade when the last consumer-protocol member leaves."""

from __future__ import annotations

import struct
import uuid

import pytest
import trio

from kipwire.codec import ErrorCode, message
from kipwire.mockbroker.coordinators import consumer_classic
from kipwire.mockbroker.coordinators.consumer_groups import (
    ConsumerGroupCoordinator,
    GroupSettings,
    Heartbeat,
)
from kipwire.mockbroker.coordinators.groups import GroupCoordinator, GroupState, Member

T = uuid.UUID(int=9)
TOPICS = {"t": (T, 4)}
SETTINGS = GroupSettings(heartbeat_interval_ms=500, session_timeout_ms=10_000)


def _subscription(owned: dict[str, list[int]] | None = None) -> bytes:
    body = {
        "topics": ["t"],
        "owned_partitions": [{"topic": t, "partitions": ps} for t, ps in (owned or {}).items()],
    }
    return struct.pack(">h", 1) + message("ConsumerProtocolSubscription", 1).build(body)


def _classic_group(classic: GroupCoordinator, now: float) -> list[str]:
    """Two classic members of group g, stable at generation 1 with two partitions each (as
    JoinGroup and SyncGroup leave them)."""
    group = classic.group("g", create=True)
    group.protocol_type, group.protocol, group.generation = "consumer", "range", 1
    group.state, group.leader = GroupState.STABLE, "a"
    for member, parts in (("a", {0, 1}), ("b", {2, 3})):
        group.members[member] = Member(
            member,
            None,
            "c",
            "/127.0.0.1",
            10_000,
            5_000,
            [("range", _subscription())],
            assignment=consumer_classic.encode_assignment({T: frozenset(parts)}, {T: "t"}, 1),
            deadline=now + 10,
        )
    return ["a", "b"]


def test_assignments_round_trip_through_the_consumer_protocol():
    data = consumer_classic.encode_assignment({T: frozenset({3, 1})}, {T: "t"}, 3)
    assert struct.unpack_from(">h", data) == (3,)
    assert consumer_classic.decode_assignment(data) == {"t": frozenset({1, 3})}
    assert consumer_classic.decode_assignment(b"\x00") == {}
    parsed = consumer_classic.decode_subscription(_subscription({"t": [2]}))
    assert (parsed.version, parsed.topics, parsed.owned) == (1, ("t",), {"t": frozenset({2})})


@pytest.mark.trio
async def test_a_consumer_member_upgrades_a_classic_group_and_classic_members_follow():
    classic = GroupCoordinator()
    a, b = _classic_group(classic, trio.current_time())
    coordinator = ConsumerGroupCoordinator(classic)
    joined = coordinator.heartbeat(
        Heartbeat(
            "g", "new", 0, owned={}, rebalance_timeout_ms=5000, subscribed_topic_names=("t",)
        ),
        TOPICS,
        SETTINGS,
        trio.current_time(),
    )
    assert joined.error == ErrorCode.NONE
    assert classic.group("g") is None
    group = coordinator.group("g")
    assert group.members[a].assigned == {T: frozenset({0, 1})}
    assert group.members[a].classic is not None and group.members[a].epoch == 1
    assert joined.member_epoch == group.epoch == 2 and joined.assignment == {}  # not yet free

    # a classic member learns of the rebalance from its heartbeat, and rejoins (eager: owning
    # nothing), giving up what the new member is due
    assert consumer_classic.heartbeat(group, a, 1, trio.current_time()) == (
        ErrorCode.REBALANCE_IN_PROGRESS
    )
    protocols = [("range", _subscription())]
    rejoined = consumer_classic.join(
        coordinator,
        group,
        a,
        None,
        "c",
        "consumer",
        protocols,
        10_000,
        5_000,
        True,
        TOPICS,
        SETTINGS,
        trio.current_time(),
    )
    assert (rejoined.error, rejoined.generation, rejoined.leader) == (ErrorCode.NONE, 2, "")
    code, assignment, protocol = consumer_classic.sync(group, a, 2)
    assert (code, protocol) == (ErrorCode.NONE, "range")
    kept = consumer_classic.decode_assignment(assignment)["t"]
    assert kept == group.target[a][T] and len(kept) == 1
    # the partition a gave up is now free for the member that upgraded the group
    freed = coordinator.heartbeat(Heartbeat("g", "new", 2, owned={}), TOPICS, SETTINGS, 0.0)
    assert freed.assignment == group.target["new"] and freed.assignment[T] == {1}
    assert consumer_classic.sync(group, a, 1)[0] == ErrorCode.ILLEGAL_GENERATION
    assert group.check_commit(a, 1, 8) == ErrorCode.ILLEGAL_GENERATION
    assert group.check_commit(a, 2, 8) == ErrorCode.NONE


@pytest.mark.trio
async def test_the_last_consumer_member_leaving_makes_it_classic_again():
    classic = GroupCoordinator()
    a, b = _classic_group(classic, trio.current_time())
    coordinator = ConsumerGroupCoordinator(classic)
    now = trio.current_time()
    coordinator.heartbeat(
        Heartbeat(
            "g", "new", 0, owned={}, rebalance_timeout_ms=5000, subscribed_topic_names=("t",)
        ),
        TOPICS,
        SETTINGS,
        now,
    )
    epoch = coordinator.group("g").epoch
    left = coordinator.heartbeat(Heartbeat("g", "new", -1), TOPICS, SETTINGS, now)
    assert left.member_epoch == -1
    assert coordinator.group("g") is None
    back = classic.group("g")
    assert back.state is GroupState.PREPARING_REBALANCE and back.generation == epoch
    assert sorted(back.members) == sorted([a, b])
    assert consumer_classic.decode_assignment(back.members[b].assignment) == {
        "t": frozenset({2, 3})
    }
    assert classic.heartbeat("g", epoch, a) == ErrorCode.REBALANCE_IN_PROGRESS


def test_only_groups_of_the_consumer_protocol_may_upgrade():
    classic = GroupCoordinator()
    group = classic.group("g", create=True)
    group.protocol_type = "connect"
    assert not consumer_classic.can_upgrade(group, 10)
    group.protocol_type = "consumer"
    assert consumer_classic.can_upgrade(group, 10)
