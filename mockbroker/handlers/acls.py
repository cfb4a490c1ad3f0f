"""ACLs: CreateAcls (30) and DeleteAcls (31) go to the controller, which writes them to the
metadata log; DescribeAcls (29) lists what this broker replayed. Served with `authorizer=True`
only (`security.secured_handlers`); each needs ALTER (DESCRIBE to list) on the cluster
(`authorization.py`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..security.acls import filter_matches
from .registry import Handler, RequestContext, handles

ACL_APIS: dict[int, Handler] = {}


def _create_fail(body: Any, code: int, version: int) -> dict:
    return {"results": [{"error_code": code, "error_message": None} for _ in body["creations"]]}


def _delete_fail(body: Any, code: int, version: int) -> dict:
    return {
        "filter_results": [
            {"error_code": code, "error_message": None, "matching_acls": []}
            for _ in body["filters"]
        ]
    }


def _describe_fail(body: Any, code: int, version: int) -> dict:
    return {"error_code": code, "error_message": None, "resources": []}


@handles(ApiKey.CREATE_ACLS, fail=_create_fail, table=ACL_APIS)
async def create_acls(ctx: RequestContext, body: Any) -> dict:
    """New ACLs, answered once every running broker has replayed them."""
    return await ctx.broker.forward(ApiKey.CREATE_ACLS, ctx.api_version, body)


@handles(ApiKey.DELETE_ACLS, fail=_delete_fail, table=ACL_APIS)
async def delete_acls(ctx: RequestContext, body: Any) -> dict:
    """The ACLs each filter matches, removed; answered once every running broker replayed it."""
    return await ctx.broker.forward(ApiKey.DELETE_ACLS, ctx.api_version, body)


@handles(ApiKey.DESCRIBE_ACLS, fail=_describe_fail, table=ACL_APIS)
async def describe_acls(ctx: RequestContext, body: Any) -> dict:
    """The replayed ACLs the filter matches, grouped by resource pattern."""
    grouped: dict[tuple[int, str, int], list[dict]] = defaultdict(list)
    for acl in ctx.broker.image.security.acls.values():
        if filter_matches(body, acl):
            grouped[acl.resource_type, acl.resource_name, acl.pattern_type].append(
                {
                    "principal": acl.principal,
                    "host": acl.host,
                    "operation": acl.operation,
                    "permission_type": acl.permission_type,
                }
            )
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "resources": [
            {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
            for (t, n, p), acls in sorted(grouped.items())
        ],
    }
