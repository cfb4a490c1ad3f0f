"""The handler tables of secured clusters: the security APIs beside every other (`HANDLERS`),
and ApiVersions listing them, so they are advertised only where they are served; with the
authorizer, every API checked first (`authorization.py`).

SaslHandshake (17) and SaslAuthenticate (36) are answered by the connection's SASL gate
(`security/listener.py`) before the pipeline; the handlers here only answer what reaches the
pipeline once a connection is authenticated: ILLEGAL_SASL_STATE, as KafkaApis does.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .acls import ACL_APIS
from .api_versions import unsupported_version_reply
from .authorization import authorized
from .delegation_tokens import TOKEN_APIS
from .registry import HANDLERS, Handler, RequestContext, handles
from .scram_credentials import SCRAM_APIS

#: APIs served when the cluster authenticates with SASL.
SASL_APIS: dict[int, Handler] = {}


@handles(ApiKey.SASL_HANDSHAKE, table=SASL_APIS)
async def sasl_handshake(ctx: RequestContext, body: Any) -> dict:
    """A handshake on an authenticated connection that is not a re-authentication."""
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}


@handles(ApiKey.SASL_AUTHENTICATE, table=SASL_APIS)
async def sasl_authenticate(ctx: RequestContext, body: Any) -> dict:
    """SaslAuthenticate after a successful authentication, as KafkaApis answers it."""
    return {
        "error_code": ErrorCode.ILLEGAL_SASL_STATE,
        "error_message": "SaslAuthenticate request received after successful authentication",
    }


_LISTED: dict[int, Handler] = {}


@handles(ApiKey.API_VERSIONS, unsupported=unsupported_version_reply, table=_LISTED)
async def api_versions(ctx: RequestContext, body: Any) -> dict:
    """ApiVersions with the security APIs this broker serves added to the list."""
    response = await HANDLERS[ApiKey.API_VERSIONS].handle(ctx, body)
    table = getattr(ctx.broker, "handlers", HANDLERS)
    listed = {k["api_key"] for k in response["api_keys"]}
    extra = [
        {"api_key": h.api_key, "min_version": h.advertised_min, "max_version": h.max_version}
        for key, h in table.items()
        if key not in listed
    ]
    response["api_keys"] = sorted([*response["api_keys"], *extra], key=lambda k: k["api_key"])
    return response


@cache
def secured_handlers(sasl: bool, authorizer: bool, tokens: bool = False) -> dict[int, Handler]:
    """The handler table of a secured broker: SASL's APIs with SASL, delegation tokens with
    SASL and SCRAM, the ACL APIs and every API's authorization with the authorizer, SCRAM
    credentials always."""
    table = {**HANDLERS, **_LISTED, **SCRAM_APIS}
    if sasl:
        table.update(SASL_APIS)
    if tokens:
        table.update(TOKEN_APIS)
    if authorizer:
        table.update(ACL_APIS)
        table = authorized(table)
    return table
