"""Who sent the request being served: the connection's authenticated principal.

Set in each client connection's task by the secured listener (`listener.py`): `User:ANONYMOUS`
until TLS or SASL authenticates the client, then its principal; the authorization layer
(`handlers/authorization.py`) reads it. None on connections no secured listener accepted: the
internal listener other nodes dial (and every connection of a PLAINTEXT cluster).
"""

from __future__ import annotations

from contextvars import ContextVar

PRINCIPAL: ContextVar[str | None] = ContextVar("kipwire_principal", default=None)
#: The client's IP address on a secured listener (ACLs match hosts against it).
CLIENT_HOST: ContextVar[str] = ContextVar("kipwire_client_host", default="")
#: Whether the connection authenticated with a delegation token (SCRAM `tokenauth=true`).
TOKEN_AUTHENTICATED: ContextVar[bool] = ContextVar("kipwire_token_authenticated", default=False)
