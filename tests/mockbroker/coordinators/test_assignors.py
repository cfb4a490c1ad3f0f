"""KIP-848's server-side assignors: balance, stickiness, ranges, heterogeneous subscriptions."""

from __future__ import annotations

import uuid

from kipwire.mockbroker.coordinators.assignors import (
    AssignmentSpec,
    configured_assignors,
    range_assign,
    uniform,
)

A, B = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {A: ("a", 6), B: ("b", 3)}


def _count(assignment: dict) -> dict[str, int]:
    return {m: sum(len(ps) for ps in topics.values()) for m, topics in assignment.items()}


def _every_partition_once(assignment: dict, topics: dict) -> bool:
    owned = [(t, p) for parts in assignment.values() for t, ps in parts.items() for p in ps]
    expected = [(t, p) for t, (_, n) in topics.items() for p in range(n)]
    return sorted(owned) == sorted(expected)


def test_uniform_balances_and_covers_every_partition():
    spec = AssignmentSpec(members={m: frozenset({A, B}) for m in "xyz"}, topics=TOPICS)
    assignment = uniform(spec)
    assert _every_partition_once(assignment, TOPICS)
    assert sorted(_count(assignment).values()) == [3, 3, 3]


def test_uniform_is_sticky_when_a_member_joins():
    two = AssignmentSpec(members={m: frozenset({A}) for m in "xy"}, topics={A: ("a", 6)})
    before = uniform(two)
    three = AssignmentSpec(
        members={m: frozenset({A}) for m in "xyz"}, topics={A: ("a", 6)}, previous=before
    )
    after = uniform(three)
    assert sorted(_count(after).values()) == [2, 2, 2]
    # x and y each keep two of the partitions they had; z only takes partitions they gave up
    for member in "xy":
        assert after[member][A] <= before[member][A]


def test_uniform_with_different_subscriptions_gives_each_topic_to_its_subscribers():
    spec = AssignmentSpec(
        members={"x": frozenset({A}), "y": frozenset({A, B}), "z": frozenset({B})},
        topics=TOPICS,
    )
    assignment = uniform(spec)
    assert _every_partition_once(assignment, TOPICS)
    assert B not in assignment["x"] and A not in assignment["z"]
    assert sorted(_count(assignment).values()) == [3, 3, 3]


def test_range_gives_contiguous_ranges_in_member_id_order():
    spec = AssignmentSpec(members={m: frozenset({A, B}) for m in "yxz"}, topics=TOPICS)
    assignment = range_assign(spec)
    assert [sorted(assignment[m][A]) for m in "xyz"] == [[0, 1], [2, 3], [4, 5]]
    assert [sorted(assignment[m].get(B, ())) for m in "xyz"] == [[0], [1], [2]]


def test_range_gives_the_first_members_the_remainder():
    spec = AssignmentSpec(members={m: frozenset({B}) for m in "xy"}, topics={B: ("b", 3)})
    assignment = range_assign(spec)
    assert (sorted(assignment["x"][B]), sorted(assignment["y"][B])) == ([0, 1], [2])


def test_configured_assignors_read_short_and_class_names():
    assert configured_assignors("uniform,range") == ["uniform", "range"]
    assert configured_assignors(
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform"
    ) == ["range", "uniform"]
    assert configured_assignors("com.example.Mine") == ["uniform", "range"]
