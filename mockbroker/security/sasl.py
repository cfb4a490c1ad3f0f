"""The SASL side of one client connection, as Kafka's SaslServerAuthenticator runs it (sans-I/O).

Frames in (`receive`), `Step`s out: a response to send, the frame to pass on to the node's
serve pipeline, a close. The states, in Kafka's order:

- before the handshake: ApiVersions (answered by the node, once) and SaslHandshake only; any
  other request closes the connection unanswered (InvalidRequestException in Kafka).
- SaslHandshake v1: SaslAuthenticate requests carry the mechanism's tokens; any other request
  is answered ILLEGAL_SASL_STATE and closes. v0: the tokens follow as bare size-prefixed frames.
  An unknown mechanism is answered UNSUPPORTED_SASL_MECHANISM with the enabled list, and closes.
- a refused token: SASL_AUTHENTICATION_FAILED with Kafka's message (its generic one when the
  mechanism's own text could tell whether the user exists), sent after
  `connection.failed.authentication.delay.ms`, then the connection closes.
- authenticated: requests pass to the node; SaslAuthenticate is answered ILLEGAL_SASL_STATE.
  With a session lifetime (KIP-368: `connections.max.reauth.ms`, a token's expiry) a
  SaslHandshake starts re-authentication (same mechanism, same principal), and any other
  request after the session expired closes the connection.

Until authenticated, frames are limited to `sasl.server.max.receive.size` (Kafka's 512 KiB):
a larger size prefix closes the connection before its bytes are read.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kipwire.codec import ApiKey, DecodeError, EncodeError, ErrorCode, encode_response, message
from kipwire.codec.framing import peek_request_header

from .errors import AuthenticationFailed

#: Kafka's sasl.server.max.receive.size default: the largest frame before authentication.
MAX_RECEIVE_SIZE = 524288
_SIZE = struct.Struct(">i").pack


class Mechanism(Protocol):
    """A mechanism's server: tokens in, challenges out (`plain`, `scram`, `oauth`)."""

    mechanism: str
    user: str | None
    lifetime_ms: int | None

    @property
    def complete(self) -> bool:
        """Whether the exchange ended in success."""
        ...

    def evaluate(self, token: bytes) -> bytes:
        """The server's answer to the client's next token; AuthenticationFailed if refused."""
        ...


@dataclass(frozen=True, slots=True)
class Step:
    """What the connection does with one frame."""

    #: A size-prefixed frame to send.
    response: bytes | None = None
    #: Pass the frame to the node's serve pipeline (ApiVersions, and everything once authenticated).
    forward: bool = False
    #: Close the connection (after sending `response`, if any).
    close: bool = False
    #: Wait connection.failed.authentication.delay.ms before sending (a failed authentication).
    delay: bool = False
    #: Why the connection closes, for the broker's log.
    reason: str = ""


def _frame(payload: bytes) -> bytes:
    return _SIZE(len(payload)) + payload


class SaslAuthenticator:
    """One connection's SASL state; `principal` once authenticated."""

    def __init__(
        self,
        mechanisms: Sequence[str],
        make_server: Callable[[str], Mechanism],
        now_ms: Callable[[], int],
        reauth_ms: int = 0,
    ) -> None:
        self._mechanisms = list(mechanisms)
        self._make_server = make_server
        self._now_ms = now_ms
        self._reauth_ms = reauth_ms
        self._state = "handshake_or_versions"
        self._server: Mechanism | None = None
        self._mechanism = ""
        self._expires_at: int | None = None
        self._reauthenticating = False
        self._bad_mechanism = ""
        self.principal: str | None = None
        #: Whether the session was authenticated with a delegation token.
        self.token_authenticated = False

    @property
    def mechanism(self) -> str:
        """The mechanism the client chose ("" before its handshake)."""
        return self._mechanism

    @property
    def raw_tokens(self) -> bool:
        """Whether the next frame is a bare token (after SaslHandshake v0)."""
        return self._state == "raw"

    @property
    def authenticated(self) -> bool:
        """Whether requests now pass to the node."""
        return self._state == "complete"

    @property
    def max_frame_size(self) -> int | None:
        """The frame limit while authenticating; None once the node's own limit applies."""
        return None if self._state == "complete" else MAX_RECEIVE_SIZE

    def receive(self, data: memoryview) -> Step:
        """The step for one frame (its size prefix already taken off)."""
        if self._state == "raw":
            return self._raw_token(bytes(data))
        try:
            header = peek_request_header(data)
        except DecodeError:
            return Step(close=True, reason="not a Kafka request during SASL authentication")
        key, version, cid = header.api_key, header.api_version, header.correlation_id
        if self._state == "complete":
            return self._authenticated(key, version, cid, data, header.header_size)
        if self._state in ("handshake_or_versions", "handshake"):
            if key == ApiKey.API_VERSIONS and self._state == "handshake_or_versions":
                self._state = "handshake"
                return Step(forward=True)
            if key != ApiKey.SASL_HANDSHAKE:
                name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
                return Step(close=True, reason=f"unexpected {name} during SASL handshake")
            return self._handshake(version, cid, data, header.header_size)
        # "authenticate": SaslAuthenticate requests only
        if key != ApiKey.SASL_AUTHENTICATE:
            return Step(
                _error_frame(key, version, cid, ErrorCode.ILLEGAL_SASL_STATE),
                close=True,
                reason="a request other than SaslAuthenticate during SASL authentication",
            )
        body = _parse("SaslAuthenticateRequest", version, data, header.header_size)
        if body is None:
            return Step(close=True, reason="malformed SaslAuthenticate")
        return self._authenticate(version, cid, bytes(body["auth_bytes"]))

    # -- states ---------------------------------------------------------------------------------

    def _handshake(self, version: int, cid: int, data: memoryview, at: int) -> Step:
        body = _parse("SaslHandshakeRequest", version, data, at)
        if body is None:
            return Step(close=True, reason="malformed SaslHandshake")
        mechanism = body["mechanism"]
        if mechanism not in self._mechanisms:
            reply = {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM}
            return Step(
                self._handshake_reply(version, cid, reply),
                close=True,
                reason=f"unsupported SASL mechanism {mechanism[:40]!r}",
            )
        reply = self._handshake_reply(version, cid, {"error_code": ErrorCode.NONE})
        if self._reauthenticating and mechanism != self._mechanism:
            # Kafka answers the handshake, then fails the first token (REAUTH_BAD_MECHANISM)
            self._state = "bad_mechanism"
            self._bad_mechanism = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._mechanism}'"
            )
            return Step(reply)
        self._mechanism = mechanism
        self._server = self._make_server(mechanism)
        self._state = "authenticate" if version >= 1 else "raw"
        return Step(reply)

    def _handshake_reply(self, version: int, cid: int, body: dict) -> bytes:
        body["mechanisms"] = self._mechanisms
        return _frame(encode_response(ApiKey.SASL_HANDSHAKE, version, body, correlation_id=cid))

    def _authenticate(self, version: int, cid: int, token: bytes) -> Step:
        def reply(body: dict) -> bytes:
            return _frame(
                encode_response(ApiKey.SASL_AUTHENTICATE, version, body, correlation_id=cid)
            )

        if self._state == "bad_mechanism":
            return Step(close=True, delay=True, reason=self._bad_mechanism)
        assert self._server is not None
        try:
            challenge = self._server.evaluate(token)
            lifetime = self._finish() if self._server.complete else 0
        except AuthenticationFailed as exc:
            text = str(exc)
            if exc.generic:
                text = (
                    f"Authentication failed during {self._phase} due to invalid credentials "
                    f"with SASL mechanism {self._mechanism}"
                )
            failed = {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": text}
            return Step(reply(failed), close=True, delay=True, reason="authentication failed")
        body = {"error_code": ErrorCode.NONE, "auth_bytes": challenge}
        if version >= 1:
            body["session_lifetime_ms"] = lifetime
        return Step(reply(body))

    def _raw_token(self, token: bytes) -> Step:
        # SaslHandshake v0: tokens travel as bare frames; a failure just closes
        assert self._server is not None
        try:
            challenge = self._server.evaluate(token)
            if self._server.complete:
                self._finish()
        except AuthenticationFailed:
            return Step(close=True, delay=True, reason="authentication failed")
        return Step(_frame(challenge))

    @property
    def _phase(self) -> str:
        return "re-authentication" if self._reauthenticating else "authentication"

    def _finish(self) -> int:
        """Authenticated: the principal and the session lifetime (0: none) in ms."""
        assert self._server is not None and self._server.user is not None
        principal = f"User:{self._server.user}"
        if self._reauthenticating and principal != self.principal:
            raise AuthenticationFailed(
                f"Cannot change principals during re-authentication from {self.principal}: "
                f"{principal}"
            )
        now = self._now_ms()
        credential = self._server.lifetime_ms
        lifetime = 0
        if credential is not None or self._reauth_ms > 0:
            limits = [credential] if credential is not None else []
            if self._reauth_ms > 0:
                limits.append(self._reauth_ms)
            lifetime = max(0, min(limits))
            self._expires_at = now + lifetime
        else:
            self._expires_at = None
        self.principal = principal
        self.token_authenticated = getattr(self._server, "token_authenticated", False)
        self._state = "complete"
        self._reauthenticating = False
        return lifetime

    def _authenticated(self, key: int, version: int, cid: int, data: memoryview, at: int) -> Step:
        if key == ApiKey.SASL_HANDSHAKE and self._expires_at is not None and version >= 1:
            self._reauthenticating = True
            return self._handshake(version, cid, data, at)
        if self._expires_at is not None and self._now_ms() >= self._expires_at:
            return Step(close=True, reason="SASL session expired without re-authentication")
        if key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return Step(_error_frame(key, version, cid, ErrorCode.ILLEGAL_SASL_STATE))
        return Step(forward=True)


def _parse(name: str, version: int, data: memoryview, at: int) -> dict | None:
    try:
        body, _ = message(name, version).parse_at(data, at)
    except (DecodeError, KeyError):
        return None
    return body


def _error_frame(key: int, version: int, cid: int, code: int) -> bytes | None:
    try:
        return _frame(encode_response(key, version, {"error_code": code}, correlation_id=cid))
    except (DecodeError, EncodeError, KeyError, TypeError, ValueError):
        return None
