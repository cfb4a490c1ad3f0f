"""A small HTTP/1.1 server on trio for the control API: one request per connection.

Why not `http.server`: the cluster lives in a trio loop, and every endpoint calls it; a trio
server runs them in that loop directly, where a thread-based server would hop threads on every
call and need its own shutdown. The subset served is what curl, Go's net/http and Java's
HttpClient send: a request line, headers, a body of Content-Length bytes (no chunked bodies:
411), `Expect: 100-continue` answered; every response says `Connection: close`.
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


def encode_response(reply: Reply) -> bytes:
    """The bytes of a JSON response."""
    data = json.dumps(reply.body).encode() + b"\n"
    head = (
        f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Unknown')}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + data


async def read_request(stream: trio.abc.Stream) -> Request | None:
    """The next request on `stream`, None if it closed first; _BadRequest if it is not HTTP."""
    buffer = bytearray()
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEAD:
            raise _BadRequest(400, "request head too large")
        data = await stream.receive_some(65536)
        if not data:
            if buffer:
                raise _BadRequest(400, "the request ended inside its head")
            return None
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split()
    if len(words) != 3 or not words[2].startswith("HTTP/1."):
        raise _BadRequest(400, f"not an HTTP/1.x request line: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise _BadRequest(400, f"malformed header line {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise _BadRequest(411, "send the body with a Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise _BadRequest(400, "Content-Length is not a number") from None
    if not 0 <= length <= MAX_BODY:
        raise _BadRequest(413, f"a body is at most {MAX_BODY} bytes")
    if headers.get("expect", "").lower() == "100-continue" and len(rest) < length:
        await stream.send_all(b"HTTP/1.1 100 Continue\r\n\r\n")
    body = bytearray(rest)
    while len(body) < length:
        data = await stream.receive_some(length - len(body))
        if not data:
            raise _BadRequest(400, "the request ended inside its body")
        body += data
    return Request(words[0], words[1], headers, bytes(body[:length]))


async def _answer(stream: trio.SocketStream, api: ControlAPI) -> None:
    try:
        with trio.fail_after(REQUEST_TIMEOUT):
            request = await read_request(stream)
    except _BadRequest as exc:
        await stream.send_all(encode_response(Reply(exc.status, {"error": str(exc)})))
        return
    except trio.TooSlowError:
        return  # a client that sends nothing in time gets nothing
    if request is None:
        return
    try:
        reply = await api.answer(request.method, request.target, request.body)
    except Exception as exc:
        # a bug behind one endpoint answers 500 and is logged; the cluster keeps serving
        log.exception("%s %s failed", request.method, request.target)
        reply = Reply(500, {"error": f"{type(exc).__name__}: {exc}"})
    log.info("%s %s -> %d", request.method, request.target, reply.status)
    await stream.send_all(encode_response(reply))


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
            await _answer(stream, api)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away; nothing to answer
        finally:
            await stream.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, handler, listeners)
        task_status.started(listeners[0].socket.getsockname()[1])
