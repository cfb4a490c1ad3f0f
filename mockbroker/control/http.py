"""A small HTTP/1.1 server on trio for the control API, with persistent connections.

Why not `http.server`: the cluster lives in a trio loop, and every endpoint calls it; a trio
server runs them in that loop directly, where a thread-based server would hop threads on every
call and need its own shutdown. The subset served is what curl, Go's net/http and Java's
HttpClient send: a request line, headers, a body of Content-Length bytes (no chunked bodies:
411), `Expect: 100-continue` answered; a connection stays open for the next request (HTTP/1.1's
default) until the client closes it or sends `Connection: close`, or it idles for 10 s.
"""

from __future__ import annotations

import errno
import json
import logging
from dataclasses import dataclass
from typing import Any

import trio

from .api import ControlAPI, Reply

MAX_HEAD = 64 * 1024
MAX_BODY = 1024 * 1024
REQUEST_TIMEOUT = 10.0
_REASONS = {
    200: "OK",
    201: "Created",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    411: "Length Required",
    413: "Content Too Large",
    500: "Internal Server Error",
}
log = logging.getLogger("kipwire.mockbroker.control")


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Request:
    """One parsed request."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes


def encode_response(reply: Reply, *, keep_alive: bool = False) -> bytes:
    """The bytes of a JSON response."""
    data = json.dumps(reply.body).encode() + b"\n"
    head = (
        f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Unknown')}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("ascii") + data


class RequestReader:
    """The requests of one connection, in order; bytes read past one request start the next."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def _more(self) -> bool:
        data = await self._stream.receive_some(65536)
        self._buffer += data
        return bool(data)

    async def next(self) -> Request | None:
        """The next request, None if the client closed first; _BadRequest if it is not HTTP."""
        while b"\r\n\r\n" not in self._buffer:
            if len(self._buffer) > MAX_HEAD:
                raise _BadRequest(400, "request head too large")
            if not await self._more():
                if self._buffer:
                    raise _BadRequest(400, "the request ended inside its head")
                return None
        head, _, rest = bytes(self._buffer).partition(b"\r\n\r\n")
        self._buffer = bytearray(rest)
        method, target, headers = _parse_head(head)
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            raise _BadRequest(400, "Content-Length is not a number") from None
        if not 0 <= length <= MAX_BODY:
            raise _BadRequest(413, f"a body is at most {MAX_BODY} bytes")
        if headers.get("expect", "").lower() == "100-continue" and len(self._buffer) < length:
            await self._stream.send_all(b"HTTP/1.1 100 Continue\r\n\r\n")
        while len(self._buffer) < length:
            if not await self._more():
                raise _BadRequest(400, "the request ended inside its body")
        body, self._buffer = bytes(self._buffer[:length]), self._buffer[length:]
        return Request(method, target, headers, body)


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split()
    if len(words) != 3 or not words[2].startswith("HTTP/1."):
        raise _BadRequest(400, f"not an HTTP/1.x request line: {lines[0][:80]!r}")
    headers = {"http-version": words[2]}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise _BadRequest(400, f"malformed header line {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise _BadRequest(411, "send the body with a Content-Length")
    return words[0], words[1], headers


def _keeps_alive(request: Request) -> bool:
    """HTTP/1.1 keeps a connection open unless the client says close; HTTP/1.0 closes it."""
    connection = request.headers.get("connection", "").lower()
    if request.headers["http-version"] == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection


async def _serve_connection(stream: trio.SocketStream, api: ControlAPI) -> None:
    """Answer a connection's requests in order until the client closes it or asks to, or it
    idles past REQUEST_TIMEOUT (clients pool connections: closing after every answer would race
    a pooled connection's next request)."""
    reader = RequestReader(stream)
    while True:
        try:
            with trio.fail_after(REQUEST_TIMEOUT):
                request = await reader.next()
        except _BadRequest as exc:
            await stream.send_all(encode_response(Reply(exc.status, {"error": str(exc)})))
            return
        except trio.TooSlowError:
            return  # idle, or a client that sends nothing in time
        if request is None:
            return
        keep_alive = _keeps_alive(request)
        try:
            reply = await api.answer(request.method, request.target, request.body)
            data = encode_response(reply, keep_alive=keep_alive)
        except Exception as exc:
            # a bug behind one endpoint answers 500 and is logged; the cluster keeps serving
            log.exception("%s %s failed", request.method, request.target)
            reply = Reply(500, {"error": f"{type(exc).__name__}: {exc}"})
            data = encode_response(reply, keep_alive=keep_alive)
        log.info("%s %s -> %d", request.method, request.target, reply.status)
        await stream.send_all(data)
        if not keep_alive:
            return


async def serve_control(
    cluster: Any,
    port: int,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the control API on 127.0.0.1:`port` (0: ephemeral) until cancelled; reports the
    port. Only the loopback interface is bound: the API stops brokers and cuts links."""
    try:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, f"control port {port} is already in use") from None
        raise
    api = ControlAPI(cluster)

    async def handler(stream: trio.SocketStream) -> None:
        try:
            await _serve_connection(stream, api)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away; nothing to answer
        finally:
            await stream.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, handler, listeners)
        task_status.started(listeners[0].socket.getsockname()[1])
