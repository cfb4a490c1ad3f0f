"""Partition reassignment: AlterPartitionReassignments and ListPartitionReassignments (F.30)."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ErrorCode

from .configs import unclean_election_enabled
from .draft import Draft, change_partition
from .election import Election
from .partition_change import Target
from .result import ControllerResult, ControllerView
from .state import PartitionState


def original_replicas(p: PartitionState) -> list[int]:
    """The assignment before the ongoing reassignment began."""
    return [r for r in p.replicas if r not in p.adding_replicas]


def _cancel(draft: Draft, p: PartitionState) -> tuple[int, str | None]:
    if not p.adding_replicas and not p.removing_replicas:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    original = original_replicas(p)
    isr = [r for r in p.isr if r in original]
    unclean = unclean_election_enabled(draft.state, p.topic)
    if not isr and not unclean:
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "no original replica is in the ISR and unclean election is off",
        )
    target = Target(
        isr=isr,
        replicas=original,
        adding=[],
        removing=[],
        election=Election.UNCLEAN if unclean else Election.ONLINE,
    )
    change_partition(draft, p, target)
    return ErrorCode.NONE, None


def _reassign(
    draft: Draft, p: PartitionState, wanted: list[int], allow_rf_change: bool
) -> tuple[int, str | None]:
    if not wanted or len(set(wanted)) != len(wanted):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"replicas {wanted} are empty or repeat"
    unknown = [b for b in wanted if b not in draft.state.brokers]
    if unknown:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"unknown brokers {unknown}"
    current = original_replicas(p)
    if not allow_rf_change and len(wanted) != len(current):
        return ErrorCode.INVALID_REPLICATION_FACTOR, "the replication factor would change"
    removing = [r for r in current if r not in wanted]
    adding = [r for r in wanted if r not in current]
    target = Target(
        replicas=wanted + removing,
        adding=adding,
        removing=removing,
        isr=[r for r in p.isr if r in wanted or r in current],
    )
    change_partition(draft, p, target)
    return ErrorCode.NONE, None


def alter_partition_reassignments(
    view: ControllerView, version: int, body: Any
) -> ControllerResult:
    """AlterPartitionReassignments v0-v1: start, replace or (null replicas) cancel (F.30)."""
    draft = Draft(view)
    allow_rf_change = body.get("allow_replication_factor_change", True)
    responses = []
    for t in body["topics"]:
        parts = []
        for req in t["partitions"]:
            # looked up again for each: an earlier entry may have changed the partition
            topic = draft.state.topic(t["name"])
            p = topic.partitions.get(req["partition_index"]) if topic is not None else None
            if p is None:
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no such partition"
            elif req["replicas"] is None:
                code, msg = _cancel(draft, p)
            else:
                code, msg = _reassign(draft, p, list(req["replicas"]), allow_rf_change)
            parts.append(
                {
                    "partition_index": req["partition_index"],
                    "error_code": code,
                    "error_message": msg,
                }
            )
        responses.append({"name": t["name"], "partitions": parts})
    return draft.result({"error_code": ErrorCode.NONE, "responses": responses})


def list_partition_reassignments(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """ListPartitionReassignments v0: the ongoing reassignments (all, or of the listed ones)."""
    state = view.state
    if body["topics"] is None:
        wanted = [(t, sorted(t.partitions)) for t in state.topics.values()]
    else:
        wanted = [(state.topic(t["name"]), list(t["partition_indexes"])) for t in body["topics"]]
    topics = []
    for topic, indexes in wanted:
        if topic is None:
            continue
        parts = []
        for i in indexes:
            p = topic.partitions.get(i)
            if p is not None and (p.adding_replicas or p.removing_replicas):
                parts.append(
                    {
                        "partition_index": i,
                        "replicas": list(p.replicas),
                        "adding_replicas": list(p.adding_replicas),
                        "removing_replicas": list(p.removing_replicas),
                    }
                )
        if parts:
            topics.append({"name": topic.name, "partitions": parts})
    return ControllerResult(response={"error_code": ErrorCode.NONE, "topics": topics})
