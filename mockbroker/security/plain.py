"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer checks it against the configured users."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from .errors import AuthenticationFailed


class PlainServer:
    """One PLAIN exchange: a single client message `authzid NUL user NUL password`."""

    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.user: str | None = None
        self.complete = False
        #: A PLAIN exchange has no expiry of its own (only connections.max.reauth.ms).
        self.lifetime_ms: int | None = None

    def evaluate(self, token: bytes) -> bytes:
        """Check the credentials; an empty answer on success."""
        try:
            parts = token.decode().split("\0")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid SASL/PLAIN response", generic=True) from None
        if len(parts) != 3:
            raise AuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}", generic=True
            )
        authzid, user, password = parts
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.user = user
        self.complete = True
        return b""
