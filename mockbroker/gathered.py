"""A Fetch response's records sent as the log holds them: one gathered write, no joined copy.

A fetch reads a partition as the stored batches' bytes (`PartitionLog.read_parts`). Joined
into one `bytes`, then copied again into the encoded response, a megabyte of records cost two
copies before the socket's own. Instead the fetch handler answers `records` with a `Chunks`
(when more than one batch is read), `encode_frame` encodes the response with a 16-byte marker
in each one's place and cuts the frame around the markers (`gather`), and `send_frame` hands
the pieces to the socket in one `sendmsg`. Anything that needs the frame whole (the recorder,
a TLS stream) gets `bytes(frame)`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import trio

#: A marker is this process's random 12 bytes and the records' index in the response (a
#: 16-byte string nothing else in an encoded response holds; `gather` checks each one's
#: length prefix, and a marker not found where expected falls back to the joined bytes).
_MARK = os.urandom(12)
_MARK_SIZE = 16
_INDEX = struct.Struct(">I")
_INT32 = struct.Struct(">i")
#: The length prefix the codec writes before a 16-byte `records`: compact (flexible versions,
#: the length plus one as an unsigned varint) or an INT32.
_MARK_PREFIX = {True: bytes([_MARK_SIZE + 1]), False: _INT32.pack(_MARK_SIZE)}
#: Buffers per sendmsg call (Linux's IOV_MAX is 1024).
_IOV_MAX = 512


class Chunks:
    """Bytes kept as the pieces they were read in, joined only where they are needed whole."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: Sequence[bytes]) -> None:
        self.parts = list(parts)
        self.size = sum(len(p) for p in self.parts)

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Chunks):
            return bytes(self) == bytes(other)
        if isinstance(other, bytes | bytearray | memoryview):
            return bytes(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Chunks({len(self.parts)} parts, {self.size} bytes)"


def records_of(parts: list[bytes]) -> bytes | Chunks:
    """What a read's parts answer as `records`: no copy for none or one, else `Chunks`."""
    if not parts:
        return b""
    if len(parts) == 1:
        return parts[0]
    return Chunks(parts)


class GatheredFrame:
    """A size-prefixed frame as the buffers that make it up, in order."""

    __slots__ = ("buffers", "size")

    def __init__(self, buffers: list[Any], size: int) -> None:
        self.buffers = buffers
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.buffers)


def _partitions(body: dict) -> Iterator[dict]:
    for topic in body.get("responses") or ():
        yield from topic.get("partitions") or ()


def mark(body: dict) -> list[tuple[dict, Chunks]]:
    """Put a marker in place of each `Chunks` records of a Fetch response body (in place;
    `unmark` puts them back); the partitions changed, in the order they are encoded."""
    marked: list[tuple[dict, Chunks]] = []
    for part in _partitions(body):
        records = part.get("records")
        if type(records) is Chunks:
            part["records"] = _MARK + _INDEX.pack(len(marked))
            marked.append((part, records))
    return marked


def unmark(marked: list[tuple[dict, Chunks]]) -> None:
    """Undo `mark`: the body holds its `Chunks` again."""
    for part, records in marked:
        part["records"] = records


def gather(out: bytearray, chunks: list[Chunks], flexible: bool) -> GatheredFrame | None:
    """The frame `out` (encoded with `mark`'s markers) with each marker's place taken by its
    records' pieces and the size prefix set to the whole; None if a marker is not where its
    length prefix says (the caller encodes the joined records instead)."""
    prefix = _MARK_PREFIX[flexible]
    view = memoryview(out)
    buffers: list[Any] = []
    at = 0
    for index, records in enumerate(chunks):
        found = out.find(_MARK + _INDEX.pack(index), at)
        start = found - len(prefix)
        if found < 0 or start < at or out[start:found] != prefix:
            return None
        size = len(records)
        buffers.append(view[at:start])
        buffers.append(_uvarint(size + 1) if flexible else _INT32.pack(size))
        buffers.extend(records.parts)
        at = found + _MARK_SIZE
    buffers.append(view[at:])
    total = sum(len(b) for b in buffers)
    _INT32.pack_into(out, 0, total - 4)
    return GatheredFrame(buffers, total)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


async def send_frame(stream: trio.abc.Stream, frame: bytes | bytearray | GatheredFrame) -> None:
    """Send a response frame: a gathered one with sendmsg on a plain socket, else whole."""
    if type(frame) is not GatheredFrame:
        await stream.send_all(frame)
        return
    if type(stream) is not trio.SocketStream:
        await stream.send_all(bytes(frame))
        return
    sock = stream.socket
    buffers, first = frame.buffers, 0
    try:
        while first < len(buffers):
            sent = await sock.sendmsg(buffers[first : first + _IOV_MAX])
            while first < len(buffers) and sent >= len(buffers[first]):
                sent -= len(buffers[first])
                first += 1
            if sent:
                buffers[first] = memoryview(buffers[first])[sent:]
    except OSError as exc:
        # as trio's SocketStream.send_all reports a broken connection
        raise trio.BrokenResourceError(f"socket send failed: {exc}") from exc
