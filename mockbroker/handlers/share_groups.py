"""Share group membership (KIP-932): ShareGroupHeartbeat (76) and ShareGroupDescribe (77).

Behavior: the group coordinator (FindCoordinator's answer for the group id) keeps the members;
a member joins with epoch 0 and its own member id (v1 requires one), heartbeats with the epoch it
was given, and leaves with -1. Every change of members, subscriptions or the subscribed topics'
partition counts makes a new group epoch and a new assignment from the simple assignor, handed
out at once (a share group never waits for revocations: a partition may have many members).
Version notes: v0 of both was Kafka 4.0's early access and is withdrawn, never served.
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.metadata_image import MetadataImage
from ..broker.topic_names import topic_id
from ..coordinators.share_groups import LEAVE_EPOCH, SHARE, SIMPLE_ASSIGNOR, ShareMember
from ..coordinators.share_settings import ShareSettings
from .groups import group_type, not_coordinator
from .registry import RequestContext, handles

CLIENT_HOST = "/127.0.0.1"


def _heartbeat_fail(body: Any, code: int, version: int) -> dict:
    # Kafka 4.4 answers an error with epoch 0, no member id and no interval
    return {"error_code": code, "member_epoch": 0, "heartbeat_interval_ms": 0}


def _invalid(message: str | None) -> dict:
    return {
        "error_code": ErrorCode.INVALID_REQUEST,
        "error_message": message,
        "member_epoch": 0,
        "heartbeat_interval_ms": 0,
    }


@handles(ApiKey.SHARE_GROUP_HEARTBEAT, fail=_heartbeat_fail)
async def share_group_heartbeat(ctx: RequestContext, body: Any) -> dict:
    """Join, stay in or leave a share group; the member's assignment when it changed."""
    group_id, member_id, epoch = body["group_id"], body["member_id"], body["member_epoch"]
    if not group_id:
        return _invalid("GroupId can't be empty.")
    if not member_id:
        return _invalid(None)  # Kafka 4.4 gives no message for this one
    if epoch < LEAVE_EPOCH:
        return _invalid(f"MemberEpoch {epoch} is invalid.")
    topics = body.get("subscribed_topic_names")
    if epoch == 0 and not topics:
        return _invalid("SubscribedTopicNames must be set in first request.")
    if not_coordinator(ctx, group_id):
        return _heartbeat_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    broker = ctx.broker
    if broker.groups.group(group_id) is not None or group_type(broker, group_id) not in (
        None,
        SHARE,
    ):
        return {
            **_heartbeat_fail(body, ErrorCode.GROUP_ID_NOT_FOUND, ctx.api_version),
            "error_message": f"Group {group_id} is not a share group.",
        }
    settings = ShareSettings.of(broker.image, group_id)
    shares = broker.share_groups
    shares.remember_limit(group_id, settings.delivery_count_limit)
    member = ShareMember(
        member_id,
        ctx.client_id or "",
        CLIENT_HOST,
        body.get("rack_id"),
        sorted(set(topics or [])),
    )
    result = shares.heartbeat(
        group_id,
        member,
        epoch,
        partition_counts(broker.image),
        settings.session_timeout_ms,
        settings.max_size,
        settings.delivery_count_limit,
    )
    if result.error:
        return {
            **_heartbeat_fail(body, result.error, ctx.api_version),
            "error_message": result.message,
        }
    out: dict[str, Any] = {
        "error_code": result.error,
        "member_id": member_id,
        "member_epoch": result.member_epoch,
        # a member that left is told no interval, as Kafka does
        "heartbeat_interval_ms": settings.heartbeat_interval_ms if epoch != LEAVE_EPOCH else 0,
    }
    if result.assignment is not None:
        out["assignment"] = {"topic_partitions": _topic_partitions(broker.image, result.assignment)}
    return out


def partition_counts(image: MetadataImage) -> dict[str, int]:
    """Every topic's partition count (internal topics are never assigned to share groups)."""
    return {
        name: len(info.partitions)
        for name, info in image.topics.items()
        if not name.startswith("__")
    }


def _topic_partitions(image: MetadataImage, assignment: dict[str, list[int]]) -> list[dict]:
    return [
        {"topic_id": topic_id(image, topic), "partitions": sorted(parts)}
        for topic, parts in sorted(assignment.items())
        if topic in image.topics
    ]


def _describe_fail(body: Any, code: int, version: int) -> dict:
    return {
        "groups": [
            {"error_code": code, "group_id": g, "group_state": "", "assignor_name": ""}
            for g in body["group_ids"]
        ]
    }


@handles(ApiKey.SHARE_GROUP_DESCRIBE, fail=_describe_fail)
async def share_group_describe(ctx: RequestContext, body: Any) -> dict:
    """Each share group's epochs, assignor and members with their assignments."""
    broker = ctx.broker
    described = []
    for group_id in body["group_ids"]:
        entry: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "group_id": group_id,
            "group_state": "",
            "assignor_name": "",
        }
        group = broker.share_groups.group(group_id)
        if not_coordinator(ctx, group_id):
            entry["error_code"] = ErrorCode.NOT_COORDINATOR
        elif group is None:
            entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
            other = broker.groups.group(group_id) is not None
            entry["error_message"] = (
                f"Group {group_id} is not a share group."
                if other
                else f"Group {group_id} not found."
            )
        else:
            entry.update(
                group_state=group.state.value,
                group_epoch=group.epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=SIMPLE_ASSIGNOR,
                members=[
                    {
                        "member_id": m.member_id,
                        "rack_id": m.rack_id,
                        "member_epoch": m.epoch,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "subscribed_topic_names": m.subscribed,
                        "assignment": {
                            "topic_partitions": [
                                {**tp, "topic_name": name}
                                for name, tp in zip(
                                    sorted(t for t in m.assignment if t in broker.image.topics),
                                    _topic_partitions(broker.image, m.assignment),
                                    strict=True,
                                )
                            ]
                        },
                    }
                    for m in group.members.values()
                ],
            )
        described.append(entry)
    return {"groups": described}
