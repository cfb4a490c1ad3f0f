"""Test-side SASL: a SCRAM client (RFC 5802) and a wire connection that authenticates, over
TCP or TLS, for tests that speak the protocol byte by byte."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ssl
from typing import Any

from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode

HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class ScramClient:
    """The client side of one SCRAM exchange."""

    def __init__(
        self, mechanism: str, user: str, password: str, nonce: str = "fyko+d2lbbFgONRv9qkxdawL"
    ) -> None:
        self.hash = HASH[mechanism]
        self.user, self.password, self.nonce = user, password, nonce
        self.first_bare = f"n={user},r={nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        """The client-first message."""
        return f"n,,{self.first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        """The client-final message for the server-first one."""
        attrs = dict(p.split("=", 1) for p in server_first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(
            self.hash, self.password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"])
        )
        client_key = hmac.digest(salted, b"Client Key", self.hash)
        stored = hashlib.new(self.hash, client_key).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.digest(stored, auth, self.hash)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self.hash)
        self.server_signature = hmac.digest(server_key, auth, self.hash)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def connect(address: str, ca: str | None = None, timeout: float = 5.0) -> WireClient:
    """A wire client, over TLS when `ca` is given."""
    client = WireClient(address, timeout=timeout)
    if ca is not None:
        context = ssl.create_default_context(cafile=ca)
        client.connection.socket = context.wrap_socket(
            client.connection.socket, server_hostname="127.0.0.1"
        )
    return client


def handshake(client: WireClient, mechanism: str, version: int = 1) -> Any:
    """SaslHandshake; its response body."""
    return client.call(ApiKey.SASL_HANDSHAKE, version, {"mechanism": mechanism})


def authenticate(client: WireClient, token: bytes, version: int = 2) -> Any:
    """One SaslAuthenticate; its response body."""
    return client.call(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})


def scram_login(client: WireClient, mechanism: str, user: str, password: str) -> Any:
    """A whole SCRAM exchange; the last SaslAuthenticate response body."""
    assert handshake(client, mechanism)["error_code"] == ErrorCode.NONE
    scram = ScramClient(mechanism, user, password)
    first = authenticate(client, scram.first())
    if first["error_code"]:
        return first
    final = authenticate(client, scram.final(first["auth_bytes"]))
    if final["error_code"] == ErrorCode.NONE:
        assert final["auth_bytes"] == b"v=" + base64.b64encode(scram.server_signature)
    return final


def plain_login(client: WireClient, user: str, password: str) -> Any:
    """A PLAIN exchange; the SaslAuthenticate response body."""
    assert handshake(client, "PLAIN")["error_code"] == ErrorCode.NONE
    return authenticate(client, f"\0{user}\0{password}".encode())
