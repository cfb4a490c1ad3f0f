"""A blocking one-request-at-a-time Kafka connection built on kipwire.codec, for talking to a
real broker or controller in tests (ApiVersions, DescribeTopicPartitions, raw Produce ...)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kipwire.codec import Response, decode_response, encode_request

_SIZE = struct.Struct(">i")


class WireConnection:
    """One TCP connection; `call` sends a request and returns the decoded response."""

    def __init__(
        self, host: str, port: int, timeout: float = 10.0, client_id: str = "kipwire"
    ) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self._correlation = 0

    def __enter__(self) -> WireConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def call_raw(self, api_key: int, api_version: int, body: dict) -> tuple[int, bytes]:
        """Send one request; returns (correlation id, the response frame without its size)."""
        self._correlation += 1
        frame = encode_request(
            api_key,
            api_version,
            body,
            correlation_id=self._correlation,
            client_id=self.client_id,
        )
        return self._correlation, self.exchange(frame)

    def exchange(self, frame: bytes) -> bytes:
        """Send one request frame (no size prefix) and return the response frame."""
        self.sock.sendall(_SIZE.pack(len(frame)) + frame)
        (size,) = _SIZE.unpack(self._read(4))
        return self._read(size)

    def call(self, api_key: int, api_version: int, body: dict) -> Response:
        """Send one request and decode its response with kipwire.codec."""
        correlation, data = self.call_raw(api_key, api_version, body)
        response = decode_response(data, api_key, api_version)
        if response.correlation_id != correlation:
            raise ConnectionError(
                f"correlation id {response.correlation_id} answers request {correlation}"
            )
        return response

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"peer closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)


def call(port: int, api_key: int, api_version: int, body: dict) -> Any:
    """One request on a fresh connection to 127.0.0.1:`port`; the decoded response body."""
    with WireConnection("127.0.0.1", port) as conn:
        return conn.call(api_key, api_version, body).body
