"""A trio client connection over any trio stream, on the sans-I/O core in `_core`.

It runs under whatever clock the trio run uses (a MockClock included), so tests of the mock
cluster measure its timeouts in virtual time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Self

import trio

from kipwire.codec import ApiKey, Response

from ._blocking import split_address
from ._core import ConnectionCore, InFlight, Reply
from ._errors import ClientError, ConnectionClosedError, RequestTimeoutError
from ._versions import PeerVersions, api_versions_request, retry_version

__all__ = ["TrioConnection"]

_READ_SIZE = 1 << 20


def _bounded(timeout: float | None, what: str) -> AbstractContextManager[None]:
    """RequestTimeoutError when the block takes over `timeout` s; None bounds nothing (no
    cancel scope: a broker's replica fetches and controller calls go through here)."""
    return _UNBOUNDED if timeout is None else _bounded_by(timeout, what)


_UNBOUNDED = nullcontext()


@contextmanager
def _bounded_by(timeout: float, what: str) -> Iterator[None]:
    try:
        with trio.fail_after(timeout):
            yield
    except trio.TooSlowError:
        raise RequestTimeoutError(f"{what}: nothing within {timeout} s") from None


class TrioConnection:
    """One connection to a Kafka broker or controller over a trio stream.

    `call` sends one request and returns its decoded body; concurrent `call`s from several tasks
    take turns. `send` and `receive` pipeline several requests from one task. With a `timeout`,
    each request (or receive) that takes longer raises RequestTimeoutError and its answer is
    dropped when it comes; without one, waits are bounded by the caller's cancel scopes.
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        client_id: str | None = "kipwire",
        *,
        timeout: float | None = None,
    ) -> None:
        self.timeout = timeout
        self._stream = stream
        self._core = ConnectionCore(client_id)
        self._lock = trio.Lock()
        #: What the peer advertised, once `negotiate_versions` has run.
        self.versions: PeerVersions | None = None

    @classmethod
    async def connect(
        cls,
        address: str | tuple[str, int],
        *,
        client_id: str | None = "kipwire",
        timeout: float | None = None,
    ) -> Self:
        """Open a TCP connection to "host:port" (within `timeout` s when given)."""
        host, port = split_address(address)
        with _bounded(timeout, f"connecting to {host}:{port}"):
            stream = await trio.open_tcp_stream(host, port)
        return cls(stream, client_id, timeout=timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def awaiting(self) -> tuple[InFlight, ...]:
        """Requests sent whose answers have not been received, oldest first."""
        return self._core.awaiting

    async def aclose(self) -> None:
        """Close the stream; later use raises ConnectionClosedError."""
        self._core.fail("closed by this side")
        await self._stream.aclose()

    async def send(
        self, api_key: int, api_version: int, body: dict, *, trailing: bytes = b""
    ) -> InFlight:
        """Send one request without waiting for its answer (bytes in `trailing` follow the body)."""
        sent, data = self._core.request(api_key, api_version, body, trailing=trailing)
        await self._send(data)
        return sent

    async def send_frame(
        self, frame: bytes | bytearray | memoryview, *, renumber: bool = True
    ) -> InFlight:
        """Send a request already encoded (header and body), with this connection's next
        correlation id unless `renumber` is False."""
        sent, data = self._core.request_frame(frame, renumber=renumber)
        await self._send(data)
        return sent

    async def send_bytes(self, data: bytes) -> None:
        """Send bytes as they are, outside the protocol (malformed-input tests); read what they
        provoke with `receive_frame`."""
        self._core.ensure_usable()
        await self._send(data)

    async def receive(self) -> Reply:
        """The answer to the oldest request awaiting one; a request whose wait times out or is
        cancelled is abandoned (its answer dropped when it comes)."""
        oldest = self._core.oldest_awaiting()
        try:
            with _bounded(self.timeout, "waiting for a response"):
                while (reply := self._core.next_reply()) is None:
                    await self._read()
        except BaseException:
            if oldest is not None:
                self._core.abandon(oldest)
            raise
        return reply

    async def receive_frame(self) -> bytes:
        """The next response frame, unmatched (see `send_bytes`); ConnectionClosedError when the
        peer closed."""
        with _bounded(self.timeout, "waiting for a frame"):
            while (frame := self._core.next_frame()) is None:
                await self._read()
        return frame

    async def request(self, api_key: int, api_version: int, body: dict) -> Response | None:
        """Send one request and return its decoded response (None for a Produce with acks=0)."""
        async with self._lock:
            self._core.ensure_usable()
            if self._core.awaiting_count:
                raise ClientError(
                    f"{self._core.awaiting_count} earlier request(s) await answers: "
                    "receive() them first"
                )
            sent = await self.send(api_key, api_version, body)
            return (await self.receive()).decode() if sent.expects_response else None

    async def call(self, api_key: int, api_version: int, body: dict) -> Any:
        """Send one request and return its decoded response body."""
        response = await self.request(api_key, api_version, body)
        if response is None:
            raise ClientError("a Produce with acks=0 gets no answer: send() it instead")
        return response.body

    async def negotiate_versions(self) -> PeerVersions:
        """ApiVersions (asked again in the version the peer names, per KIP-511): the peer's
        ranges, kept in `versions`."""
        version, body = api_versions_request()
        response = await self.request(ApiKey.API_VERSIONS, version, body)
        assert response is not None
        retry = retry_version(response)
        if retry is not None:
            response = await self.request(ApiKey.API_VERSIONS, retry, body)
            assert response is not None
        self.versions = PeerVersions.from_response(response)
        return self.versions

    async def _send(self, data: bytes) -> None:
        try:
            with _bounded(self.timeout, "sending"):
                await self._stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._core.fail(f"sending failed: {exc!r}")
            raise ConnectionClosedError(f"sending failed: {exc!r}") from exc
        except BaseException:
            # a send cut midway leaves the stream in an unknown state (trio's contract)
            self._core.fail("a send was interrupted midway")
            raise

    async def _read(self) -> None:
        try:
            data = await self._stream.receive_some(_READ_SIZE)
        except trio.BrokenResourceError:
            data = b""  # a reset ends the stream as a close does
        except trio.ClosedResourceError as exc:
            self._core.fail("closed by this side")
            raise ConnectionClosedError("the connection was closed by this side") from exc
        self._core.receive_data(data)
