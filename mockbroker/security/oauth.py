"""SASL/OAUTHBEARER (RFC 7628) with Kafka's unsecured JWS validation, and unsecured tokens for
the client libraries (`UnsecuredTokenProvider`).

Kafka's default (unsecured) validator accepts a JWS whose header says `"alg": "none"`, whose
payload carries the principal claim `sub` and an `exp` (seconds since the epoch, in the
future), and whose signature is empty. A refused token is answered with the error JSON
`{"status":"invalid_token"}` as a challenge; the client's `%x01` reply then fails the exchange
with that JSON as the message.
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

from .errors import AuthenticationFailed

INVALID_TOKEN = '{"status":"invalid_token"}'
_MALFORMED = "Invalid OAUTHBEARER client response"
_RESPONSE = re.compile(r"^n,(a=[^,]*)?,\x01((?:[a-zA-Z]+=[\x21-\x7e \t\r\n]*\x01)*)\x01$", re.S)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def unsecured_token(principal: str, lifetime_s: float = 3600.0, now: float | None = None) -> str:
    """An unsecured JWS (`alg: none`) naming `principal`, expiring in `lifetime_s`."""
    issued = time.time() if now is None else now
    header = _b64url(json.dumps({"alg": "none"}).encode())
    claims = {"sub": principal, "iat": int(issued), "exp": int(issued + lifetime_s)}
    return f"{header}.{_b64url(json.dumps(claims).encode())}."


def validate(token: str, now_ms: int) -> tuple[str, int]:
    """(principal, expiry in ms) of an unsecured JWS; AuthenticationFailed when refused."""
    parts = token.split(".")
    try:
        if len(parts) != 3 or parts[2]:
            raise ValueError("not an unsecured JWS")
        header = json.loads(_unb64url(parts[0]))
        claims = json.loads(_unb64url(parts[1]))
        if not isinstance(header, dict) or header.get("alg") != "none":
            raise ValueError("alg is not none")
        subject, expiry = claims.get("sub"), claims.get("exp")
        if not isinstance(subject, str) or not subject.strip():
            raise ValueError("no sub")
        if isinstance(expiry, bool) or not isinstance(expiry, int | float):
            raise ValueError("no exp")
    except (ValueError, TypeError, AttributeError):
        raise AuthenticationFailed(INVALID_TOKEN, challenge=INVALID_TOKEN.encode()) from None
    expires_ms = int(expiry * 1000)
    if expires_ms <= now_ms:
        raise AuthenticationFailed(INVALID_TOKEN, challenge=INVALID_TOKEN.encode())
    return subject, expires_ms


class OAuthBearerServer:
    """One OAUTHBEARER exchange: the client's initial response, or its `%x01` after an error."""

    mechanism = "OAUTHBEARER"

    def __init__(self, now_ms: int) -> None:
        self._now_ms = now_ms
        self._error: str | None = None
        self.user: str | None = None
        self.complete = False
        self.lifetime_ms: int | None = None

    def evaluate(self, token: bytes) -> bytes:
        """The empty answer on success, the error JSON on a refused token (then a failure)."""
        if self._error is not None:
            # the client acknowledged the error challenge (%x01): the exchange fails with it
            raise AuthenticationFailed(self._error)
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed(_MALFORMED, generic=True) from None
        match = _RESPONSE.match(text)
        if match is None:
            raise AuthenticationFailed(_MALFORMED, generic=True)
        pairs = dict(p.split("=", 1) for p in match.group(2).split("\x01") if p)
        auth = pairs.get("auth", "")
        if not auth.startswith("Bearer "):
            raise AuthenticationFailed(_MALFORMED, generic=True)
        try:
            self.user, expires_ms = validate(auth[len("Bearer ") :].strip(), self._now_ms)
        except AuthenticationFailed as exc:
            self._error = str(exc)
            return exc.challenge or b""
        authzid = (match.group(1) or "")[2:]
        if authzid and authzid != self.user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from the token's principal name"
            )
        self.lifetime_ms = expires_ms - self._now_ms
        self.complete = True
        return b""


def kafka_python_token_provider(principal: str, lifetime_s: float = 3600.0) -> Any:
    """A token provider for kafka-python, which wants its own base class: unsecured tokens."""
    try:
        from kafka.net.sasl.oauth import AbstractTokenProvider
    except ImportError:  # kafka-python before 3.0
        from kafka.sasl.oauth import AbstractTokenProvider

    class _Provider(AbstractTokenProvider):
        def token(self) -> str:
            return unsecured_token(principal, lifetime_s)

    return _Provider()


def aiokafka_token_provider(principal: str, lifetime_s: float = 3600.0) -> Any:
    """A token provider for aiokafka, which wants its own base class and a coroutine."""
    from aiokafka.abc import AbstractTokenProvider

    class _Provider(AbstractTokenProvider):
        async def token(self) -> str:
            return unsecured_token(principal, lifetime_s)

    return _Provider()
