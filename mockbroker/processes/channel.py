"""The control channel between the parent and one child: size-prefixed pickled messages over a
127.0.0.1 TCP connection, both ways.

A message is `("call", id, op, args)` (answered by `("reply", id, ok, value)`) or
`("event", op, args)` (no answer). Each side serves the ops it was given; a call's handler may be
a coroutine function (it runs in its own task, so a slow call does not hold up the channel). Only
the two ends of one cluster talk on it: pickle is safe because the peer is our own process.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import math
import pickle
import struct
from collections.abc import Callable, Mapping
from typing import Any

import trio

from ..errors import ClusterError

_SIZE = struct.Struct(">I")
_READ_SIZE = 1 << 16

Handler = Callable[..., Any]


class ChannelClosed(ClusterError):
    """The other end of the control channel is gone."""


class Channel:
    """One end of a control channel; `run` serves it until the connection closes."""

    def __init__(self, stream: trio.abc.Stream, ops: Mapping[str, Handler] | None = None) -> None:
        self.stream = stream
        self.ops: dict[str, Handler] = dict(ops or {})
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[trio.Event, list[Any]]] = {}
        self._out, self._queued = trio.open_memory_channel[bytes](math.inf)
        self.closed = trio.Event()

    def post(self, op: str, *args: Any) -> None:
        """Send an event without waiting (callable from synchronous code)."""
        self._send(("event", op, args))

    async def call(self, op: str, *args: Any) -> Any:
        """Call `op` on the other end and return its answer (its exception is raised here)."""
        if self.closed.is_set():
            raise ChannelClosed(f"the control channel is closed (calling {op})")
        call_id = next(self._ids)
        done, slot = self._waiting[call_id] = (trio.Event(), [])
        self._send(("call", call_id, op, args))
        await done.wait()
        if not slot:
            raise ChannelClosed(f"the control channel closed during {op}")
        ok, value = slot
        if not ok:
            raise value
        return value

    def _send(self, message: tuple) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with contextlib.suppress(trio.ClosedResourceError):  # closing: nothing is delivered
            self._out.send_nowait(_SIZE.pack(len(data)) + data)

    async def run(self) -> None:
        """Read and write messages until the connection closes; then fail every pending call."""
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write)
                await self._read(nursery)
                nursery.cancel_scope.cancel()
        finally:
            self.closed.set()
            self._out.close()
            for done, _ in self._waiting.values():
                done.set()
            self._waiting.clear()
            with trio.CancelScope(shield=True):
                await self.stream.aclose()

    async def _write(self) -> None:
        try:
            async for data in self._queued:
                await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    async def _read(self, nursery: trio.Nursery) -> None:
        buffer = bytearray()
        while True:
            try:
                data = await self.stream.receive_some(_READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            buffer += data
            while len(buffer) >= _SIZE.size:
                (size,) = _SIZE.unpack_from(buffer)
                if len(buffer) < _SIZE.size + size:
                    break
                message = pickle.loads(buffer[_SIZE.size : _SIZE.size + size])
                del buffer[: _SIZE.size + size]
                self._dispatch(nursery, message)

    def _dispatch(self, nursery: trio.Nursery, message: tuple) -> None:
        kind = message[0]
        if kind == "reply":
            _, call_id, ok, value = message
            waiting = self._waiting.pop(call_id, None)
            if waiting is not None:
                waiting[1].extend((ok, value))
                waiting[0].set()
        elif kind == "event":
            _, op, args = message
            result = self.ops[op](*args)
            if inspect.isawaitable(result):
                nursery.start_soon(_awaited, result)
        else:
            _, call_id, op, args = message
            nursery.start_soon(self._answer, call_id, op, args)

    async def _answer(self, call_id: int, op: str, args: tuple) -> None:
        try:
            result = self.ops[op](*args)
            if inspect.isawaitable(result):
                result = await result
            reply = ("reply", call_id, True, result)
        except Exception as exc:  # noqa: BLE001 - handed to the caller on the other end
            reply = ("reply", call_id, False, _picklable(exc))
        self._send(reply)


async def _awaited(result: Any) -> None:
    await result


def _picklable(exc: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any exception that does not survive pickling
        return ClusterError(f"{type(exc).__name__}: {exc}")
    return exc
