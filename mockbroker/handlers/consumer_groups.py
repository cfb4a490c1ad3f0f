"""KIP-848 consumer groups: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Behavior: the coordinator (`coordinators/consumer_groups.py`) does the work; this module turns
the request into a `Heartbeat` with the topics of this broker's metadata image and the group
settings of the cluster's configs (`group.consumer.heartbeat.interval.ms`,
`group.consumer.session.timeout.ms`, `group.consumer.assignors`, `group.consumer.max.size`).

Version notes: ConsumerGroupHeartbeat v1 adds SubscribedTopicRegex and makes the member id the
client's (KIP-1082); v0 lets the coordinator choose it. ConsumerGroupDescribe v1 adds MemberType.
"""

from __future__ import annotations

from typing import Any

import trio

from kipwire.codec import ApiKey, ErrorCode

from ..broker.metadata_image import MetadataImage
from ..coordinators.assignors import Assignment
from ..coordinators.consumer_classic import PROTOCOL_TYPE
from ..coordinators.consumer_group import ConsumerGroup
from ..coordinators.consumer_groups import GroupSettings, Heartbeat
from .consumer_config import group_settings, image_topics
from .groups import group_type, not_coordinator
from .registry import RequestContext, handles

#: ConsumerGroupHeartbeat from v1: SubscribedTopicRegex, and the client generates member ids.
CLIENT_MEMBER_ID_FROM = 1
#: ConsumerGroupDescribe's MemberType of a member speaking the classic or the consumer protocol
#: (KIP-1099).
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1


def _owned(entries: list | None) -> Assignment | None:
    if entries is None:
        return None
    return {e["topic_id"]: frozenset(e["partitions"]) for e in entries if e["partitions"]}


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT)
async def consumer_group_heartbeat(ctx: RequestContext, body: Any) -> dict:
    """Join, heartbeat or leave a consumer group; the member's epoch and assignment back."""
    if not_coordinator(ctx, body["group_id"]):
        return {"error_code": ErrorCode.NOT_COORDINATOR}
    if group_type(ctx.broker, body["group_id"]) not in (None, PROTOCOL_TYPE):
        # a share or streams group holds the id (group ids are one namespace across kinds)
        return {
            "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
            "error_message": f"Group {body['group_id']} is not a consumer group.",
        }
    names = body["subscribed_topic_names"]
    request = Heartbeat(
        group_id=body["group_id"],
        member_id=body["member_id"],
        member_epoch=body["member_epoch"],
        instance_id=body["instance_id"],
        rack_id=body["rack_id"],
        rebalance_timeout_ms=body["rebalance_timeout_ms"],
        subscribed_topic_names=tuple(names) if names is not None else None,
        subscribed_topic_regex=body.get("subscribed_topic_regex"),
        server_assignor=body["server_assignor"],
        owned=_owned(body["topic_partitions"]),
        client_id=ctx.client_id or "",
        member_id_required=ctx.api_version >= CLIENT_MEMBER_ID_FROM,
    )
    image = ctx.broker.image
    result = ctx.broker.consumer_groups.heartbeat(
        request, image_topics(image), group_settings(image, request.group_id), trio.current_time()
    )
    assignment = None
    if result.assignment is not None:
        assignment = {
            "topic_partitions": [
                {"topic_id": topic, "partitions": sorted(parts)}
                for topic, parts in sorted(result.assignment.items())
            ]
        }
    return {
        "error_code": result.error,
        "error_message": result.message,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
        "assignment": assignment,
    }


def _describe_fail(body: Any, code: int, version: int) -> dict:
    return {"groups": [{"group_id": g, "error_code": code} for g in body["group_ids"]]}


def _partitions(image: MetadataImage, assignment: Assignment) -> dict:
    entries = []
    for topic, parts in assignment.items():
        info = image.topics_by_id.get(topic)
        entries.append(
            {
                "topic_id": topic,
                "topic_name": info.name if info else "",
                "partitions": sorted(parts),
            }
        )
    return {"topic_partitions": sorted(entries, key=lambda e: e["topic_name"])}


def describe_group(image: MetadataImage, group: ConsumerGroup, settings: GroupSettings) -> dict:
    """One group as ConsumerGroupDescribe answers it."""
    return {
        "error_code": ErrorCode.NONE,
        "group_id": group.group_id,
        "group_state": group.state.value,
        "group_epoch": group.epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": group.preferred_assignor(settings.assignors[0]),
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_names),
                "subscribed_topic_regex": m.subscribed_regex,
                "assignment": _partitions(image, m.assigned),
                "target_assignment": _partitions(image, group.target.get(m.member_id, {})),
                "member_type": CLASSIC_MEMBER if m.classic else CONSUMER_MEMBER,
            }
            for m in group.members.values()
        ],
    }


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, fail=_describe_fail)
async def consumer_group_describe(ctx: RequestContext, body: Any) -> dict:
    """Each consumer group's epochs, assignor and members with their current and target
    assignments; GROUP_ID_NOT_FOUND for an unknown or a classic group."""
    image = ctx.broker.image
    settings = group_settings(image)
    described = []
    for group_id in body["group_ids"]:
        group = ctx.broker.consumer_groups.group(group_id)
        if not_coordinator(ctx, group_id):
            described.append({"group_id": group_id, "error_code": ErrorCode.NOT_COORDINATOR})
        elif group is None:
            # Kafka's GroupIdNotFoundException messages; the admin client shows the first when
            # DescribeGroups, which it falls back to, does not find the group either
            other_kind = ctx.broker.groups.group(group_id) or group_type(ctx.broker, group_id)
            kind = "is not a consumer group" if other_kind else "not found"
            described.append(
                {
                    "group_id": group_id,
                    "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                    "error_message": f"Group {group_id} {kind}.",
                }
            )
        else:
            described.append(describe_group(image, group, settings))
    return {"groups": described}
