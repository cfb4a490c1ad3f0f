"""Inputs without packets as TCP segments: raw frame dumps, and the helper tcpflow files share.

A frame dump is the bytes one side sent, size-prefixed frames back to back (what
`python -m kipwire.codec decode` reads): requests, and optionally the file of their responses.
Turned into the segments of one synthetic connection (a SYN from each side, then the bytes in
chunks), it goes through the same reassembly, framing, decoding and pairing as a capture, in
process and in the Spark job alike. A dump has no addresses: the connection runs from 0.0.0.0:1
(client) to 0.0.0.0:0 (broker). It has no capture times either: the file's modification time
stands in for the connection's, and the rows' own timestamps stay empty (`timed` is false).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from .packets import ACK, PSH, SYN, TcpSegment
from .reassembly import Endpoint

__all__ = [
    "DUMP_CLIENT",
    "DUMP_SERVER",
    "chunk_segments",
    "frame_dump_segments",
    "stream_segments",
]

DUMP_CLIENT: Endpoint = (bytes(4), 1)
DUMP_SERVER: Endpoint = (bytes(4), 0)
_CHUNK = 1 << 16  # payload per synthetic segment: keeps fragment rows and runs small
_ISN = 1000


def chunk_segments(
    src: Endpoint, dst: Endpoint, data: bytes | memoryview, ts: int, seq: int = _ISN
) -> Iterator[tuple[int, TcpSegment]]:
    """`data` sent from `src` to `dst` as segments from sequence number `seq` on."""
    view = memoryview(data)
    for start in range(0, len(view), _CHUNK):
        piece = view[start : start + _CHUNK]
        yield ts, TcpSegment(src[0], src[1], dst[0], dst[1], seq + start, 0, PSH, piece, len(piece))


def stream_segments(
    client: Endpoint,
    server: Endpoint,
    to_server: bytes | memoryview,
    to_client: bytes | memoryview,
    ts: int,
    *,
    syn: bool,
) -> Iterator[tuple[int, TcpSegment]]:
    """(ts, segment) pairs that carry two directions' bytes; `syn` marks both starts as known."""
    if syn:
        yield ts, TcpSegment(client[0], client[1], server[0], server[1], _ISN - 1, 0, SYN, b"", 0)
        yield (
            ts,
            TcpSegment(
                server[0], server[1], client[0], client[1], _ISN - 1, _ISN, SYN | ACK, b"", 0
            ),
        )
    yield from chunk_segments(client, server, to_server, ts, _ISN)
    yield from chunk_segments(server, client, to_client, ts, _ISN)


def _read(path: str | None) -> tuple[bytes, int]:
    if path is None:
        return b"", 0
    with open(path, "rb") as f:
        return f.read(), os.fstat(f.fileno()).st_mtime_ns


def frame_dump_segments(
    requests: str, responses: str | None = None, *, content: bytes | None = None, mtime: int = 0
) -> Iterator[tuple[int, TcpSegment]]:
    """The segments of a request dump (and its responses) as one connection from its start.

    `content` (with its `mtime`, epoch ns) holds the request dump when it was read elsewhere.
    """
    req, t_req = (content, mtime) if content is not None else _read(requests)
    resp, t_resp = _read(responses)
    yield from stream_segments(
        DUMP_CLIENT, DUMP_SERVER, req, resp, min(filter(None, (t_req, t_resp)), default=0), syn=True
    )
