"""The trio connection loop: bytes in, `codec.framing` frames, dispatch, responses out in order."""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Protocol

import trio

from kipwire.codec import DecodeError
from kipwire.codec.framing import FrameBuffer

from .dispatch import CloseConnection
from .faults import PEER

if TYPE_CHECKING:
    import logging

    from .cluster import Cluster

_READ_SIZE = 256 * 1024


class Node(Protocol):
    """A listening node (broker or controller): where it is, and how it answers a frame."""

    cluster: Cluster
    host: str
    port: int
    log: logging.Logger

    async def dispatch(self, frame: memoryview) -> bytes | None: ...


class Tap(Protocol):
    """Something that sees a connection's bytes (the recorder)."""

    def client_sends(self, data: bytes) -> None: ...
    def server_sends(self, data: bytes) -> None: ...
    def close(self, *, by_client: bool = True) -> None: ...


async def serve_connection(stream: trio.SocketStream, node: Node, tap: Tap | None = None) -> None:
    """Answer the requests of one client connection, in order, until it closes."""
    frames = FrameBuffer(node.cluster.max_request_bytes)
    by_client = True
    try:
        while True:
            try:
                data = await stream.receive_some(_READ_SIZE)
            except trio.BrokenResourceError:
                return
            if not data:
                return
            frames.feed(data)
            try:
                for request in frames:
                    if tap is not None:
                        tap.client_sends(bytes(request))
                    response = None
                    if node is node.cluster.controller_node:
                        response = node.cluster.faults.controller_answer(request)
                    if response is None:
                        response = await node.dispatch(request)
                    if response is not None:
                        if tap is not None:
                            tap.server_sends(response)
                        await stream.send_all(response)
            except (DecodeError, CloseConnection) as exc:
                # an oversized or unreadable frame: the stream cannot be resynchronised
                node.log.info("closing a connection: %s", exc)
                by_client = False
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            except Exception:
                # a bug in one handler closes this connection; every other client is served on
                node.log.exception("closing a connection after an internal error")
                by_client = False
                return
    finally:
        if tap is not None:
            tap.close(by_client=by_client)
        with trio.CancelScope(shield=True):
            await stream.aclose()


async def listen(
    node: Node,
    port: int,
    *,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `node` on 127.0.0.1:`port` (0: ephemeral) until cancelled."""
    try:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1", backlog=4096)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, f"port {port} is already in use") from None
        raise
    recorder = node.cluster.recorder

    async def handler(stream: trio.SocketStream) -> None:
        # each connection is its own task: its requests know which peer sent them
        PEER.set(stream.socket.getpeername()[:2])
        tap = recorder.tap(stream, node) if recorder is not None else None
        await serve_connection(stream, node, tap)

    await trio.serve_listeners(handler, listeners, task_status=task_status)
