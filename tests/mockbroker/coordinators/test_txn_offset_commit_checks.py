"""TxnOffsetCommit's member and epoch checks, as Kafka 4.4's OffsetMetadataManager
#validateTransactionalOffsetCommit and the groups' validateOffsetCommit make them: a producer
without group metadata, a KIP-848 member at its epoch or at an older one for the partitions it
held by then (KIP-1251), classic generations, and the codes older versions get instead."""

from __future__ import annotations

import uuid

import pytest

from kipwire.codec import ErrorCode
from kipwire.mockbroker.coordinators.consumer_groups import (
    ConsumerGroupCoordinator,
    GroupSettings,
    Heartbeat,
)
from kipwire.mockbroker.coordinators.group_offsets import GroupOffsets
from kipwire.mockbroker.coordinators.groups import GroupCoordinator, GroupState
from kipwire.mockbroker.coordinators.streams_groups import StreamsCoordinator

T = uuid.UUID(int=7)
TOPICS = {"t": (T, 4)}
SETTINGS = GroupSettings(heartbeat_interval_ms=500, session_timeout_ms=10_000)
ALL = [(T, p) for p in range(4)]


def _beat(coordinator, member, epoch, owned=None, **fields):
    return coordinator.heartbeat(
        Heartbeat("g", member, epoch, owned=owned, **fields), TOPICS, SETTINGS, 0.0
    )


def _join(coordinator, member):
    return _beat(
        coordinator, member, 0, owned={}, rebalance_timeout_ms=5000, subscribed_topic_names=("t",)
    )


@pytest.fixture
def groups() -> GroupOffsets:
    return GroupOffsets(ConsumerGroupCoordinator(GroupCoordinator()), StreamsCoordinator())


def _check(groups: GroupOffsets, member: str, epoch: int, parts=ALL, version=6, instance=None):
    return groups.check_txn_commit("g", member, instance, epoch, list(parts), version)


def test_a_consumer_group_member_at_its_epoch_or_none_at_all(groups: GroupOffsets) -> None:
    _join(groups.consumer, "a")
    assert _check(groups, "a", 1) == ErrorCode.NONE
    # a producer that sends no group metadata (epoch -1, no member) is not checked
    assert _check(groups, "", -1) == ErrorCode.NONE
    assert _check(groups, "b", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert _check(groups, "a", 2) == ErrorCode.STALE_MEMBER_EPOCH  # newer than the member's
    assert _check(groups, "a", 2, version=5) == ErrorCode.ILLEGAL_GENERATION


def test_an_older_epoch_commits_only_partitions_held_since(groups: GroupOffsets) -> None:
    coordinator = groups.consumer
    _join(coordinator, "a")  # a holds 0-3 from epoch 1
    _join(coordinator, "b")
    kept = set(_beat(coordinator, "a", 1, owned={T: frozenset(range(4))}).assignment[T])
    _beat(coordinator, "a", 1, owned={T: frozenset(kept)})  # a revoked; now at epoch 2
    assert coordinator.group("g").members["a"].epoch == 2
    # a transaction begun at epoch 1 may still commit what a held then and holds now
    assert _check(groups, "a", 1, [(T, p) for p in kept]) == ErrorCode.NONE
    (gone,) = [p for p in range(4) if p not in kept][:1]
    assert _check(groups, "a", 1, [(T, gone)]) == ErrorCode.STALE_MEMBER_EPOCH
    assert _check(groups, "a", 1, [(T, gone)], version=4) == ErrorCode.ILLEGAL_GENERATION
    # b was given its partitions at epoch 2: epoch 1 is older than that assignment
    b_parts = _beat(coordinator, "b", 2, owned={}).assignment[T]
    assert _check(groups, "b", 2, [(T, p) for p in b_parts]) == ErrorCode.NONE
    assert _check(groups, "b", 1, [(T, p) for p in b_parts]) == ErrorCode.STALE_MEMBER_EPOCH


def test_a_group_nobody_created(groups: GroupOffsets) -> None:
    assert _check(groups, "", -1) == ErrorCode.NONE  # a simple group, made as the offsets store
    assert _check(groups, "m", 3) == ErrorCode.GROUP_ID_NOT_FOUND
    assert _check(groups, "m", 3, version=5) == ErrorCode.ILLEGAL_GENERATION


def test_a_classic_group_checks_member_and_generation(groups: GroupOffsets) -> None:
    classic = groups.consumer.classic.group("g", create=True)
    assert classic is not None
    classic.state, classic.generation = GroupState.STABLE, 4
    classic.members["m"] = object()  # only membership is looked at
    assert _check(groups, "", -1) == ErrorCode.NONE  # transactional: no member needed
    assert _check(groups, "m", 4) == ErrorCode.NONE
    assert _check(groups, "x", 4) == ErrorCode.UNKNOWN_MEMBER_ID
    assert _check(groups, "m", 3) == ErrorCode.ILLEGAL_GENERATION
    classic.state = GroupState.DEAD
    assert _check(groups, "m", 4) == ErrorCode.COORDINATOR_NOT_AVAILABLE
