"""A minimal blocking Kafka client for tests: size-prefixed frames over a socket."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kipwire.codec import decode_response, encode_request

_SIZE = struct.Struct(">i")


class WireClient:
    """One connection to a broker; `call` sends a request and decodes its response."""

    def __init__(self, address: str, timeout: float = 5.0) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._next_cid = 1

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send_raw(self, payload: bytes) -> None:
        """Send bytes as they are (no size prefix added)."""
        self.sock.sendall(payload)

    def send(self, api_key: int, version: int, body: dict, *, trailing: bytes = b"") -> int:
        """Send one request (with optional bytes after the body); return its correlation id."""
        cid = self._next_cid
        self._next_cid += 1
        frame = encode_request(api_key, version, body, correlation_id=cid, client_id="test")
        frame += trailing
        self.sock.sendall(_SIZE.pack(len(frame)) + frame)
        return cid

    def receive_frame(self) -> bytes:
        """The next response frame (without its size prefix); b"" when the broker closed."""
        head = self._read(4)
        if len(head) < 4:
            return b""
        return self._read(_SIZE.unpack(head)[0])

    def receive(self, api_key: int, version: int) -> Any:
        """The next response, decoded."""
        frame = self.receive_frame()
        if not frame:
            raise ConnectionError("the broker closed the connection")
        return decode_response(frame, api_key, version)

    def call(self, api_key: int, version: int, body: dict) -> Any:
        """Send a request and return its decoded response body."""
        cid = self.send(api_key, version, body)
        response = self.receive(api_key, version)
        assert response.correlation_id == cid
        return response.body

    def closed_by_peer(self) -> bool:
        """True when the broker has closed the connection (reads EOF)."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError):
            return False

    def _read(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                break
            chunks += chunk
        return bytes(chunks)
