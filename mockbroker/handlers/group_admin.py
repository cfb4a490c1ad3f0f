"""Group administration of every kind of group: ListGroups (16), DescribeGroups (15),
DeleteGroups (42), OffsetDelete (47).

Behavior: ListGroups lists classic groups, KIP-848 consumer groups, KIP-932 share groups and
KIP-1071 streams groups with their type (v5) and state, the non-classic kinds with their type as
protocol type ("consumer", "share", "streams"). DescribeGroups describes classic groups only,
and answers any other kind as Kafka does: Dead, with GROUP_ID_NOT_FOUND and "Group X is not a
classic group." from v6 (KIP-1043), without an error before (clients describe those groups with
ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe); an unknown group is
GROUP_ID_NOT_FOUND "Group X not found." from v6, Dead before. DeleteGroups deletes an empty
group of any kind with its offsets (NON_EMPTY_GROUP while it has members). OffsetDelete, of a
classic, consumer or streams group, refuses a partition of a topic the group still subscribes to
(GROUP_SUBSCRIBED_TO_TOPIC; a streams group's topology reads it), and a classic group with members
that does not use the consumer protocol (NON_EMPTY_GROUP).
"""

from __future__ import annotations

import struct
from typing import Any

from kipwire.codec import ApiKey, DecodeError, ErrorCode, message

from ..coordinators.groups import Group, GroupState
from .consumer_config import image_topics
from .groups import group_kinds, group_type, not_coordinator
from .registry import RequestContext, handles

#: DescribeGroups v6 says GROUP_ID_NOT_FOUND for a group that is not there, or is not a
#: classic group (KIP-1043), with an ErrorMessage.
NOT_FOUND_FROM = 6
#: The classic protocol type of Kafka consumers, and the one ListGroups gives consumer groups.
CONSUMER_PROTOCOL = "consumer"
#: The newest ConsumerProtocolSubscription version the codec reads.
SUBSCRIPTION_VERSION = 3


@handles(ApiKey.LIST_GROUPS)
async def list_groups(ctx: RequestContext, body: Any) -> dict:
    """The groups this broker coordinates, filtered by state (v4+) and type (v5+)."""
    states = {s.lower() for s in body.get("states_filter") or []}
    types = {t.lower() for t in body.get("types_filter") or []}
    listed = []
    for kind, coordinator in group_kinds(ctx.broker).items():
        # consumer, share and streams groups: the type is the protocol type too
        for other in coordinator.groups.values():
            state = other.state.value
            if not_coordinator(ctx, other.group_id) or (states and state.lower() not in states):
                continue
            if not types or kind in types:
                listed.append(
                    {
                        "group_id": other.group_id,
                        "protocol_type": kind,
                        "group_state": state,
                        "group_type": kind,
                    }
                )
    for group in ctx.broker.groups.groups.values():
        if group.state is GroupState.DEAD or not_coordinator(ctx, group.group_id):
            continue
        if states and group.state.value.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        listed.append(
            {
                "group_id": group.group_id,
                "protocol_type": group.protocol_type or "",
                "group_state": group.state.value,
                "group_type": "classic",
            }
        )
    return {"error_code": ErrorCode.NONE, "groups": listed}


def _describe_fail(body: Any, code: int, version: int) -> dict:
    return {
        "groups": [
            {
                "error_code": code,
                "group_id": g,
                "group_state": "",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
            }
            for g in body["groups"]
        ]
    }


@handles(ApiKey.DESCRIBE_GROUPS, fail=_describe_fail)
async def describe_groups(ctx: RequestContext, body: Any) -> dict:
    """Each group's state, protocol and members with their metadata and assignment."""
    described = []
    for group_id in body["groups"]:
        group = ctx.broker.groups.group(group_id)
        entry: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "group_id": group_id,
            "members": [],
            "group_state": GroupState.DEAD.value,
            "protocol_type": "",
            "protocol_data": "",
        }
        if not_coordinator(ctx, group_id):
            entry["error_code"] = ErrorCode.NOT_COORDINATOR
        elif group_type(ctx.broker, group_id) is not None:
            if ctx.api_version >= NOT_FOUND_FROM:
                entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
                entry["error_message"] = f"Group {group_id} is not a classic group."
        elif group is None and ctx.api_version >= NOT_FOUND_FROM:
            entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
            entry["error_message"] = f"Group {group_id} not found."
        elif group is not None:
            stable = group.state is GroupState.STABLE
            entry.update(
                group_state=group.state.value,
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol or "") if stable else "",
                members=[
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": dict(m.protocols).get(group.protocol or "", b"")
                        if stable
                        else b"",
                        "member_assignment": m.assignment if stable else b"",
                    }
                    for m in group.members.values()
                ],
            )
        described.append(entry)
    return {"groups": described}


def _delete_fail(body: Any, code: int, version: int) -> dict:
    return {"results": [{"group_id": g, "error_code": code} for g in body["groups_names"]]}


@handles(ApiKey.DELETE_GROUPS, fail=_delete_fail)
async def delete_groups(ctx: RequestContext, body: Any) -> dict:
    """Delete empty groups and their offsets; NON_EMPTY_GROUP while members remain."""
    groups = ctx.broker.groups
    results = []
    for group_id in body["groups_names"]:
        group = groups.group(group_id)
        if not_coordinator(ctx, group_id):
            code = ErrorCode.NOT_COORDINATOR
        elif (kind := group_type(ctx.broker, group_id)) is not None:
            code = group_kinds(ctx.broker)[kind].delete(group_id)
        elif group is None:
            code = ErrorCode.GROUP_ID_NOT_FOUND
        elif group.members:
            code = ErrorCode.NON_EMPTY_GROUP
        else:
            del groups.groups[group_id]
            code = ErrorCode.NONE
        results.append({"group_id": group_id, "error_code": code})
    return {"results": results}


def _offset_delete_fail(body: Any, code: int, version: int) -> dict:
    return {"error_code": code, "topics": []}


@handles(ApiKey.OFFSET_DELETE, fail=_offset_delete_fail)
async def offset_delete(ctx: RequestContext, body: Any) -> dict:
    """Delete a group's committed offsets of partitions no member subscribes to."""
    group_id = body["group_id"]
    if not_coordinator(ctx, group_id):
        return _offset_delete_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    consumer = ctx.broker.consumer_groups.group(group_id)
    classic = ctx.broker.groups.group(group_id)
    if consumer is not None:
        topics = image_topics(ctx.broker.image)
        offsets = consumer.offsets

        def subscribed(name: str) -> bool:
            return consumer.is_subscribed(name, topics)

    elif (streams := ctx.broker.streams_groups.group(group_id)) is not None:
        offsets = streams.offsets

        def subscribed(name: str) -> bool:
            return streams.is_subscribed(name)

    elif classic is not None and classic.state is not GroupState.DEAD:
        if classic.members and classic.protocol_type != CONSUMER_PROTOCOL:
            return _offset_delete_fail(body, ErrorCode.NON_EMPTY_GROUP, ctx.api_version)
        offsets = classic.offsets
        subscriptions = _classic_subscriptions(classic)

        def subscribed(name: str) -> bool:
            return name in subscriptions

    else:
        return _offset_delete_fail(body, ErrorCode.GROUP_ID_NOT_FOUND, ctx.api_version)
    results = []
    for topic in body["topics"]:
        refused = subscribed(topic["name"])
        parts = []
        for p in topic["partitions"]:
            index = p["partition_index"]
            if not refused:
                offsets.pop((topic["name"], index), None)
            code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if refused else ErrorCode.NONE
            parts.append({"partition_index": index, "error_code": code})
        results.append({"name": topic["name"], "partitions": parts})
    return {"error_code": ErrorCode.NONE, "topics": results}


def _classic_subscriptions(group: Group) -> set[str]:
    """The topics a classic consumer-protocol group's members subscribe to, from their
    ConsumerProtocolSubscription metadata (a version, then the subscription)."""
    topics: set[str] = set()
    for member in group.members.values():
        metadata = dict(member.protocols).get(group.protocol or "")
        if metadata is None and member.protocols:
            metadata = member.protocols[0][1]
        if not metadata or len(metadata) < 2:
            continue
        (version,) = struct.unpack_from(">h", metadata)
        codec = message("ConsumerProtocolSubscription", min(max(version, 0), SUBSCRIPTION_VERSION))
        try:
            topics.update(codec.parse(metadata[2:])["topics"])
        except DecodeError:
            continue
    return topics
