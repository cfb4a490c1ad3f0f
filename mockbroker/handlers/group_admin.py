"""Group administration: ListGroups (16), DescribeGroups (15), DeleteGroups (42).

Share groups (KIP-932) and streams groups (KIP-1071) are listed with their type as type and
protocol type ("share", "streams"), deleted when empty, and
not described here: DescribeGroups v6+ answers GROUP_ID_NOT_FOUND for them, as for any group that
is not a classic one (KIP-1043), older versions a Dead group.
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..coordinators.groups import GroupState
from ..coordinators.share_groups import SHARE
from ..coordinators.streams_groups import STREAMS
from .groups import not_coordinator
from .registry import RequestContext, handles

#: DescribeGroups v6 (KIP-1043) adds ErrorMessage and GROUP_ID_NOT_FOUND for groups it cannot
#: describe.
ERROR_MESSAGE_VERSION = 6


@handles(ApiKey.LIST_GROUPS)
async def list_groups(ctx: RequestContext, body: Any) -> dict:
    """The groups this broker coordinates, filtered by state (v4+) and type (v5+)."""
    states = {s.lower() for s in body.get("states_filter") or []}
    types = {t.lower() for t in body.get("types_filter") or []}
    listed = []
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
    for share in ctx.broker.share_groups.groups.values():
        state = share.state.value
        if not_coordinator(ctx, share.group_id) or (states and state.lower() not in states):
            continue
        if not types or SHARE in types:
            listed.append(
                {
                    "group_id": share.group_id,
                    "protocol_type": SHARE,
                    "group_state": state,
                    "group_type": SHARE,
                }
            )
    for streams in ctx.broker.streams_groups.groups.values():
        state = streams.state.value
        if not_coordinator(ctx, streams.group_id) or (states and state.lower() not in states):
            continue
        if not types or STREAMS in types:
            listed.append(
                {
                    "group_id": streams.group_id,
                    "protocol_type": STREAMS,
                    "group_state": state,
                    "group_type": STREAMS,
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
        elif group is None and (
            ctx.broker.share_groups.group(group_id) or ctx.broker.streams_groups.group(group_id)
        ):
            if ctx.api_version >= ERROR_MESSAGE_VERSION:
                entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
                entry["error_message"] = f"Group {group_id} is not a classic group."
        elif group is None and ctx.api_version >= ERROR_MESSAGE_VERSION:
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
        elif group is None and ctx.broker.streams_groups.group(group_id) is not None:
            code = ctx.broker.streams_groups.delete(group_id)
        elif group is None:
            code = ctx.broker.share_groups.delete(group_id)
        elif group.members:
            code = ErrorCode.NON_EMPTY_GROUP
        else:
            del groups.groups[group_id]
            code = ErrorCode.NONE
        results.append({"group_id": group_id, "error_code": code})
    return {"results": results}
