"""A streams group's topology turned into tasks and internal topics, and the task assignor
(KIP-1071). Pure functions over plain values.

A subtopology has one task per partition of its widest source topic (user or repartition
source). A repartition topic with no set partition count gets the task count of the
subtopologies writing to it; a changelog topic the task count of its subtopology (Kafka's
InternalTopicManager does the same fixpoint). The assignor gives active tasks sticky and
balanced over the members, then up to `standbys` standby tasks of each, each on a process other
than its active task's and its other standbys'. Warm-up tasks are never assigned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Tasks = dict[str, list[int]]  # subtopology id -> partitions


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """A topic the group coordinator creates: repartition or changelog."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]
    changelog: bool


@dataclass(slots=True)
class TopologyPlan:
    """What a topology needs, given the topics that exist."""

    tasks: dict[str, int] = field(default_factory=dict)  # subtopology id -> task count
    missing_sources: list[str] = field(default_factory=list)
    internal: list[InternalTopic] = field(default_factory=list)


def plan(subtopologies: list[Mapping], partitions: Mapping[str, int]) -> TopologyPlan:
    """Task counts and internal topics of a topology (the heartbeat's `Subtopologies`)."""
    out = TopologyPlan()
    for sub in subtopologies:
        for topic in sub["source_topics"]:
            if topic not in partitions:
                out.missing_sources.append(topic)
    if out.missing_sources:
        return out
    repartition: dict[str, int] = {}
    for sub in subtopologies:
        for info in sub["repartition_source_topics"]:
            repartition[info["name"]] = info["partitions"] or partitions.get(info["name"], 0)
    tasks: dict[str, int] = {}
    # each round can only fill in a repartition topic once its writers' task counts are known
    for _ in range(len(subtopologies) + 1):
        for sub in subtopologies:
            widths = [partitions[t] for t in sub["source_topics"]]
            widths += [repartition[i["name"]] for i in sub["repartition_source_topics"]]
            if widths and all(widths):
                tasks[sub["subtopology_id"]] = max(widths)
        for sub in subtopologies:
            count = tasks.get(sub["subtopology_id"])
            for sink in sub["repartition_sink_topics"]:
                if count and not repartition.get(sink):
                    repartition[sink] = count
    out.tasks = tasks
    for sub in subtopologies:
        for info in sub["repartition_source_topics"]:
            out.internal.append(_internal(info, repartition.get(info["name"], 0), False))
        for info in sub["state_changelog_topics"]:
            count = info["partitions"] or tasks.get(sub["subtopology_id"], 0)
            out.internal.append(_internal(info, count, True))
    return out


def _internal(info: Mapping, partitions: int, changelog: bool) -> InternalTopic:
    configs = {kv["key"]: kv["value"] for kv in info.get("topic_configs") or []}
    if changelog:
        configs.setdefault("cleanup.policy", "compact")
    return InternalTopic(info["name"], partitions, info["replication_factor"], configs, changelog)


def assign(
    members: Mapping[str, str],
    tasks: Mapping[str, int],
    current: Mapping[str, Tasks],
    standbys: int = 0,
) -> tuple[dict[str, Tasks], dict[str, Tasks]]:
    """(active, standby) tasks per member; `members` maps member id to process id and
    `current` is each member's active tasks now (kept where the balance allows)."""
    ids = sorted(members)
    active: dict[str, Tasks] = {m: {} for m in ids}
    standby: dict[str, Tasks] = {m: {} for m in ids}
    if not ids:
        return active, standby
    every = [(s, p) for s in sorted(tasks) for p in range(tasks[s])]
    quota = -(-len(every) // len(ids))  # ceil
    load = dict.fromkeys(ids, 0)
    owner: dict[tuple[str, int], str] = {}
    for member in ids:
        for sub, parts in sorted(current.get(member, {}).items()):
            for part in parts:
                task = (sub, part)
                if (
                    sub in tasks
                    and part < tasks[sub]
                    and task not in owner
                    and load[member] < quota
                ):
                    owner[task] = member
                    load[member] += 1
    for task in every:
        if task not in owner:
            member = min(ids, key=lambda m: (load[m], m))
            owner[task] = member
            load[member] += 1
    for (sub, part), member in sorted(owner.items()):
        active[member].setdefault(sub, []).append(part)
    spare = dict.fromkeys(ids, 0)
    for task in every if standbys > 0 else []:
        used = {members[owner[task]]}
        for _ in range(standbys):
            choices = [m for m in ids if members[m] not in used]
            if not choices:
                break
            member = min(choices, key=lambda m: (spare[m], m))
            standby[member].setdefault(task[0], []).append(task[1])
            spare[member] += 1
            used.add(members[member])
    return active, standby
