"""The handler tables of secured clusters: the security APIs beside every other a broker of its
release serves (`registry.handlers_for`), so ApiVersions lists them only where they are served;
with the authorizer, every API checked first (`authorization.py`).

SaslHandshake (17) and SaslAuthenticate (36) are answered by the connection's SASL gate
(`security/listener.py`) before the pipeline; the handlers here only answer what reaches the
pipeline once a connection is authenticated: ILLEGAL_SASL_STATE, as KafkaApis does.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .acls import ACL_APIS
from .authorization import authorized
from .delegation_tokens import TOKEN_APIS
from .registry import Handler, RequestContext, for_release, handlers_for, handles
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


@cache
def secured_handlers(
    release: str, sasl: bool, authorizer: bool, tokens: bool = False
) -> Mapping[int, Handler]:
    """The handler table of a secured broker of `release`: SASL's APIs with SASL, delegation
    tokens with SASL and SCRAM, the ACL APIs and every API's authorization with the authorizer,
    SCRAM credentials always."""
    extra = {**SCRAM_APIS}
    if sasl:
        extra.update(SASL_APIS)
    if tokens:
        extra.update(TOKEN_APIS)
    if authorizer:
        extra.update(ACL_APIS)
    table = {**handlers_for(release), **{k: for_release(h, release) for k, h in extra.items()}}
    return authorized(table) if authorizer else table
