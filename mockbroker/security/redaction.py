"""Secrets out of recordings: the recorder's tap on a SASL connection sees each client frame
with its secret replaced by `*` bytes of the same length, so frame sizes and offsets stay
true: the password of a PLAIN token, the token of an OAUTHBEARER response, the proof of a
SCRAM client-final message. A frame is read in the SASL state it arrives in (the gate has not
seen it yet): a SaslAuthenticate request, or a bare token after SaslHandshake v0.
"""

from __future__ import annotations

import re

from kipwire.codec import ApiKey, DecodeError, message
from kipwire.codec.framing import peek_request_header

from ..serve import Tap
from .sasl import SaslAuthenticator

_OAUTH = re.compile(rb"auth=Bearer ([^\x01]*)")
_PROOF = re.compile(rb"(?:^|,)p=([^,]*)$")


def redact_token(mechanism: str, token: bytes) -> bytes:
    """The token with its secret part replaced by `*` bytes of the same length."""
    if mechanism == "PLAIN":
        first = token.find(b"\0")
        second = token.find(b"\0", first + 1) if first >= 0 else -1
        return token if second < 0 else token[: second + 1] + b"*" * (len(token) - second - 1)
    pattern = _OAUTH if mechanism == "OAUTHBEARER" else _PROOF
    match = pattern.search(token)
    if match is None:
        return token
    start, end = match.span(1)
    return token[:start] + b"*" * (end - start) + token[end:]


class RedactingTap:
    """A tap that hides the secrets of one SASL connection's frames from the recorder."""

    def __init__(self, tap: Tap, authenticator: SaslAuthenticator) -> None:
        self._tap = tap
        self._auth = authenticator

    def client_sends(self, data: bytes) -> None:
        """A request frame, its secret redacted."""
        self._tap.client_sends(self._redacted(data))

    def server_sends(self, data: bytes) -> None:
        """A response frame, as sent (server messages carry no client secret)."""
        self._tap.server_sends(data)

    def close(self, *, by_client: bool = True) -> None:
        """The connection's end."""
        self._tap.close(by_client=by_client)

    def _redacted(self, data: bytes) -> bytes:
        mechanism = self._auth.mechanism
        if not mechanism:
            return data
        if self._auth.raw_tokens:
            return redact_token(mechanism, data)
        try:
            header = peek_request_header(data)
            if header.api_key != ApiKey.SASL_AUTHENTICATE:
                return data
            body, _ = message("SaslAuthenticateRequest", header.api_version).parse_at(
                data, header.header_size
            )
        except (DecodeError, KeyError):
            return data
        token = bytes(body["auth_bytes"])
        at = data.rfind(token) if token else -1
        if at < header.header_size:
            return data
        return data[:at] + redact_token(mechanism, token) + data[at + len(token) :]
