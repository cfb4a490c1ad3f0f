"""AlterPartition: the checks of kip-rules C.9-C.11, in their order, then the builder."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from kipwire.codec import ErrorCode, LeaderRecoveryState

from .draft import Draft, change_partition, election_mode
from .partition_change import Target
from .result import ControllerResult, ControllerView
from .state import NO_LEADER_CHANGE, ClusterState, PartitionState

RECOVERED, RECOVERING = LeaderRecoveryState.RECOVERED, LeaderRecoveryState.RECOVERING


def ineligible_replicas(state: ClusterState, isr_with_epochs: list[tuple[int, int]]) -> list[int]:
    """C.10.11: ISR members unregistered, shutting down, fenced, or with another epoch."""
    bad = []
    for broker_id, epoch in isr_with_epochs:
        b = state.brokers.get(broker_id)
        if b is None or b.in_controlled_shutdown or b.fenced or (epoch != -1 and epoch != b.epoch):
            bad.append(broker_id)
    return bad


def validate(
    state: ClusterState,
    version: int,
    sender: int,
    p: PartitionState | None,
    req: Any,
    isr_with_epochs: list[tuple[int, int]],
) -> int:
    """C.10's per-partition checks in order; the first failing one's error, or NONE."""
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if req["leader_epoch"] > p.leader_epoch:
        return ErrorCode.NOT_CONTROLLER
    if req["partition_epoch"] > p.partition_epoch:
        return ErrorCode.NOT_CONTROLLER
    if req["leader_epoch"] < p.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if sender != p.leader:
        return ErrorCode.INVALID_REQUEST
    if req["partition_epoch"] < p.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    new_isr = [b for b, _ in isr_with_epochs]
    if len(set(new_isr)) != len(new_isr) or any(b not in p.replicas for b in new_isr):
        return ErrorCode.INVALID_REQUEST
    if p.leader not in new_isr:
        return ErrorCode.INVALID_REQUEST
    lrs = req.get("leader_recovery_state", RECOVERED)
    if lrs == RECOVERING and len(new_isr) > 1:
        return ErrorCode.INVALID_REQUEST
    if p.leader_recovery_state == RECOVERED and lrs == RECOVERING:
        return ErrorCode.INVALID_REQUEST
    if ineligible_replicas(state, isr_with_epochs):
        return ErrorCode.INELIGIBLE_REPLICA if version >= 2 else ErrorCode.OPERATION_NOT_ATTEMPTED
    return ErrorCode.NONE


def _state_reply(p: PartitionState, index: int, code: int) -> dict:
    return {
        "partition_index": index,
        "error_code": code,
        "leader_id": p.leader,
        "leader_epoch": p.leader_epoch,
        "isr": list(p.isr),
        "leader_recovery_state": p.leader_recovery_state,
        "partition_epoch": p.partition_epoch,
    }


def _partition(state: ClusterState, topic_id: UUID, index: int) -> PartitionState | None:
    topic = state.topics.get(topic_id)
    return None if topic is None else topic.partitions.get(index)


def _alter_one(draft: Draft, version: int, sender: int, topic_id: UUID, req: Any) -> dict:
    index = req["partition_index"]
    p = _partition(draft.state, topic_id, index)
    if version >= 3:
        isr_with_epochs = [(b["broker_id"], b["broker_epoch"]) for b in req["new_isr_with_epochs"]]
    else:
        # C.10: before v3 the ids carry epoch -1, so the epoch check cannot fire.
        isr_with_epochs = [(b, -1) for b in req["new_isr"]]
    code = validate(draft.state, version, sender, p, req, isr_with_epochs)
    if code != ErrorCode.NONE:
        return {"partition_index": index, "error_code": code}
    election = election_mode(draft.state, p.topic)
    target = Target(
        isr=[b for b, _ in isr_with_epochs],
        leader_recovery_state=req.get("leader_recovery_state", RECOVERED),
        election=election,
    )
    change = change_partition(draft, p, target)
    if change.record is not None:
        leader = change.record.get("leader", NO_LEADER_CHANGE)
        if leader not in (NO_LEADER_CHANGE, sender):
            # C.11: only a completed reassignment moves the leader here. The record stands;
            # the old leader learns the new state from the metadata log, not from the reply.
            code = ErrorCode.NEW_LEADER_ELECTED if version > 1 else ErrorCode.FENCED_LEADER_EPOCH
            return {"partition_index": index, "error_code": code}
    # The reply carries the state the change leaves.
    p = _partition(draft.state, topic_id, index) or p
    return _state_reply(p, index, ErrorCode.NONE)


def alter_partition(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """AlterPartition v0-v3 (RCM#alterPartition): C.9's request check, C.10's per-partition
    checks, then C.11's change."""
    draft = Draft(view)
    sender = body["broker_id"]
    b = draft.state.brokers.get(sender)
    if b is None or b.epoch != body["broker_epoch"]:
        return draft.result({"error_code": ErrorCode.STALE_BROKER_EPOCH})
    topics = []
    for t in body["topics"]:
        topic = (
            draft.state.topics.get(t["topic_id"])
            if version >= 2
            else draft.state.topic(t["topic_name"])
        )
        if topic is None:
            code = (
                ErrorCode.UNKNOWN_TOPIC_ID if version > 1 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            parts = [
                {"partition_index": p["partition_index"], "error_code": code}
                for p in t["partitions"]
            ]
        else:
            parts = [_alter_one(draft, version, sender, topic.topic_id, p) for p in t["partitions"]]
        key = "topic_id" if version >= 2 else "topic_name"
        topics.append({key: t[key], "partitions": parts})
    return draft.result({"error_code": ErrorCode.NONE, "topics": topics})
