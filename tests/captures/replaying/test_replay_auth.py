"""The replay's own authentication: PLAIN and SCRAM against a scripted SASL peer, the options'
checks, and captured SASL exchanges left to the target's credentials."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import shutil
import ssl
import subprocess
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

from kipwire import codec
from kipwire.captures import replay
from kipwire.captures.pcap import PcapngWriter
from kipwire.captures.replaying import extract as ex
from kipwire.captures.replaying.auth import (
    AuthError,
    Credentials,
    ScramClient,
    authenticate,
    open_stream,
    plain_token,
)
from kipwire.captures.replaying.replay import ReplayError
from kipwire.client import TrioConnection
from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.framing import FrameBuffer
from kipwire.mockbroker import MockCluster

# RFC 7677's SCRAM-SHA-256 example exchange
RFC_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha_256_follows_the_rfc_example() -> None:
    scram = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_NONCE)
    assert scram.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert scram.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    scram.verify(RFC_SERVER_FINAL)
    with pytest.raises(AuthError, match="signature"):
        scram.verify(b"v=" + base64.b64encode(b"\0" * 32))
    with pytest.raises(AuthError, match="does not continue"):
        ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="other").final(RFC_SERVER_FIRST)


def test_plain_token_and_credentials() -> None:
    assert plain_token("alice", "s3cret") == b"\0alice\0s3cret"
    creds = Credentials.parse("SASL_PLAINTEXT", "PLAIN", "alice:s3:cret")
    assert (creds.user, creds.password, creds.sasl, creds.tls) == ("alice", "s3:cret", True, False)
    assert "s3:cret" not in repr(creds)
    for bad in (
        {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"},
        {"security_protocol": "SASL_PLAINTEXT", "user": "a:b"},
        {"security_protocol": "TLS"},
        {"user": "no-password"},
        {"ca": "/no/such/ca.pem"},
    ):
        with pytest.raises(ValueError):
            Credentials.parse(**bad)


class _SaslPeer:
    """A broker's SASL side, scripted: PLAIN and SCRAM-SHA-512 for alice/s3cret."""

    def __init__(self, stream: trio.abc.Stream, password: str = "s3cret") -> None:
        self.stream = stream
        self.password = password.encode()
        self.frames = FrameBuffer()
        self.mechanism = ""
        self.salt, self.rounds, self.nonce, self.first_bare = b"salt", 4096, "", b""
        self.authenticated = False

    async def serve(self) -> None:
        while True:
            data = await self.stream.receive_some(1 << 16)
            if not data:
                return
            self.frames.feed(data)
            while (frame := self.frames.next_frame()) is not None:
                request = codec.decode_request(bytes(frame))
                body = self.answer(request.api_key, request.body)
                out = codec.encode_response(
                    request.api_key,
                    request.api_version,
                    body,
                    correlation_id=request.correlation_id,
                )
                await self.stream.send_all(len(out).to_bytes(4, "big") + out)

    def answer(self, api_key: int, body: dict) -> dict:
        if api_key == ApiKey.SASL_HANDSHAKE:
            self.mechanism = body["mechanism"]
            ok = self.mechanism in ("PLAIN", "SCRAM-SHA-512")
            code = ErrorCode.NONE if ok else ErrorCode.UNSUPPORTED_SASL_MECHANISM
            return {"error_code": code, "mechanisms": ["PLAIN", "SCRAM-SHA-512"]}
        token = bytes(body["auth_bytes"])
        if self.mechanism == "PLAIN":
            return self._done(token == b"\0alice\0" + self.password)
        if not self.nonce:  # client-first
            self.first_bare = token[3:]
            self.nonce = token.decode().split("r=", 1)[1] + "server"
            salt = base64.b64encode(self.salt).decode()
            reply = f"r={self.nonce},s={salt},i={self.rounds}".encode()
            self.server_first = reply
            return {"error_code": ErrorCode.NONE, "auth_bytes": reply}
        without_proof, _, proof = token.rpartition(b",p=")
        salted = hashlib.pbkdf2_hmac("sha512", self.password, self.salt, self.rounds)
        key = hmac.new(salted, b"Client Key", "sha512").digest()
        message = self.first_bare + b"," + self.server_first + b"," + without_proof
        signature = hmac.new(hashlib.sha512(key).digest(), message, "sha512").digest()
        expected = bytes(a ^ b for a, b in zip(key, signature, strict=True))
        if base64.b64decode(proof) != expected:
            return self._done(False)
        server_key = hmac.new(salted, b"Server Key", "sha512").digest()
        verifier = base64.b64encode(hmac.new(server_key, message, "sha512").digest())
        self.authenticated = True
        return {"error_code": ErrorCode.NONE, "auth_bytes": b"v=" + verifier}

    def _done(self, ok: bool) -> dict:
        self.authenticated = ok
        code = ErrorCode.NONE if ok else ErrorCode.SASL_AUTHENTICATION_FAILED
        return {"error_code": code, "error_message": None if ok else "bad credentials"}


async def _authenticate_with(
    creds: Credentials, password: str = "s3cret"
) -> tuple[_SaslPeer, AuthError | None]:
    ours, theirs = trio.testing.memory_stream_pair()
    peer = _SaslPeer(theirs, password)
    refused = None
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.serve)
            try:
                await authenticate(TrioConnection(ours, "replay"), creds)
            except AuthError as exc:
                refused = exc
            finally:
                await ours.aclose()
    return peer, refused


@pytest.mark.trio
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
async def test_authenticate_with_the_targets_credentials(mechanism: str) -> None:
    creds = Credentials.parse("SASL_PLAINTEXT", mechanism, "alice:s3cret")
    peer, refused = await _authenticate_with(creds)
    assert peer.authenticated and peer.mechanism == mechanism and refused is None
    peer, refused = await _authenticate_with(creds, password="other")
    assert not peer.authenticated and "SASL_AUTHENTICATION_FAILED" in str(refused)


@pytest.mark.trio
async def test_a_mechanism_the_target_lacks_is_refused() -> None:
    creds = Credentials.parse("SASL_PLAINTEXT", "SCRAM-SHA-256", "alice:s3cret")
    _peer, refused = await _authenticate_with(creds)
    assert "UNSUPPORTED_SASL_MECHANISM (the target offers PLAIN, SCRAM-SHA-512)" in str(refused)


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by openssl (skip without it)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@pytest.mark.trio
async def test_tls_trusts_the_given_ca_only(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)

    async def echo(stream: trio.SSLStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError):  # the refused client hangs up
            await stream.send_all(await stream.receive_some(64))

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            (listener,) = await nursery.start(
                partial(trio.serve_ssl_over_tcp, echo, 0, server_ctx, host="127.0.0.1")
            )
            port = listener.transport_listener.socket.getsockname()[1]
            trusted = Credentials.parse("SSL", ca=str(cert))
            stream, local = await open_stream(("127.0.0.1", port), trusted, 10)
            await stream.send_all(b"ping")
            assert await stream.receive_some(64) == b"ping" and local[0] == "127.0.0.1"
            await stream.aclose()
            with pytest.raises(trio.BrokenResourceError):  # the system CAs do not know it
                await open_stream(("127.0.0.1", port), Credentials.parse("SSL"), 10)
            nursery.cancel_scope.cancel()


def _sasl_capture(path: Path) -> None:
    """A client that authenticates (its secret redacted), then asks Metadata."""
    frames = [
        (ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, {"mechanisms": ["PLAIN"]}),
        (ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0app\0******"}, {}),
        (ApiKey.METADATA, 12, {"topics": None}, {"brokers": [], "topics": []}),
    ]
    with PcapngWriter(path) as pcap:
        conv = pcap.conversation(("10.0.0.1", 50000), ("10.0.0.2", 9092))
        for n, (key, version, request, answer) in enumerate(frames):
            req = codec.encode_request(key, version, request, correlation_id=n, client_id="app")
            resp = codec.encode_response(key, version, answer, correlation_id=n)
            conv.client_sends(len(req).to_bytes(4, "big") + req)
            conv.server_sends(len(resp).to_bytes(4, "big") + resp)
        conv.close()


def test_a_sasl_connection_waits_for_the_targets_credentials(tmp_path: Path) -> None:
    _sasl_capture(tmp_path / "sasl.pcapng")
    without = ex.extract([tmp_path / "sasl.pcapng"])
    assert not without.connections
    assert [(r.reason, r.requests) for r in without.not_replayed] == [(ex.SASL, 3)]
    found = ex.extract([tmp_path / "sasl.pcapng"], sasl=True)
    assert [len(c.exchanges) for c in found.connections] == [3]
    # the mock serves no SASL: it closes the connection, and the replay says so in one line
    with MockCluster(brokers=1) as target, pytest.raises(ReplayError, match="refused"):
        replay(
            [tmp_path / "sasl.pcapng"],
            bootstrap=target.bootstrap_servers,
            out=tmp_path / "out",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            user="app:secret",
        )
