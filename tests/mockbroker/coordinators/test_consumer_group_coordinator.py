"""KIP-848 consumer groups, sans I/O: epochs, reconciliation, static members, regexes, timeouts,
and the member-epoch checks of offset commits and fetches."""

from __future__ import annotations

import uuid

import pytest

from kipwire.codec import ErrorCode
from kipwire.mockbroker.coordinators.consumer_group import (
    ConsumerGroupState,
    MemberState,
)
from kipwire.mockbroker.coordinators.consumer_groups import (
    ConsumerGroupCoordinator,
    GroupSettings,
    Heartbeat,
)
from kipwire.mockbroker.coordinators.groups import CommittedOffset, GroupCoordinator

T = uuid.UUID(int=7)
TOPICS = {"t": (T, 4)}
SETTINGS = GroupSettings(heartbeat_interval_ms=500, session_timeout_ms=10_000)


def _coordinator() -> ConsumerGroupCoordinator:
    return ConsumerGroupCoordinator(GroupCoordinator())


def _beat(coordinator, member, epoch, owned=None, now=0.0, topics=TOPICS, **fields):
    request = Heartbeat("g", member, epoch, owned=owned, **fields)
    return coordinator.heartbeat(request, topics, SETTINGS, now)


def _join(coordinator, member, now=0.0, topics=TOPICS, **fields):
    fields.setdefault("subscribed_topic_names", ("t",))
    return _beat(
        coordinator,
        member,
        0,
        owned={},
        now=now,
        topics=topics,
        rebalance_timeout_ms=5000,
        **fields,
    )


def _parts(result) -> set[int]:
    return set(result.assignment.get(T, ())) if result.assignment is not None else set()


def test_a_first_member_gets_every_partition_at_epoch_one():
    coordinator = _coordinator()
    result = _join(coordinator, "a")
    assert (result.error, result.member_epoch, result.heartbeat_interval_ms) == (0, 1, 500)
    assert _parts(result) == {0, 1, 2, 3}
    assert coordinator.group("g").state is ConsumerGroupState.STABLE


def test_partitions_are_revoked_before_another_member_gets_them():
    coordinator = _coordinator()
    _join(coordinator, "a")
    joined = _join(coordinator, "b")
    # b is at the new epoch, but its partitions are still a's: it gets nothing yet
    assert (joined.member_epoch, _parts(joined)) == (2, set())
    group = coordinator.group("g")
    assert group.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    assert group.state is ConsumerGroupState.RECONCILING

    revoking = _beat(coordinator, "a", 1, owned={T: frozenset({0, 1, 2, 3})})
    kept = _parts(revoking)
    assert revoking.member_epoch == 1 and len(kept) == 2  # a stays at epoch 1 until it revokes
    assert group.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert _beat(coordinator, "b", 2, owned={}).assignment is None  # still nothing free

    acked = _beat(coordinator, "a", 1, owned={T: frozenset(kept)})
    assert (acked.member_epoch, group.members["a"].state) == (2, MemberState.STABLE)
    freed = _beat(coordinator, "b", 2, owned={})
    assert _parts(freed) == {0, 1, 2, 3} - kept
    assert group.state is ConsumerGroupState.STABLE


def test_epochs_ahead_or_behind_fence_the_member():
    coordinator = _coordinator()
    _join(coordinator, "a")
    _join(coordinator, "b")
    ahead = _beat(coordinator, "b", 9, owned={})
    assert ahead.error == ErrorCode.FENCED_MEMBER_EPOCH
    # a at epoch 2 after revoking; epoch 1 (its previous) with owned partitions inside its
    # assignment is a lost response, accepted; with others it is fenced
    kept = _parts(_beat(coordinator, "a", 1, owned={T: frozenset({0, 1, 2, 3})}))
    _beat(coordinator, "a", 1, owned={T: frozenset(kept)})
    assert _beat(coordinator, "a", 1, owned={T: frozenset(kept)}).error == ErrorCode.NONE
    stale = _beat(coordinator, "a", 1, owned={T: frozenset({0, 1, 2, 3})})
    assert stale.error == ErrorCode.FENCED_MEMBER_EPOCH


def test_a_leaving_member_hands_its_partitions_over():
    coordinator = _coordinator()
    _join(coordinator, "a")
    _join(coordinator, "b")
    kept = _parts(_beat(coordinator, "a", 1, owned={T: frozenset({0, 1, 2, 3})}))
    _beat(coordinator, "a", 1, owned={T: frozenset(kept)})
    _beat(coordinator, "b", 2, owned={})
    left = _beat(coordinator, "b", -1)
    assert (left.error, left.member_epoch) == (0, -1)
    group = coordinator.group("g")
    assert list(group.members) == ["a"] and group.epoch == 3
    back = _beat(coordinator, "a", 2, owned={T: frozenset(kept)})
    assert (back.member_epoch, _parts(back)) == (3, {0, 1, 2, 3})


def test_a_static_member_keeps_its_place_while_it_restarts():
    coordinator = _coordinator()
    first = _join(coordinator, "a", instance_id="i1")
    assert _beat(coordinator, "a", -2, instance_id="i1").member_epoch == -2
    group = coordinator.group("g")
    assert group.members["a"].assigned == {T: frozenset({0, 1, 2, 3})}
    again = _join(coordinator, "a2", instance_id="i1")
    assert (again.member_epoch, _parts(again)) == (first.member_epoch, {0, 1, 2, 3})
    assert list(group.members) == ["a2"] and group.epoch == 1  # no rebalance
    taken = _join(coordinator, "a3", instance_id="i1")
    assert taken.error == ErrorCode.UNRELEASED_INSTANCE_ID
    fenced = _beat(coordinator, "a", 1, instance_id="i1", owned={})
    assert fenced.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_regex_subscription_follows_the_topics_it_matches():
    coordinator = _coordinator()
    one, two = uuid.UUID(int=1), uuid.UUID(int=2)
    topics = {"orders-1": (one, 1), "other": (uuid.UUID(int=3), 1)}
    result = _join(
        coordinator,
        "a",
        topics=topics,
        subscribed_topic_names=None,
        subscribed_topic_regex="orders-.*",
    )
    assert result.assignment == {one: frozenset({0})}
    more = {**topics, "orders-2": (two, 2)}
    grown = _beat(coordinator, "a", 1, owned={one: frozenset({0})}, topics=more)
    assert grown.member_epoch == 2
    assert grown.assignment == {one: frozenset({0}), two: frozenset({0, 1})}


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"rebalance_timeout_ms": -1}, ErrorCode.INVALID_REQUEST),
        ({"subscribed_topic_names": None}, ErrorCode.INVALID_REQUEST),
        ({"server_assignor": "sticky"}, ErrorCode.UNSUPPORTED_ASSIGNOR),
        ({"subscribed_topic_regex": "("}, ErrorCode.INVALID_REGULAR_EXPRESSION),
        ({"instance_id": ""}, ErrorCode.INVALID_REQUEST),
    ],
)
def test_bad_joins_are_refused_with_kafkas_errors(fields, code):
    request = {"rebalance_timeout_ms": 5000, "subscribed_topic_names": ("t",), **fields}
    result = _coordinator().heartbeat(
        Heartbeat("g", "a", 0, owned={}, **request), TOPICS, SETTINGS, 0
    )
    assert result.error == code and result.message


def test_unknown_groups_and_members():
    coordinator = _coordinator()
    assert _beat(coordinator, "a", 1, owned={}).error == ErrorCode.GROUP_ID_NOT_FOUND
    _join(coordinator, "a")
    assert _beat(coordinator, "b", 1, owned={}).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert _beat(coordinator, "b", -1).error == ErrorCode.UNKNOWN_MEMBER_ID


def test_sessions_and_revocations_time_out():
    coordinator = _coordinator()
    _join(coordinator, "a", now=0.0)
    _join(coordinator, "b", now=0.0)
    _beat(coordinator, "a", 1, owned={T: frozenset({0, 1, 2, 3})}, now=1.0)  # must revoke
    group = coordinator.group("g")
    # a's rebalance timeout (5 s) runs out before b's session (10 s)
    coordinator.expire(6.5)
    assert list(group.members) == ["b"]
    coordinator.expire(10.5)
    assert group.members == {} and group.state is ConsumerGroupState.EMPTY


def test_an_empty_classic_group_becomes_a_consumer_group_with_its_offsets():
    classic = GroupCoordinator()
    classic.offsets_for("g")[("t", 0)] = CommittedOffset(5, -1, None)
    coordinator = ConsumerGroupCoordinator(classic)
    assert _join(coordinator, "a").error == ErrorCode.NONE
    assert classic.group("g") is None
    assert coordinator.offsets_for("g")[("t", 0)].offset == 5


def test_offset_commits_and_fetches_check_member_epochs():
    coordinator = _coordinator()
    _join(coordinator, "a")
    group = coordinator.group("g")
    assert group.check_commit("a", 1, 9) == ErrorCode.NONE
    assert group.check_commit("a", 0, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert group.check_commit("b", 1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert group.check_commit("a", 1, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert group.check_commit("", -1, 9) == ErrorCode.UNKNOWN_MEMBER_ID  # not while it has members
    assert group.check_fetch(None, -1) == ErrorCode.NONE
    assert group.check_fetch("a", 2) == ErrorCode.STALE_MEMBER_EPOCH
    _beat(coordinator, "a", -1)
    assert group.check_commit("", -1, 9) == ErrorCode.NONE
