"""A blocking test client on kipwire.client: the package's connection, plus raw-byte helpers for
malformed-input tests and the correlation-id-returning `send` the tests use."""

from __future__ import annotations

from typing import Any

from kipwire.client import Connection, ConnectionClosedError
from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, Response


class WireClient:
    """One connection to a broker (client id "test"); `call` sends a request and decodes its
    response."""

    def __init__(self, address: str, timeout: float = 5.0) -> None:
        self.connection = Connection(address, client_id="test", timeout=timeout)

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.connection.close()

    def send_raw(self, payload: bytes) -> None:
        """Send bytes as they are (no size prefix added)."""
        self.connection.send_bytes(payload)

    def send(self, api_key: int, version: int, body: dict, *, trailing: bytes = b"") -> int:
        """Send one request (with optional bytes after the body); return its correlation id."""
        return self.connection.send(api_key, version, body, trailing=trailing).correlation_id

    def receive_frame(self) -> bytes:
        """The next response frame (without its size prefix); b"" when the broker closed."""
        try:
            return self.connection.receive_frame()
        except ConnectionClosedError:
            return b""

    def receive(self, api_key: int, version: int) -> Response:
        """The next response, decoded; it must answer a request of this API key and version."""
        reply = self.connection.receive()
        assert (reply.request.api_key, reply.request.api_version) == (api_key, version)
        return reply.decode()

    def call(self, api_key: int, version: int, body: dict) -> Any:
        """Send a request and return its decoded response body."""
        return self.connection.call(api_key, version, body)


def alter_cluster_default(client: WireClient, name: str, value: str) -> dict:
    """IncrementalAlterConfigs SET of one config on the cluster-default broker resource; the
    resource's result (`error_code`, `error_message`)."""
    response = client.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": ConfigResourceType.BROKER,
                    "resource_name": "",
                    "configs": [
                        {"name": name, "config_operation": AlterConfigOp.SET, "value": value}
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    return response["responses"][0]
