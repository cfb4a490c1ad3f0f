"""A streams group's topology turned into tasks and internal topics, and the task assignor
(KIP-1071). Pure functions over plain values.

A subtopology has one task per partition of its widest source topic (user or repartition
source). A repartition topic with no set partition count gets the task count of the
subtopologies writing to it; a changelog topic the task count of its subtopology (Kafka's
InternalTopicManager does the same fixpoint). The assignor gives active tasks sticky and
balanced over the members, then up to `standbys` standby tasks of each, each on a process other
than its active task's and its other standbys'.

Warm-up tasks: Kafka 4.4.0 assigns none. Its assignor API's MemberAssignment holds active and
standby tasks only, and AssignmentRefiner#refine, which takes `streams.num.warmup.replicas` and
`acceptable.recovery.lag`, returns the target assignment unchanged; so the mock assigns none by
default. `warm_ups` is KIP-1071's (and KIP-441's) warm-up rule as a mock extension, on with the
broker config `kipwire.streams.warmup.tasks`: a stateful task the assignor moves to a member that
has not caught up on its state stays with the member running it, and the new owner gets it as a
warm-up task, at most `num.warmup.replicas` at a time, until it reports a lag within
`acceptable.recovery.lag`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
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


def task_lags(
    offsets: Mapping[str, Mapping[tuple[str, int], int]],
    end_offsets: Mapping[str, Mapping[tuple[str, int], int]],
) -> dict[str, dict[tuple[str, int], int]]:
    """member -> task -> how far its state is behind the task's changelog end, from what the
    members report (TaskOffsets, TaskEndOffsets): the highest end offset any member reports,
    less the member's own offset; a task a member reports no offset for has no lag entry."""
    ends: dict[tuple[str, int], int] = {}
    for reported in end_offsets.values():
        for task, end in reported.items():
            ends[task] = max(end, ends.get(task, end))
    return {
        member: {task: max(ends.get(task, offset) - offset, 0) for task, offset in mine.items()}
        for member, mine in offsets.items()
    }


def warm_ups(
    active: Mapping[str, Tasks],
    previous: Mapping[str, Tasks],
    lags: Mapping[str, Mapping[tuple[str, int], int]],
    stateful: Collection[str],
    warmups: int,
    acceptable_lag: int,
) -> tuple[dict[str, Tasks], dict[str, Tasks]]:
    """(active, warm-up) tasks per member after KIP-441's rule (the module's extension):
    `previous` is each member's active tasks now, `lags` their reported lags, `stateful` the
    subtopologies with state; a member moved a stateful task it lags on (or has no state for)
    gets it as a warm-up while its previous owner keeps it, at most `warmups` in the group (past
    that the task stays with its owner, to move later); `warmups` 0 turns the rule off."""
    owner_before = {
        (s, p): m for m, tasks in previous.items() for s, ps in tasks.items() for p in ps
    }
    out = {m: {s: list(ps) for s, ps in tasks.items()} for m, tasks in active.items()}
    warm: dict[str, Tasks] = {m: {} for m in active}
    budget = warmups
    for member in sorted(active) if warmups > 0 else ():
        for sub, parts in sorted(active[member].items()):
            for part in parts:
                old = owner_before.get((sub, part))
                if sub not in stateful or old in (None, member) or old not in out:
                    continue
                lag = lags.get(member, {}).get((sub, part))
                if lag is not None and lag <= acceptable_lag:
                    continue  # caught up: the task moves now
                out[member][sub].remove(part)
                out[old].setdefault(sub, []).append(part)
                if budget > 0:
                    warm[member].setdefault(sub, []).append(part)
                    budget -= 1
    for tasks in (*out.values(), *warm.values()):
        for sub in [s for s, ps in tasks.items() if not ps]:
            del tasks[sub]
        for ps in tasks.values():
            ps.sort()
    return out, warm
