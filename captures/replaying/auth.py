"""The replay's own way into a secured target: TLS, and SASL with the target's credentials.

A capture's SASL exchange cannot be sent again (kipwire's recorder redacts the secrets, tcpdump
never had them in the clear, and a SCRAM proof answers one nonce only), so the replay
authenticates every connection it opens with the credentials given for the target
(`--security-protocol`, `--sasl-mechanism`, `--user NAME:PASSWORD`, `--ca FILE`, the names
`kipwire-broker serve` uses), and the captured exchange becomes a counted row of the report.
Nothing of the replay's own exchange is recorded: secrets never leave the process.

PLAIN and SCRAM-SHA-256/512 (RFC 5802, as Kafka speaks them: no channel binding) are built here
sans-I/O (`plain_token`, `ScramClient`); `authenticate` runs them over a `TrioConnection`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import ssl
from dataclasses import dataclass

import trio

from kipwire.client import TrioConnection, split_address
from kipwire.codec import ApiKey, ErrorCode

__all__ = [
    "MECHANISMS",
    "PROTOCOLS",
    "AuthError",
    "Credentials",
    "ScramClient",
    "authenticate",
    "open_stream",
    "plain_token",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_GS2_HEADER = b"n,,"  # no channel binding, no authorisation identity


class AuthError(Exception):
    """The target refused the replay's credentials, or its SASL answer made no sense."""


@dataclass(frozen=True)
class Credentials:
    """How the replay connects to the target: protocol, SASL mechanism and user, TLS CA."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    user: str | None = None
    password: str | None = None
    ca: str | None = None

    def __post_init__(self) -> None:
        if self.security_protocol not in PROTOCOLS:
            raise ValueError(
                f"--security-protocol must be one of {', '.join(PROTOCOLS)}, "
                f"not {self.security_protocol!r}"
            )
        if self.sasl:
            if self.sasl_mechanism not in MECHANISMS:
                known = ", ".join(MECHANISMS)
                raise ValueError(f"{self.security_protocol} needs --sasl-mechanism, one of {known}")
            if not self.user or self.password is None:
                raise ValueError(f"{self.security_protocol} needs --user NAME:PASSWORD")
        if self.ca is not None and not os.path.isfile(self.ca):
            raise ValueError(f"--ca {self.ca}: no such file")

    def __repr__(self) -> str:
        # the password stays out of every repr, log and traceback
        return f"Credentials({self.security_protocol}, {self.sasl_mechanism}, user={self.user!r})"

    @classmethod
    def parse(
        cls,
        security_protocol: str = "PLAINTEXT",
        sasl_mechanism: str | None = None,
        user: str | None = None,
        ca: str | None = None,
    ) -> Credentials:
        """From the command's options: `user` is "NAME:PASSWORD"; ValueError when they clash."""
        name, password = None, None
        if user is not None:
            name, sep, password = user.partition(":")
            if not sep or not name:
                raise ValueError("--user must be NAME:PASSWORD")
        return cls(security_protocol, sasl_mechanism, name, password, ca)

    @property
    def tls(self) -> bool:
        """Whether connections are wrapped in TLS."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        """Whether connections authenticate with SASL."""
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def plain_token(user: str, password: str) -> bytes:
    """PLAIN's one message (RFC 4616): no authorisation identity, the user, the password."""
    return b"\0" + user.encode() + b"\0" + password.encode()


def _saslname(user: str) -> str:
    return user.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: bytes) -> dict[str, str]:
    try:
        parts = message.decode().split(",")
        return {p[0]: p[2:] for p in parts if len(p) >= 2 and p[1] == "="}
    except UnicodeDecodeError as exc:
        raise AuthError(f"the SCRAM answer is not text: {exc}") from None


class ScramClient:
    """One SCRAM exchange, sans-I/O: `first()`, then `final(server_first)`, then
    `verify(server_final)` checks the server knew the password too."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None):
        self._hash = _HASHES[mechanism]
        self._password = password.encode()
        self._nonce = nonce or base64.b64encode(os.urandom(24)).decode()
        self._bare = f"n={_saslname(user)},r={self._nonce}".encode()
        self._server_signature = b""

    def first(self) -> bytes:
        """client-first-message."""
        return _GS2_HEADER + self._bare

    def _hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash).digest()

    def final(self, server_first: bytes) -> bytes:
        """client-final-message with the proof, for the server's first message."""
        attrs = _attributes(server_first)
        nonce, salt, rounds = attrs.get("r", ""), attrs.get("s"), attrs.get("i", "")
        if not nonce.startswith(self._nonce) or salt is None or not rounds.isdigit():
            raise AuthError("the SCRAM server-first-message does not continue this exchange")
        salted = hashlib.pbkdf2_hmac(
            self._hash, self._password, base64.b64decode(salt), int(rounds)
        )
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = b"c=" + base64.b64encode(_GS2_HEADER) + b",r=" + nonce.encode()
        auth_message = self._bare + b"," + server_first + b"," + without_proof
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return without_proof + b",p=" + base64.b64encode(proof)

    def verify(self, server_final: bytes) -> None:
        """AuthError unless the server's signature proves it holds the same password."""
        attrs = _attributes(server_final)
        if "e" in attrs:
            raise AuthError(f"SCRAM refused: {attrs['e']}")
        given = base64.b64decode(attrs.get("v", ""))
        if not self._server_signature or not hmac.compare_digest(given, self._server_signature):
            raise AuthError("the SCRAM server signature does not match: not the expected server")


async def _authenticate_step(conn: TrioConnection, version: int, token: bytes) -> bytes:
    body = await conn.call(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})
    if body["error_code"] != ErrorCode.NONE:
        name = ErrorCode(body["error_code"]).name
        raise AuthError(f"SaslAuthenticate: {name}: {body.get('error_message') or ''}".strip())
    return bytes(body["auth_bytes"])


async def authenticate(conn: TrioConnection, creds: Credentials) -> None:
    """SaslHandshake v1, then SaslAuthenticate with the mechanism's messages; AuthError when
    the target refuses."""
    assert creds.sasl_mechanism is not None and creds.user is not None
    assert creds.password is not None
    body = await conn.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": creds.sasl_mechanism})
    if body["error_code"] != ErrorCode.NONE:
        offered = ", ".join(body.get("mechanisms") or ()) or "none"
        raise AuthError(
            f"SaslHandshake {creds.sasl_mechanism}: {ErrorCode(body['error_code']).name} "
            f"(the target offers {offered})"
        )
    version = 1  # SaslAuthenticate v1 carries the session lifetime; v0 is what every broker serves
    if creds.sasl_mechanism == "PLAIN":
        await _authenticate_step(conn, version, plain_token(creds.user, creds.password))
        return
    scram = ScramClient(creds.sasl_mechanism, creds.user, creds.password)
    server_first = await _authenticate_step(conn, version, scram.first())
    server_final = await _authenticate_step(conn, version, scram.final(server_first))
    scram.verify(server_final)


def tls_context(creds: Credentials) -> ssl.SSLContext:
    """The client TLS context: the system's CAs, or only `--ca` when given."""
    return ssl.create_default_context(cafile=creds.ca)


async def open_stream(
    address: str | tuple[str, int], creds: Credentials, timeout: float
) -> tuple[trio.abc.Stream, tuple[str, int]]:
    """A TCP stream to the target (TLS-wrapped, handshake done, when the protocol says so), and
    this side's address for the recording."""
    host, port = split_address(address)
    with trio.fail_after(timeout):
        tcp = await trio.open_tcp_stream(host, port)
        local = tcp.socket.getsockname()[:2]
        if not creds.tls:
            return tcp, local
        stream = trio.SSLStream(tcp, tls_context(creds), server_hostname=host)
        await stream.do_handshake()
    return stream, local
