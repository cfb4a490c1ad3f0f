"""Share group offsets: DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and
DeleteShareGroupOffsets (92), as `kafka-share-groups --describe / --reset-offsets /
--delete-offsets` send them to the group coordinator.

Behavior: a share partition's offset is its start offset (SPSO); one the group never consumed
describes as -1. Altering and deleting need an empty group (NON_EMPTY_GROUP otherwise); an altered
partition starts again at the given offset with nothing in flight, a deleted one starts afresh
from `share.auto.offset.reset`. Version notes: DescribeShareGroupOffsets v1 adds Lag, the records
below the leader's high watermark not yet acknowledged or archived (-1 without a running leader).
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.topic_names import topic_id
from ..coordinators.share_groups import ShareGroup
from ..coordinators.share_partition import SharePartition
from .groups import not_coordinator
from .registry import BrokerView, RequestContext, handles

NO_OFFSET = -1
#: Kafka's message for UNKNOWN_TOPIC_OR_PARTITION, as AlterShareGroupOffsets answers it
UNKNOWN_PARTITION = "This server does not host this topic-partition."


def _describe_fail(body: Any, code: int, version: int) -> dict:
    return {
        "groups": [
            {"group_id": g["group_id"], "error_code": code, "topics": []} for g in body["groups"]
        ]
    }


def _lag(broker: BrokerView, topic: str, index: int, state: SharePartition | None) -> int:
    high_watermark = broker.leader_high_watermark(topic, index)
    if state is None or high_watermark is None:
        return NO_OFFSET
    return state.lag(high_watermark)


def _describe_topics(broker: BrokerView, group: ShareGroup, wanted: Any) -> list[dict]:
    if wanted is None:
        names: dict[str, list[int]] = {}
        for topic, index in sorted(group.partitions):
            names.setdefault(topic, []).append(index)
        wanted = [{"topic_name": t, "partitions": p} for t, p in names.items()]
    out = []
    for topic in wanted:
        name = topic["topic_name"]
        parts = []
        for index in topic["partitions"]:
            state = group.partitions.get((name, index))
            info = broker.image.partition(name, index)
            entry: dict[str, Any] = {
                "partition_index": index,
                "start_offset": state.persisted_start_offset if state is not None else NO_OFFSET,
                "leader_epoch": info.leader_epoch if info is not None else -1,
                "lag": _lag(broker, name, index, state),
                "error_code": ErrorCode.NONE,
            }
            if info is None:
                entry.update(
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=f"{name}-{index} is unknown",
                    start_offset=NO_OFFSET,
                )
            parts.append(entry)
        out.append(
            {"topic_name": name, "topic_id": topic_id(broker.image, name), "partitions": parts}
        )
    return out


@handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, fail=_describe_fail)
async def describe_share_group_offsets(ctx: RequestContext, body: Any) -> dict:
    """Each group's share-partition start offsets (and lag, v1)."""
    broker = ctx.broker
    groups = []
    for request in body["groups"]:
        group_id = request["group_id"]
        entry: dict[str, Any] = {"group_id": group_id, "error_code": ErrorCode.NONE, "topics": []}
        group = broker.share_groups.group(group_id)
        if not_coordinator(ctx, group_id):
            entry["error_code"] = ErrorCode.NOT_COORDINATOR
        elif group is not None:
            entry["topics"] = _describe_topics(broker, group, request.get("topics"))
        # a group that does not exist has no offsets: Kafka 4.4 answers it without an error
        groups.append(entry)
    return {"groups": groups}


def _empty_group(ctx: RequestContext, group_id: str) -> tuple[ShareGroup | None, dict | None]:
    """The share group if it may change its offsets, else the top-level error to answer."""
    group = ctx.broker.share_groups.group(group_id)
    if not_coordinator(ctx, group_id):
        return None, {"error_code": ErrorCode.NOT_COORDINATOR}
    if group is None:
        return None, {
            "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
            "error_message": f"Group {group_id} not found.",
        }
    if group.members:
        return None, {
            "error_code": ErrorCode.NON_EMPTY_GROUP,
            "error_message": "The group is not empty.",
        }
    return group, None


@handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
async def alter_share_group_offsets(ctx: RequestContext, body: Any) -> dict:
    """Set the start offset of share partitions of an empty group."""
    group, error = _empty_group(ctx, body["group_id"])
    if group is None:
        return {**(error or {}), "responses": []}
    image = ctx.broker.image
    responses = []
    for topic in body["topics"]:
        name = topic["topic_name"]
        parts = []
        for part in topic["partitions"]:
            index, offset = part["partition_index"], part["start_offset"]
            code, message = ErrorCode.NONE, None
            if image.partition(name, index) is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_PARTITION
            elif offset < 0:
                code, message = ErrorCode.INVALID_REQUEST, f"start offset {offset} is negative"
            else:
                state = group.partitions.get((name, index))
                if state is None:
                    group.partitions[name, index] = SharePartition(offset)
                else:
                    state.reset(offset)
            parts.append({"partition_index": index, "error_code": code, "error_message": message})
        responses.append(
            {"topic_name": name, "topic_id": topic_id(image, name), "partitions": parts}
        )
    return {"error_code": ErrorCode.NONE, "responses": responses}


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
async def delete_share_group_offsets(ctx: RequestContext, body: Any) -> dict:
    """Forget the share partitions of whole topics for an empty group."""
    group, error = _empty_group(ctx, body["group_id"])
    if group is None:
        return {**(error or {}), "responses": []}
    image = ctx.broker.image
    responses = []
    for topic in body["topics"]:
        name = topic["topic_name"]
        code, message = ErrorCode.NONE, None
        if name not in image.topics:
            code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_PARTITION
        for key in [k for k in group.partitions if k[0] == name]:
            del group.partitions[key]
        responses.append(
            {
                "topic_name": name,
                "topic_id": topic_id(image, name),
                "error_code": code,
                "error_message": message,
            }
        )
    return {"error_code": ErrorCode.NONE, "responses": responses}
