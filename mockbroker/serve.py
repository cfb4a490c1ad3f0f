"""The serve pipeline every node (broker or controller) answers requests through.

bytes in -> `codec.framing` frames -> header peek -> version check -> body decoded once ->
injected faults (the one place they are matched: `faults.Faults`) -> the node's handler ->
response latency -> the response encoded once -> bytes out, in order, per connection.

A node is an `Endpoint`: its handler table (`handlers.registry.Handler` per API key), how it
builds a handler's context, and the cluster's faults and recorder.
"""

from __future__ import annotations

import errno
import logging
import struct
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from functools import partial
from typing import Any, Protocol, TypeAlias

import trio

from kipwire.codec import (
    APIS,
    ApiKey,
    DecodeError,
    EncodeError,
    ErrorCode,
    FrameTooLargeError,
    UnknownApiError,
    UnsupportedVersionError,
    encode_response,
    message,
    response_header_version,
)
from kipwire.codec.framing import FrameBuffer, peek_request_header

from .faults import Faults
from .gathered import GatheredFrame, gather, mark, send_frame, unmark
from .handlers.registry import Handler, PartitionShape
from .limits import NodeLimits, RequestMemory, TooManyConnections
from .network import NodeId
from .security.context import PRINCIPAL

_READ_SIZE = 256 * 1024
_SIZE = struct.Struct(">i").pack
_SIZE_AT = struct.Struct(">i").pack_into

#: A response frame to send, or None when none is due.
Answer: TypeAlias = bytes | bytearray | GatheredFrame | None
#: The (host, port) of the peer of the connection a request arrived on; set in each
#: connection's task, so a fault can tell which node (if any) dialed it.
PEER: ContextVar[tuple[str, int] | None] = ContextVar("kipwire_peer", default=None)
#: Seconds the connection stays muted after the response just answered (a quota's throttle,
#: KIP-219); set in the connection's task by `answer_request`, taken by `serve_connection`.
_MUTE: ContextVar[float] = ContextVar("kipwire_mute", default=0.0)


class CloseConnection(Exception):
    """The request cannot even be answered: Kafka closes that one connection."""


class Tap(Protocol):
    """Something that sees a connection's bytes (the recorder)."""

    def client_sends(self, data: bytes) -> None: ...
    def server_sends(self, data: bytes) -> None: ...
    def close(self, *, by_client: bool = True) -> None: ...


class Gate(Protocol):
    """What stands before the pipeline on a secured connection (`security.listener.SaslGate`)."""

    def bind(
        self, stream: trio.abc.Stream, frames: FrameBuffer, tap: Tap | None
    ) -> Callable[[Endpoint, memoryview], Awaitable[Answer]]: ...


class ListenerSecurity(Protocol):
    """How a secured listener serves an accepted connection (`security.listener`)."""

    async def serve(self, stream: trio.SocketStream, node: Endpoint, tap: Tap | None) -> None: ...


class Quotas(Protocol):
    """What charges a client's request to its quotas (`broker.quotas.ClientQuotas`)."""

    def charge(
        self,
        principal: str | None,
        client_id: str | None,
        api_key: int,
        request_bytes: int,
        response: dict | None,
        encode: Callable[[dict], bytes | bytearray | GatheredFrame],
        work_seconds: float,
    ) -> tuple[Answer, float]: ...


class Taps(Protocol):
    """Where new connections get their tap (the recorder)."""

    def tap(self, stream: trio.SocketStream, server: tuple[str, int]) -> Tap: ...


class Endpoint(Protocol):
    """A listening node (broker or controller), as the pipeline serves it."""

    node_id: NodeId
    host: str
    port: int
    #: The PLAINTEXT port other nodes dial when `port` is secured (None: they dial `port`).
    internal_port: int | None
    log: logging.Logger
    faults: Faults
    recorder: Taps | None
    max_request_bytes: int
    #: Request memory and connection limits over all its listeners.
    limits: NodeLimits
    handlers: Mapping[int, Handler]
    #: An undecodable body closes the connection (the controller) instead of INVALID_REQUEST.
    closes_on_malformed: bool
    #: Client quotas (brokers); None where none are charged (the controller).
    quotas: Quotas | None

    def request_context(
        self, api_key: int, api_version: int, correlation_id: int, client_id: str | None
    ) -> Any: ...
    def topic_name(self, entry: Mapping[str, Any], key: str) -> str | None: ...


def frame(payload: bytes) -> bytes:
    """A size-prefixed frame."""
    return _SIZE(len(payload)) + payload


def encode_frame(
    api_key: int, api_version: int, body: dict, *, correlation_id: int
) -> bytearray | GatheredFrame:
    """`frame(encode_response(...))` built in one buffer: the header and body go after four bytes
    the size fills in. A Fetch response's records (a megabyte) are copied twice less: neither
    into bytes of the payload nor into the frame; records read as several batches (`Chunks`)
    are not copied at all: the frame is gathered around them (`gathered`)."""
    codecs = _RESPONSE_CODECS.get((api_key, api_version))
    if codecs is None:
        codecs = _RESPONSE_CODECS[api_key, api_version] = _response_codecs(api_key, api_version)
    header, codec = codecs
    marked = mark(body) if api_key == ApiKey.FETCH else []
    out = bytearray(4)
    try:
        header.build_into({"correlation_id": correlation_id}, out)
        codec.build_into(body, out)
    finally:
        unmark(marked)
    if marked:
        chunks = [records for _, records in marked]
        gathered = gather(out, chunks, flexible=response_header_version(api_key, api_version) == 1)
        if gathered is not None:
            return gathered
        for part, records in marked:  # a marker out of place: the records joined, as before
            part["records"] = bytes(records)
        try:
            return encode_frame(api_key, api_version, body, correlation_id=correlation_id)
        finally:
            unmark(marked)
    _SIZE_AT(out, 0, len(out) - 4)
    return out


def _response_codecs(api_key: int, api_version: int) -> tuple[Any, Any]:
    """The response header's codec and the response body's, for `encode_frame`."""
    try:
        name = APIS[api_key].response
        header = message("ResponseHeader", response_header_version(api_key, api_version))
        return header, message(name, api_version)
    except (KeyError, UnknownApiError, UnsupportedVersionError) as exc:
        raise EncodeError(f"no response codec for API {api_key} v{api_version}: {exc}") from None


#: (api key, version) -> its response header and body codecs, found once.
_RESPONSE_CODECS: dict[tuple[int, int], tuple[Any, Any]] = {}


async def answer_request(node: Endpoint, data: memoryview) -> Answer:
    """The size-prefixed response to one request frame, None when none is due (acks=0)."""
    try:
        header = peek_request_header(data)
    except DecodeError as exc:
        raise CloseConnection(f"unreadable request header: {exc}") from None
    key, version, cid = header.api_key, header.api_version, header.correlation_id
    handler = node.handlers.get(key)
    name = APIS[key][1] if key in APIS else f"API {key}"
    if handler is None or not handler.min_version <= version <= handler.max_version:
        # Kafka answers only ApiVersions (KIP-511); any other API or version its listener
        # does not serve fails the header check and the connection is closed unanswered
        if handler is not None and handler.unsupported is not None:
            return frame(handler.unsupported(cid))
        raise CloseConnection(f"{name} v{version} is not served on this listener")
    try:
        codec = message(name, version)
    except DecodeError:
        raise CloseConnection(f"{name} v{version} is not a version the codec knows") from None
    started = time.perf_counter()
    try:
        body, _ = codec.parse_at(data, header.header_size)  # bytes after the body are ignored
    except DecodeError as exc:
        if node.closes_on_malformed:
            raise CloseConnection(f"{name} v{version}: malformed body: {exc}") from None
        node.log.info("%s v%d cid %d: malformed body: %s", name, version, cid, exc)
        return _error(handler, version, cid, None, ErrorCode.INVALID_REQUEST)
    work = time.perf_counter() - started
    source = node.faults.source_of(PEER.get())
    # traffic between nodes (heartbeats, metadata and replica fetches) only at DEBUG, marked
    # `internal` so `kipwire-broker serve --log-internal` can show it: one line per client request
    level = logging.DEBUG if source is not None else logging.INFO
    extra = {"internal": source is not None}
    node.log.log(level, "%s v%d cid %d from %s", name, version, cid, header.client_id, extra=extra)
    injected = node.faults.take_error(key, node.node_id, source)
    if injected is not None:
        response = handler.fail(body, injected, version)
    else:
        ctx = node.request_context(key, version, cid, header.client_id)
        shape = handler.partitions
        if shape is not None and node.faults.wants_partitions(key):
            response = await _answer_with_partition_faults(node, handler, shape, ctx, body, source)
        else:
            response = await handler.handle(ctx, body)
    delay = node.faults.response_delay(node.node_id)
    if delay:
        await trio.sleep(delay)

    def encode(body: dict) -> bytes | bytearray | GatheredFrame:
        return encode_frame(key, version, body, correlation_id=cid)

    try:
        if node.quotas is not None and source is None and injected is None:
            out, mute = node.quotas.charge(
                PRINCIPAL.get(), header.client_id, key, len(data), response, encode, work
            )
            _MUTE.set(mute)
            return out
        return None if response is None else encode(response)
    except EncodeError as exc:
        if injected is not None:
            # no error code to carry it: the injected fault closes the connection
            raise CloseConnection(f"injected error {injected} for {name} closes it") from None
        # a handler bug must not cost the client its connection: answer with the API's error
        node.log.error("%s v%d: response does not encode: %s", name, version, exc)
        return _error(handler, version, cid, body, ErrorCode.UNKNOWN_SERVER_ERROR)


async def _answer_with_partition_faults(
    node: Endpoint,
    handler: Handler,
    shape: PartitionShape,
    ctx: Any,
    body: Any,
    source: NodeId | None,
) -> dict | None:
    """Partitions an injection fails answer its error; the handler serves the rest."""
    names = {id(t): node.topic_name(t, shape.name_key) for t, _ in shape.entries(body)}
    asked = [(names[id(t)], shape.index_of(p)) for t, p in shape.entries(body)]
    errors = node.faults.take_partition_errors(
        handler.api_key, node.node_id, source, [(n, i) for n, i in asked if n is not None]
    )
    if not errors:
        return await handler.handle(ctx, body)
    rest, failed = shape.split(body, lambda t, p: errors.get((names[id(t)], shape.index_of(p))))
    response = await handler.handle(ctx, rest)
    return None if response is None else shape.merge(response, failed)


def _error(handler: Handler, version: int, cid: int, body: object, code: int) -> bytes:
    key = handler.api_key
    response: dict = {"error_code": code}
    if body is not None:
        response = handler.fail(body, code, version)
    try:
        return frame(encode_response(key, version, response, correlation_id=cid))
    except (EncodeError, KeyError, TypeError, ValueError):
        try:
            return frame(encode_response(key, version, {}, correlation_id=cid))
        except (EncodeError, KeyError, TypeError, ValueError):
            raise CloseConnection(f"no error response for API {key} v{version}") from None


async def serve_connection(
    stream: trio.abc.Stream, node: Endpoint, tap: Tap | None = None, gate: Gate | None = None
) -> None:
    """Answer the requests of one client connection, in order, until it closes; a `gate`
    (SASL) sees every frame first. Each request of a client is charged to the node's request
    memory from its size prefix until it is answered (`limits.RequestMemory`)."""
    frames = FrameBuffer(node.max_request_bytes)
    answer = answer_request if gate is None else gate.bind(stream, frames, tap)
    memory = node.limits.memory
    if node.faults.source_of(PEER.get()) is not None:
        # the nodes' own traffic (heartbeats, metadata and replica fetches) is never muted by
        # clients filling the pool: the control plane is not starved by the data plane
        memory = UNCOUNTED
    by_client = True
    try:
        while True:
            try:
                request, charge = await _read_request(stream, frames, memory)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            except FrameTooLargeError as exc:
                limit = "socket.request.max.bytes"
                if exc.limit != node.max_request_bytes:
                    limit = "sasl.server.max.receive.size (not authenticated yet)"
                node.log.warning(
                    "closing a connection from %s: a frame of %d bytes is over %s (%d)",
                    _peer_text(),
                    exc.size,
                    limit,
                    exc.limit,
                )
                by_client = False
                return
            except DecodeError as exc:
                node.log.info("closing a connection: %s", exc)
                by_client = False
                return
            if request is None:
                return
            try:
                if tap is not None:
                    tap.client_sends(bytes(request))
                response = await answer(node, request)
                if response is not None:
                    if tap is not None:
                        tap.server_sends(
                            bytes(response) if type(response) is GatheredFrame else response
                        )
                    await send_frame(stream, response)
            except (DecodeError, CloseConnection) as exc:
                # an unreadable frame: the stream cannot be resynchronised
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
                # the frame's bytes go with its charge, not when the next frame comes
                del request
                memory.give(charge)
                frames.compact()
            await _muted()
    finally:
        if tap is not None:
            tap.close(by_client=by_client)
        with trio.CancelScope(shield=True):
            await stream.aclose()


async def _read_request(
    stream: trio.abc.Stream, frames: FrameBuffer, memory: RequestMemory
) -> tuple[memoryview | None, int]:
    """The next request frame and the bytes charged for it; (None, 0) at the end of the stream.

    Raises the framing error for a bad size prefix before anything is charged or read beyond
    it. Once the size is known only that frame's bytes are read, so what a connection holds
    uncharged is at most one read's worth (`_READ_SIZE`) while it waits for a size prefix.
    """
    while (size := frames.next_frame_size) is None:
        data = await stream.receive_some(_READ_SIZE)
        if not data:
            return None, 0
        frames.feed(data)
    if not 0 <= size <= frames.max_frame_size:
        frames.next_frame()  # raises the framing error for this size
    charge = await memory.take(4 + size)
    try:
        while (request := frames.next_frame()) is None:
            data = await stream.receive_some(min(_READ_SIZE, 4 + size - frames.buffered))
            if not data:
                memory.give(charge)
                return None, 0
            frames.feed(data)
    except BaseException:
        memory.give(charge)
        raise
    return request, charge


#: The pool of connections whose requests are not counted (a node's links to another).
UNCOUNTED = RequestMemory(-1)


def _peer_text() -> str:
    peer = PEER.get()
    return "an unknown peer" if peer is None else f"{peer[0]}:{peer[1]}"


async def _muted() -> None:
    """Read nothing more from the connection while a quota's throttle lasts (KIP-219)."""
    mute = _MUTE.get()
    if mute > 0:
        _MUTE.set(0.0)
        await trio.sleep(mute)


async def listen(
    node: Endpoint,
    port: int,
    *,
    security: ListenerSecurity | None = None,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `node` on 127.0.0.1:`port` (0: ephemeral) until cancelled; with `security`, each
    connection is secured (TLS, SASL) by it first."""
    try:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1", backlog=4096)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, f"port {port} is already in use") from None
        raise
    recorder = node.recorder

    async def handler(stream: trio.SocketStream) -> None:
        # each connection is its own task: its requests know which peer sent them
        peer = stream.socket.getpeername()[:2]
        PEER.set(peer)
        internal = node.faults.source_of(peer) is not None
        connections = node.limits.connections
        try:
            await connections.open(peer[0], internal=internal)
        except TooManyConnections as exc:
            node.log.info("%s", exc)
            await trio.aclose_forcefully(stream)
            return
        try:
            tap = recorder.tap(stream, (node.host, node.port)) if recorder is not None else None
            if security is None:
                await serve_connection(stream, node, tap)
            else:
                await security.serve(stream, node, tap)
        finally:
            connections.close(peer[0], internal=internal)

    await trio.serve_listeners(handler, listeners, task_status=task_status)


async def open_listeners(
    nursery: trio.Nursery, node: Endpoint, port: int, security: ListenerSecurity | None = None
) -> None:
    """Start `node`'s client listener on `port` and set `node.port`; a secured node also gets
    an internal PLAINTEXT listener on an ephemeral port that other nodes dial
    (`node.internal_port`), as Kafka keeps inter-broker and controller listeners apart."""
    listeners = await nursery.start(partial(listen, security=security), node, port)
    node.port = listeners[0].socket.getsockname()[1]
    if security is not None:
        internal = await nursery.start(listen, node, 0)
        node.internal_port = internal[0].socket.getsockname()[1]
