"""FindCoordinator (10): which live broker coordinates a group or a transactional id."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .registry import RequestContext, handles


def _fail(body: Any, code: int, version: int) -> dict:
    keys = body.get("coordinator_keys") or []
    return {
        "error_code": code,
        "coordinators": [
            {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code} for k in keys
        ],
    }


@handles(ApiKey.FIND_COORDINATOR, fail=_fail)
async def find_coordinator(ctx: RequestContext, body: Any) -> dict:
    """The coordinator of each key (one key before v4, a list from v4)."""
    keys = body["coordinator_keys"] if ctx.api_version >= 4 else [body["key"]]
    found = []
    for key in keys:
        node = ctx.broker.coordinator_for(key)
        if node is None:
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            found.append({"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code})
        else:
            found.append(
                {
                    "key": key,
                    "node_id": node.node_id,
                    "host": node.host,
                    "port": node.port,
                    "error_code": ErrorCode.NONE,
                }
            )
    if ctx.api_version >= 4:
        return {"coordinators": found}
    first = found[0]
    return {k: first[k] for k in ("error_code", "node_id", "host", "port")}
