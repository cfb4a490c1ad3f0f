"""Classic group membership: JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13).

A classic group is served by `coordinators/groups.py`; a classic member of a KIP-848 consumer
group (the online migration) by `coordinators/consumer_classic.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import trio

from kipwire.codec import ApiKey, ErrorCode

from ..coordinators import consumer_classic
from ..coordinators.share_groups import SHARE
from ..coordinators.streams_groups import STREAMS
from .consumer_config import group_settings, image_topics
from .registry import BrokerView, RequestContext, handles

#: KIP-394: from JoinGroup v4 a new member must rejoin with the member id it is given.
MEMBER_ID_REQUIRED_FROM = 4


class GroupKind(Protocol):
    """A coordinator of one kind of group other than classic (consumer, share, streams)."""

    @property
    def groups(self) -> Mapping[str, Any]: ...

    def delete(self, group_id: str) -> int: ...


def group_kinds(broker: BrokerView) -> dict[str, GroupKind]:
    """The coordinators of the non-classic group types, by ListGroups' GroupType name: KIP-848
    consumer groups, KIP-932 share groups, KIP-1071 streams groups."""
    return {
        consumer_classic.PROTOCOL_TYPE: broker.consumer_groups,
        SHARE: broker.share_groups,
        STREAMS: broker.streams_groups,
    }


def group_type(broker: BrokerView, group_id: str) -> str | None:
    """Which non-classic kind of group holds the id (group ids are one namespace across kinds),
    None for a classic group or no group."""
    return next((k for k, c in group_kinds(broker).items() if group_id in c.groups), None)


def not_coordinator(ctx: RequestContext, key: str) -> bool:
    """True when this broker does not coordinate `key` (group or transactional id)."""
    node = ctx.broker.coordinator_for(key)
    return node is None or node.node_id != ctx.broker.node_id


def _join_fail(body: Any, code: int, version: int) -> dict:
    return {
        "error_code": code,
        "generation_id": -1,
        # nullable from v7 only: an older error response carries the empty name
        "protocol_name": None if version >= 7 else "",
        "leader": "",
        "member_id": body["member_id"],
        "members": [],
    }


@handles(ApiKey.JOIN_GROUP, fail=_join_fail)
async def join_group(ctx: RequestContext, body: Any) -> dict:
    """Enter the group's rebalance and answer when it completes."""
    if not_coordinator(ctx, body["group_id"]):
        return _join_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    consumers = ctx.broker.consumer_groups
    arguments = (
        body["member_id"],
        body.get("group_instance_id"),
        ctx.client_id or "",
        body["protocol_type"],
        [(p["name"], bytes(p["metadata"])) for p in body["protocols"]],
        body["session_timeout_ms"],
        body.get("rebalance_timeout_ms", -1),
        ctx.api_version >= MEMBER_ID_REQUIRED_FROM,
    )
    if consumers.adopt_classic(body["group_id"]):
        result = await ctx.broker.groups.join(body["group_id"], *arguments)
    else:
        group = consumers.groups[body["group_id"]]
        image = ctx.broker.image
        result = consumer_classic.join(
            consumers,
            group,
            *arguments,
            image_topics(image),
            group_settings(image, body["group_id"]),
            trio.current_time(),
        )
    return {
        "error_code": result.error,
        "generation_id": result.generation,
        "protocol_type": body["protocol_type"],
        "protocol_name": result.protocol if ctx.api_version >= 7 else (result.protocol or ""),
        "leader": result.leader,
        "member_id": result.member_id or body["member_id"],
        "members": [
            {"member_id": m, "group_instance_id": i, "metadata": meta}
            for m, i, meta in result.members
        ],
    }


def _sync_fail(body: Any, code: int, version: int) -> dict:
    return {"error_code": code, "assignment": b""}


@handles(ApiKey.SYNC_GROUP, fail=_sync_fail)
async def sync_group(ctx: RequestContext, body: Any) -> dict:
    """The leader's assignments in, each member's own assignment out."""
    if not_coordinator(ctx, body["group_id"]):
        return _sync_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    consumer = ctx.broker.consumer_groups.group(body["group_id"])
    if consumer is not None:
        code, assignment, protocol = consumer_classic.sync(
            consumer, body["member_id"], body["generation_id"]
        )
    else:
        assignments = {a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]}
        code, assignment, protocol = await ctx.broker.groups.sync(
            body["group_id"], body["generation_id"], body["member_id"], assignments
        )
    return {
        "error_code": code,
        "protocol_type": body.get("protocol_type"),
        "protocol_name": protocol,
        "assignment": assignment,
    }


@handles(ApiKey.HEARTBEAT)
async def heartbeat(ctx: RequestContext, body: Any) -> dict:
    """Keep a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""
    if not_coordinator(ctx, body["group_id"]):
        return {"error_code": ErrorCode.NOT_COORDINATOR}
    consumer = ctx.broker.consumer_groups.group(body["group_id"])
    if consumer is not None:
        code = consumer_classic.heartbeat(
            consumer, body["member_id"], body["generation_id"], trio.current_time()
        )
    else:
        code = ctx.broker.groups.heartbeat(
            body["group_id"], body["generation_id"], body["member_id"]
        )
    return {"error_code": code}


def _leave_fail(body: Any, code: int, version: int) -> dict:
    return {"error_code": code, "members": []}


@handles(ApiKey.LEAVE_GROUP, fail=_leave_fail)
async def leave_group(ctx: RequestContext, body: Any) -> dict:
    """Remove one member (before v3) or a batch of members (v3+)."""
    if not_coordinator(ctx, body["group_id"]):
        return _leave_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    consumers = ctx.broker.consumer_groups

    def leave(member_id: str) -> int:
        consumer = consumers.group(body["group_id"])
        if consumer is not None:
            return consumer_classic.leave(consumers, consumer, member_id)
        return ctx.broker.groups.leave(body["group_id"], member_id)

    if ctx.api_version < 3:
        return {"error_code": leave(body["member_id"])}
    members = [
        {
            "member_id": m["member_id"],
            "group_instance_id": m.get("group_instance_id"),
            "error_code": leave(m["member_id"]),
        }
        for m in body["members"]
    ]
    return {"error_code": ErrorCode.NONE, "members": members}
