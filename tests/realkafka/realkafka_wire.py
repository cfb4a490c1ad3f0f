"""A blocking one-request-at-a-time Kafka connection on kipwire.client, for talking to a real
broker or controller in tests (ApiVersions, DescribeTopicPartitions, raw Produce ...)."""

from __future__ import annotations

from typing import Any

from kipwire.client import ClientError, Connection
from kipwire.codec import Response


class WireConnection:
    """One TCP connection; `call` sends a request and returns the decoded response."""

    def __init__(
        self, host: str, port: int, timeout: float = 10.0, client_id: str = "kipwire"
    ) -> None:
        self.connection = Connection((host, port), client_id=client_id, timeout=timeout)

    def __enter__(self) -> WireConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the socket."""
        self.connection.close()

    def exchange(self, frame: bytes) -> bytes:
        """Send one request frame (no size prefix) as it is and return the response frame."""
        self.connection.send_frame(frame, renumber=False)
        return self.connection.receive().frame

    def call(self, api_key: int, api_version: int, body: dict) -> Response:
        """Send one request and decode its response with kipwire.codec."""
        response = self.connection.request(api_key, api_version, body)
        if response is None:
            raise ClientError("a Produce with acks=0 gets no response")
        return response


def call(port: int, api_key: int, api_version: int, body: dict) -> Any:
    """One request on a fresh connection to 127.0.0.1:`port`; the decoded response body."""
    with WireConnection("127.0.0.1", port) as conn:
        return conn.call(api_key, api_version, body).body
