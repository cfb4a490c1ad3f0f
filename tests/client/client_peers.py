"""A scripted fake peer for the client's tests: a listener on 127.0.0.1 that answers each request
as a test says (late, out of step, not at all)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kipwire.codec import FrameBuffer, Request, decode_request, encode_response

#: What a fake peer does with a request, given every request seen so far (this one last):
#: the bytes to send back, or None to close the connection.
Script = Callable[[Request, list[Request]], bytes | None]
PEER_TIMEOUT = 10.0


def answer(
    request: Request,
    correlation_id: int | None = None,
    *,
    body: dict | None = None,
    version: int | None = None,
) -> bytes:
    """A size-prefixed response to `request`: its own correlation id and version and a default
    body unless given."""
    cid = request.correlation_id if correlation_id is None else correlation_id
    version = request.api_version if version is None else version
    frame = encode_response(request.api_key, version, body or {}, correlation_id=cid)
    return struct.pack(">i", len(frame)) + frame


@contextmanager
def fake_peer(script: Script) -> Iterator[str]:
    """A listener on 127.0.0.1 that serves one connection by `script`; yields its address."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(PEER_TIMEOUT)

    def serve() -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.settimeout(PEER_TIMEOUT)
            frames, seen = FrameBuffer(), []
            while data := _recv(connection):
                frames.feed(data)
                for frame in frames.frames():
                    seen.append(decode_request(bytes(frame)))
                    out = script(seen[-1], seen)
                    if out is None:
                        return
                    connection.sendall(out)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        thread.join(PEER_TIMEOUT)
        listener.close()
    assert not thread.is_alive(), "the fake peer did not finish"


def _recv(connection: socket.socket) -> bytes:
    try:
        return connection.recv(1 << 16)
    except OSError:
        return b""


def hold_first_answer(request: Request, seen: list[Request]) -> bytes | None:
    """Answer nothing to the first request until the second arrives, then both, in order."""
    if len(seen) == 1:
        return b""
    if len(seen) == 2:
        return answer(seen[0]) + answer(request)
    return None
