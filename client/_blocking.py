"""A blocking client connection over a `socket`, on the sans-I/O core in `_core`."""

from __future__ import annotations

import socket
import time
from typing import Any

from kipwire.codec import ApiKey, Response

from ._core import ConnectionCore, InFlight, Reply
from ._errors import ClientError, ConnectionClosedError, RequestTimeoutError
from ._versions import PeerVersions, api_versions_request, retry_version

__all__ = ["Connection", "split_address"]

_READ_SIZE = 1 << 16


def split_address(address: str | tuple[str, int]) -> tuple[str, int]:
    """("host", port) from "host:port" (IPv6 as "[::1]:9092") or from the pair itself."""
    if isinstance(address, tuple):
        return address
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected host:port, got {address!r}")
    return host.strip("[]"), int(port)


class Connection:
    """One TCP connection to a Kafka broker or controller; every wait is bounded by `timeout`.

    `call` sends one request and returns its decoded body; `send` and `receive` pipeline several
    (Kafka answers them in order). Use it as a context manager, or `close` it.
    """

    def __init__(
        self,
        address: str | tuple[str, int],
        *,
        client_id: str | None = "kipwire",
        timeout: float = 10.0,
    ) -> None:
        self.timeout = timeout
        #: The connected socket, for tests that poke at the transport itself.
        self.socket = socket.create_connection(split_address(address), timeout=timeout)
        self._core = ConnectionCore(client_id)
        #: What the peer advertised, once `negotiate_versions` has run.
        self.versions: PeerVersions | None = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def awaiting(self) -> tuple[InFlight, ...]:
        """Requests sent whose answers have not been received, oldest first."""
        return self._core.awaiting

    def close(self) -> None:
        """Close the socket; later use raises ConnectionClosedError."""
        self._core.fail("closed by this side")
        self.socket.close()

    def send(
        self, api_key: int, api_version: int, body: dict, *, trailing: bytes = b""
    ) -> InFlight:
        """Send one request without waiting for its answer (bytes in `trailing` follow the body)."""
        sent, data = self._core.request(api_key, api_version, body, trailing=trailing)
        self._send(data)
        return sent

    def send_frame(
        self, frame: bytes | bytearray | memoryview, *, renumber: bool = True
    ) -> InFlight:
        """Send a request already encoded (header and body), with this connection's next
        correlation id unless `renumber` is False."""
        sent, data = self._core.request_frame(frame, renumber=renumber)
        self._send(data)
        return sent

    def send_bytes(self, data: bytes) -> None:
        """Send bytes as they are, outside the protocol (malformed-input tests); read what they
        provoke with `receive_frame`."""
        self._core.ensure_usable()
        self._send(data)

    def receive(self) -> Reply:
        """The answer to the oldest request awaiting one; after `timeout` s that request is
        abandoned and RequestTimeoutError raised."""
        deadline = time.monotonic() + self.timeout
        oldest = self._core.oldest_awaiting()
        try:
            while (reply := self._core.next_reply()) is None:
                self._read(deadline)
        except RequestTimeoutError:
            assert oldest is not None  # next_reply raised ClientError otherwise
            self._core.abandon(oldest)
            raise
        return reply

    def receive_frame(self) -> bytes:
        """The next response frame, unmatched (see `send_bytes`); ConnectionClosedError when the
        peer closed."""
        deadline = time.monotonic() + self.timeout
        while (frame := self._core.next_frame()) is None:
            self._read(deadline)
        return frame

    def request(self, api_key: int, api_version: int, body: dict) -> Response | None:
        """Send one request and return its decoded response (None for a Produce with acks=0)."""
        self._core.ensure_usable()
        if self._core.awaiting_count:
            raise ClientError(
                f"{self._core.awaiting_count} earlier request(s) await answers: "
                "receive() them first"
            )
        sent = self.send(api_key, api_version, body)
        return self.receive().decode() if sent.expects_response else None

    def call(self, api_key: int, api_version: int, body: dict) -> Any:
        """Send one request and return its decoded response body."""
        response = self.request(api_key, api_version, body)
        if response is None:
            raise ClientError("a Produce with acks=0 gets no answer: send() it instead")
        return response.body

    def negotiate_versions(self) -> PeerVersions:
        """ApiVersions (asked again in the version the peer names, per KIP-511): the peer's
        ranges, kept in `versions`."""
        version, body = api_versions_request()
        response = self.request(ApiKey.API_VERSIONS, version, body)
        assert response is not None
        retry = retry_version(response)
        if retry is not None:
            response = self.request(ApiKey.API_VERSIONS, retry, body)
            assert response is not None
        self.versions = PeerVersions.from_response(response)
        return self.versions

    def _send(self, data: bytes) -> None:
        self.socket.settimeout(self.timeout)
        try:
            self.socket.sendall(data)
        except TimeoutError:
            self._core.fail(f"a send took more than {self.timeout} s")
            raise RequestTimeoutError(f"sending took more than {self.timeout} s") from None
        except OSError as exc:
            self._core.fail(f"sending failed: {exc}")
            raise ConnectionClosedError(f"sending failed: {exc}") from exc

    def _read(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RequestTimeoutError(f"no response within {self.timeout} s")
        self.socket.settimeout(remaining)
        try:
            data = self.socket.recv(_READ_SIZE)
        except TimeoutError:
            raise RequestTimeoutError(f"no response within {self.timeout} s") from None
        except ConnectionResetError:
            data = b""  # a reset ends the stream as a close does
        self._core.receive_data(data)
