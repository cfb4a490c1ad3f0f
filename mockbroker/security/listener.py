"""A secured client listener: TLS (trio's SSLStream) under the serve pipeline, SASL in front of it.

`ListenerSecurity.serve` takes a connection the node accepted: it completes the TLS handshake
(a client that stops half-way, or speaks plaintext to a TLS port, is dropped after
`HANDSHAKE_TIMEOUT` or at its first bad byte), then serves it through `serve.serve_connection`
with a `SaslGate` when the protocol is SASL_*: the gate answers the SASL exchange itself and
hands every other frame to the pipeline once the client is authenticated. The principal
(`context.PRINCIPAL`) is the SASL user, else the client certificate's DN, else ANONYMOUS.
The recorder's tap sees the frames on the plaintext side of TLS, with secrets redacted.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable

import trio

from kipwire.codec.framing import FrameBuffer

from ..serve import CloseConnection, Endpoint, Tap, answer_request, serve_connection
from .context import CLIENT_HOST, PRINCIPAL, TOKEN_AUTHENTICATED
from .redaction import RedactingTap
from .sasl import SaslAuthenticator
from .tls import ANONYMOUS, certificate_principal

#: How long a client may take to complete the TLS handshake before it is dropped.
HANDSHAKE_TIMEOUT = 10.0


class ListenerSecurity:
    """How one node's client listener is secured: its TLS context and SASL authenticators."""

    def __init__(
        self,
        context: ssl.SSLContext | None,
        authenticator: Callable[[], SaslAuthenticator] | None,
        failed_authentication_delay: float,
    ) -> None:
        self._context = context
        self._authenticator = authenticator
        self._delay = failed_authentication_delay

    async def serve(self, stream: trio.SocketStream, node: Endpoint, tap: Tap | None) -> None:
        """Serve one accepted connection until it closes."""
        served: trio.abc.Stream = stream
        principal = ANONYMOUS
        if self._context is not None:
            tls = trio.SSLStream(stream, self._context, server_side=True)
            try:
                with trio.fail_after(HANDSHAKE_TIMEOUT):
                    await tls.do_handshake()
            except (trio.BrokenResourceError, trio.TooSlowError) as exc:
                node.log.info("closing a connection: TLS handshake failed: %r", exc)
                if tap is not None:
                    tap.close(by_client=False)
                await trio.aclose_forcefully(stream)
                return
            served = tls
            principal = certificate_principal(tls.getpeercert(binary_form=True))
        PRINCIPAL.set(principal)
        CLIENT_HOST.set(stream.socket.getpeername()[0])
        gate = None
        if self._authenticator is not None:
            authenticator = self._authenticator()
            gate = SaslGate(authenticator, self._delay)
            if tap is not None:
                tap = RedactingTap(tap, authenticator)
        await serve_connection(served, node, tap, gate)


class SaslGate:
    """The SASL exchange in front of the serve pipeline, for one connection."""

    def __init__(self, authenticator: SaslAuthenticator, delay: float) -> None:
        self._auth = authenticator
        self._delay = delay
        self._stream: trio.abc.Stream | None = None
        self._frames: FrameBuffer | None = None
        self._tap: Tap | None = None

    def bind(
        self, stream: trio.abc.Stream, frames: FrameBuffer, tap: Tap | None
    ) -> Callable[[Endpoint, memoryview], Awaitable[bytes | bytearray | None]]:
        """The connection's answer function (frames are limited until authenticated)."""
        self._stream, self._frames, self._tap = stream, frames, tap
        limit = self._auth.max_frame_size
        if limit is not None:
            frames.max_frame_size = min(frames.max_frame_size, limit)
        return self.answer

    async def answer(self, node: Endpoint, data: memoryview) -> bytes | bytearray | None:
        """The response to one frame: the SASL exchange's, or the node's once authenticated."""
        assert self._stream is not None and self._frames is not None
        step = self._auth.receive(data)
        if step.forward:
            return await answer_request(node, data)
        if step.delay:
            # connection.failed.authentication.delay.ms: slows password guessing, alone
            await trio.sleep(self._delay)
        if step.close:
            if step.response is not None:
                if self._tap is not None:
                    self._tap.server_sends(step.response)
                await self._stream.send_all(step.response)
            raise CloseConnection(step.reason)
        limit = self._auth.max_frame_size
        self._frames.max_frame_size = node.max_request_bytes if limit is None else limit
        if self._auth.authenticated and self._auth.principal is not None:
            PRINCIPAL.set(self._auth.principal)
            TOKEN_AUTHENTICATED.set(self._auth.token_authenticated)
        return step.response
