"""The trio connection loop: bytes in, `codec.framing` frames, dispatch, responses out in order."""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Protocol

import trio

from kipwire.codec import DecodeError
from kipwire.codec.framing import FrameBuffer

from .dispatch import CloseConnection, dispatch

if TYPE_CHECKING:
    from .broker.node import BrokerNode

#: Kafka's socket.request.max.bytes default.
DEFAULT_MAX_REQUEST = 100 * 1024 * 1024
_READ_SIZE = 256 * 1024


class Tap(Protocol):
    """Something that sees a connection's bytes (the recorder)."""

    def client_sends(self, data: bytes) -> None: ...
    def server_sends(self, data: bytes) -> None: ...
    def close(self, *, by_client: bool = True) -> None: ...


async def serve_connection(
    stream: trio.SocketStream, broker: BrokerNode, tap: Tap | None = None
) -> None:
    """Answer the requests of one client connection, in order, until it closes."""
    frames = FrameBuffer(
        int(broker.cluster.config.get("socket.request.max.bytes", DEFAULT_MAX_REQUEST))
    )
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
                    response = await dispatch(broker, request)
                    if response is not None:
                        if tap is not None:
                            tap.server_sends(response)
                        await stream.send_all(response)
            except (DecodeError, CloseConnection) as exc:
                # an oversized or unreadable frame: the stream cannot be resynchronised
                broker.log.info("closing a connection: %s", exc)
                by_client = False
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            except Exception:
                # a bug in one handler closes this connection; every other client is served on
                broker.log.exception("closing a connection after an internal error")
                by_client = False
                return
    finally:
        if tap is not None:
            tap.close(by_client=by_client)
        with trio.CancelScope(shield=True):
            await stream.aclose()


async def listen(
    broker: BrokerNode,
    port: int,
    *,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `broker` on 127.0.0.1:`port` (0: ephemeral) until cancelled."""
    try:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1", backlog=4096)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, f"port {port} is already in use") from None
        raise
    recorder = broker.cluster.recorder

    async def handler(stream: trio.SocketStream) -> None:
        tap = recorder.tap(stream, broker) if recorder is not None else None
        await serve_connection(stream, broker, tap)

    await trio.serve_listeners(handler, listeners, task_status=task_status)
