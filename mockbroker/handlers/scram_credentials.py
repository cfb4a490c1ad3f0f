"""SCRAM credentials (KIP-554): AlterUserScramCredentials (51) goes to the controller, which
writes UserScramCredentialRecords; DescribeUserScramCredentials (50) lists what this broker
replayed (mechanisms and iterations, never salts or keys). Served on secured clusters
(`security.secured_handlers`); ALTER / DESCRIBE on the cluster (`authorization.py`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .registry import Handler, RequestContext, handles

SCRAM_APIS: dict[int, Handler] = {}


def _alter_fail(body: Any, code: int, version: int) -> dict:
    users = dict.fromkeys(c["name"] for c in [*body["deletions"], *body["upsertions"]])
    return {"results": [{"user": u, "error_code": code, "error_message": None} for u in users]}


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, fail=_alter_fail, table=SCRAM_APIS)
async def alter_user_scram_credentials(ctx: RequestContext, body: Any) -> dict:
    """Upserted and deleted credentials, answered once every running broker replayed them."""
    return await ctx.broker.forward(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ctx.api_version, body)


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, table=SCRAM_APIS)
async def describe_user_scram_credentials(ctx: RequestContext, body: Any) -> dict:
    """Each user's mechanisms and iterations (every user with credentials when null)."""
    infos: dict[str, list[dict]] = defaultdict(list)
    for (user, mechanism), credential in sorted(ctx.broker.image.security.scram.items()):
        infos[user].append({"mechanism": mechanism, "iterations": credential.iterations})
    asked = body["users"]
    names = sorted(infos) if asked is None else [u["name"] for u in asked]
    results = []
    for name in names:
        if names.count(name) > 1:
            code, message = (
                ErrorCode.DUPLICATE_RESOURCE,
                "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {name}",
            )
        elif name not in infos:
            code, message = (
                ErrorCode.RESOURCE_NOT_FOUND,
                f"Attempt to describe a user credential that does not exist: {name}",
            )
        else:
            code, message = ErrorCode.NONE, None
        results.append(
            {
                "user": name,
                "error_code": code,
                "error_message": message,
                "credential_infos": infos.get(name, []) if code == ErrorCode.NONE else [],
            }
        )
    return {"error_code": ErrorCode.NONE, "error_message": None, "results": results}
