"""KIP-848's server-side assignors, `uniform` and `range` (`group.consumer.assignors`).

Pure functions: the members' subscriptions, the topics' partition counts and the previous target
assignment in, the new target assignment out. Kafka's own builders are more elaborate (rack
awareness, an optimised path for homogeneous subscriptions); these keep what a client can see:

- `uniform` balances the number of partitions across the members able to take them (no member
  has two more than another member subscribed to the same topic) and keeps every partition it can
  where the previous target put it.
- `range` gives each member subscribed to a topic a contiguous range of its partitions, members in
  member-id order, the first `partitions % members` one partition more (as the classic range
  assignor does, so co-partitioned topics line up).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

#: topic id -> partitions: a member's assignment (assigned, pending revocation, or target)
Assignment = dict[uuid.UUID, frozenset[int]]

#: Kafka's class names for the two assignors, accepted in `group.consumer.assignors`.
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
DEFAULT_ASSIGNORS = "uniform,range"


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    """What an assignor sees: subscriptions, topics and the assignment it replaces."""

    #: member id -> the ids of the topics it subscribes to (that exist)
    members: Mapping[str, frozenset[uuid.UUID]]
    #: topic id -> (name, partition count)
    topics: Mapping[uuid.UUID, tuple[str, int]]
    #: member id -> its previous target assignment
    previous: Mapping[str, Assignment] = field(default_factory=dict)


def _topic_order(spec: AssignmentSpec) -> list[uuid.UUID]:
    subscribed = set().union(*spec.members.values()) if spec.members else set()
    return sorted((t for t in subscribed if t in spec.topics), key=lambda t: spec.topics[t][0])


def _freeze(owned: Mapping[str, dict[uuid.UUID, set[int]]]) -> dict[str, Assignment]:
    return {
        member: {t: frozenset(ps) for t, ps in topics.items() if ps}
        for member, topics in owned.items()
    }


def uniform(spec: AssignmentSpec) -> dict[str, Assignment]:
    """Balanced and sticky: previous owners keep what they may, the rest go to the least loaded."""
    owned: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in spec.members}
    count = dict.fromkeys(spec.members, 0)
    unassigned: list[tuple[uuid.UUID, int]] = []
    for topic in _topic_order(spec):
        for index in range(spec.topics[topic][1]):
            holder = next(
                (
                    m
                    for m, previous in sorted(spec.previous.items())
                    if m in spec.members
                    and topic in spec.members[m]
                    and index in previous.get(topic, ())
                ),
                None,
            )
            if holder is None:
                unassigned.append((topic, index))
            else:
                owned[holder].setdefault(topic, set()).add(index)
                count[holder] += 1
    for topic, index in unassigned:
        candidates = sorted(m for m in spec.members if topic in spec.members[m])
        chosen = min(candidates, key=lambda m: count[m])
        owned[chosen].setdefault(topic, set()).add(index)
        count[chosen] += 1
    _even_out(spec, owned, count)
    return _freeze(owned)


def _even_out(
    spec: AssignmentSpec, owned: dict[str, dict[uuid.UUID, set[int]]], count: dict[str, int]
) -> None:
    """Move partitions from a member to another subscribed one with two or more fewer."""
    total = sum(count.values())
    # each move narrows a gap of two or more, so the moves are bounded by the partition count
    for _ in range(total * max(len(count), 1)):
        moved = False
        for giver in sorted(count, key=lambda m: (-count[m], m)):
            for topic in sorted(owned[giver], key=lambda t: spec.topics[t][0]):
                takers = [
                    m
                    for m in spec.members
                    if topic in spec.members[m] and count[m] + 1 < count[giver]
                ]
                if not takers or not owned[giver][topic]:
                    continue
                taker = min(sorted(takers), key=lambda m: count[m])
                index = max(owned[giver][topic])
                owned[giver][topic].discard(index)
                owned[taker].setdefault(topic, set()).add(index)
                count[giver] -= 1
                count[taker] += 1
                moved = True
                break
            if moved:
                break
        if not moved:
            return


def range_assign(spec: AssignmentSpec) -> dict[str, Assignment]:
    """Per topic, contiguous ranges to the subscribed members in member-id order."""
    owned: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in spec.members}
    for topic in _topic_order(spec):
        members = sorted(m for m in spec.members if topic in spec.members[m])
        partitions = spec.topics[topic][1]
        quota, extra = divmod(partitions, len(members))
        start = 0
        for position, member in enumerate(members):
            size = quota + (1 if position < extra else 0)
            if size:
                owned[member][topic] = set(range(start, start + size))
            start += size
    return _freeze(owned)


ASSIGNORS: dict[str, Callable[[AssignmentSpec], dict[str, Assignment]]] = {
    "uniform": uniform,
    "range": range_assign,
}


def configured_assignors(setting: str) -> list[str]:
    """The assignor names `group.consumer.assignors` lists (short or class names), in order."""
    names = []
    for item in setting.split(","):
        name = CLASS_NAMES.get(item.strip(), item.strip())
        if name in ASSIGNORS and name not in names:
            names.append(name)
    return names or DEFAULT_ASSIGNORS.split(",")
