"""Delegation tokens (KIP-48): CreateDelegationToken (38), RenewDelegationToken (39) and
ExpireDelegationToken (40) go to the controller once this broker has checked the requester;
DescribeDelegationToken (41) lists what this broker replayed. Served on SASL clusters with a
SCRAM mechanism (tokens authenticate over SCRAM with `tokenauth=true`).

As Kafka's KafkaApis: a connection that is not SASL, or that authenticated with a token, is
answered DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; renewers must be `User` principals; a token for
another owner needs CREATE_TOKENS on that user; only its owner or a renewer renews or expires
a token; Describe lists the tokens the requester owns, renews, or may DESCRIBE.
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import AclOperation, AclResourceType, ApiKey, ErrorCode

from ..security.context import CLIENT_HOST, PRINCIPAL, TOKEN_AUTHENTICATED
from ..security.tokens import TokenInfo, find_by_hmac, split_principal, token_hmac
from .registry import Handler, RequestContext, handles

TOKEN_APIS: dict[int, Handler] = {}
#: The version the broker forwards Create in: the first that names an owner.
CREATE_VERSION = 3


def _refused(ctx: RequestContext) -> int | None:
    """Why the connection may not use the token APIs at all, or None."""
    if getattr(ctx.broker, "token_secret", None) is None:
        return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    if PRINCIPAL.get() is None or TOKEN_AUTHENTICATED.get():
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    return None


def _may(ctx: RequestContext, operation: int, resource_type: int, name: str) -> bool:
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        return True
    acls = ctx.broker.image.security.acls
    principal = PRINCIPAL.get() or ""
    return authorizer.authorize(acls, principal, CLIENT_HOST.get(), operation, resource_type, name)


def _create_fail(body: Any, code: int, version: int) -> dict:
    return {"error_code": code, "principal_type": "", "principal_name": "", "token_id": ""}


@handles(ApiKey.CREATE_DELEGATION_TOKEN, fail=_create_fail, table=TOKEN_APIS)
async def create_delegation_token(ctx: RequestContext, body: Any) -> dict:
    """A token for the requester (or, with CREATE_TOKENS on it, for another user)."""
    code = _refused(ctx)
    if code is None and any(r["principal_type"] != "User" for r in body["renewers"]):
        code = ErrorCode.INVALID_PRINCIPAL_TYPE
    requester = PRINCIPAL.get() or ""
    owner_name = body.get("owner_principal_name")
    owner = (
        f"{body.get('owner_principal_type') or 'User'}:{owner_name}" if owner_name else requester
    )
    others = code is None and owner != requester
    if others and not _may(ctx, AclOperation.CREATE_TOKENS, AclResourceType.USER, owner):
        code = ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    if code is not None:
        return _create_fail(body, code, ctx.api_version)
    kind, name = split_principal(owner)
    forwarded = {
        "owner_principal_type": kind,
        "owner_principal_name": name,
        "renewers": body["renewers"],
        "max_lifetime_ms": body["max_lifetime_ms"],
    }
    response = dict(
        await ctx.broker.forward(ApiKey.CREATE_DELEGATION_TOKEN, CREATE_VERSION, forwarded)
    )
    if ctx.api_version < CREATE_VERSION:
        response.pop("token_requester_principal_type", None)
        response.pop("token_requester_principal_name", None)
    else:
        kind, name = split_principal(requester)
        response["token_requester_principal_type"] = kind
        response["token_requester_principal_name"] = name
    return response


async def _owned(ctx: RequestContext, body: Any, api_key: ApiKey) -> dict:
    code = _refused(ctx)
    if code is None:
        token = find_by_hmac(
            ctx.broker.token_secret, ctx.broker.image.security.tokens, body["hmac"]
        )
        principal = PRINCIPAL.get()
        if token is None:
            code = ErrorCode.DELEGATION_TOKEN_NOT_FOUND
        elif principal != token.owner and principal not in token.renewers:
            code = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    if code is not None:
        return {"error_code": code, "expiry_timestamp_ms": -1}
    return await ctx.broker.forward(api_key, ctx.api_version, body)


@handles(ApiKey.RENEW_DELEGATION_TOKEN, table=TOKEN_APIS)
async def renew_delegation_token(ctx: RequestContext, body: Any) -> dict:
    """A later expiry for a token its owner or a renewer names by HMAC."""
    return await _owned(ctx, body, ApiKey.RENEW_DELEGATION_TOKEN)


@handles(ApiKey.EXPIRE_DELEGATION_TOKEN, table=TOKEN_APIS)
async def expire_delegation_token(ctx: RequestContext, body: Any) -> dict:
    """An earlier expiry (a negative period: now) for a token its owner or a renewer names."""
    return await _owned(ctx, body, ApiKey.EXPIRE_DELEGATION_TOKEN)


@handles(ApiKey.DESCRIBE_DELEGATION_TOKEN, table=TOKEN_APIS)
async def describe_delegation_token(ctx: RequestContext, body: Any) -> dict:
    """The tokens of the owners asked (all when null) the requester may see, with HMACs."""
    code = _refused(ctx)
    if code is not None:
        return {"error_code": code, "tokens": []}
    asked = body["owners"]
    owners = (
        None if asked is None else {f"{o['principal_type']}:{o['principal_name']}" for o in asked}
    )
    principal = PRINCIPAL.get()
    tokens = [
        t
        for t in ctx.broker.image.security.tokens.values()
        if (owners is None or t.owner in owners)
        and (
            principal == t.owner
            or principal in t.renewers
            or _may(ctx, AclOperation.DESCRIBE, AclResourceType.DELEGATION_TOKEN, t.token_id)
        )
    ]
    return {
        "error_code": ErrorCode.NONE,
        "tokens": [_described(ctx, t) for t in sorted(tokens, key=lambda t: t.issue_ms)],
    }


def _described(ctx: RequestContext, token: TokenInfo) -> dict:
    kind, name = split_principal(token.owner)
    requester_kind, requester_name = split_principal(token.requester)
    return {
        "principal_type": kind,
        "principal_name": name,
        "token_requester_principal_type": requester_kind,
        "token_requester_principal_name": requester_name,
        "issue_timestamp": token.issue_ms,
        "expiry_timestamp": token.expiry_ms,
        "max_timestamp": token.max_ms,
        "token_id": token.token_id,
        "hmac": token_hmac(ctx.broker.token_secret, token.token_id),
        "renewers": [
            {"principal_type": k, "principal_name": n}
            for k, n in map(split_principal, token.renewers)
        ],
    }
