"""Inputs without packets as TCP segments: raw frame dumps, and the helper tcpflow files share.

A frame dump is the bytes one side sent, size-prefixed frames back to back (what
`python -m kipwire.codec decode` reads): requests, and optionally the file of their responses.
Turned into the segments of one synthetic connection (a SYN from each side, then the bytes in
chunks), it goes through the same reassembly, framing, decoding and pairing as a capture, in
process and in the Spark job alike. A dump has no addresses: the connection runs from 0.0.0.0:1
(client) to 0.0.0.0:0 (broker). It has no capture times either: the file's modification time
stands in for the connection's, and the rows' own timestamps stay empty (`timed` is false).

Also what a frame dump looks like (`is_frame_dump`): size prefixes that walk the file to its end,
the first frames plausible request headers (`plausible_request_header`, which the decoding
stage's framing and role detection use too; it knows the codec's API keys when the codec is
installed, and takes any key below 128 without it).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from functools import lru_cache

from .packets import ACK, PSH, SYN, TcpSegment
from .reassembly import Endpoint

__all__ = [
    "DUMP_CLIENT",
    "DUMP_SERVER",
    "MAX_API_VERSION",
    "MAX_FRAME",
    "chunk_segments",
    "frame_dump_segments",
    "is_frame_dump",
    "is_frame_dump_file",
    "known_api_keys",
    "plausible_request_header",
    "stream_segments",
]

DUMP_CLIENT: Endpoint = (bytes(4), 1)
DUMP_SERVER: Endpoint = (bytes(4), 0)
_CHUNK = 1 << 16  # payload per synthetic segment: keeps fragment rows and runs small
_ISN = 1000
_FRAME_CHAIN = 4  # request headers checked before a file counts as a frame dump
_i32 = struct.Struct(">i").unpack_from
_req_head = struct.Struct(">ihhi").unpack_from  # size, api_key, api_version, correlation_id
# Kafka's socket.request.max.bytes defaults to 100 MiB; fetch responses may be larger. A size
# beyond this is not a frame.
MAX_FRAME = 1 << 30
MAX_API_VERSION = 40
_MIN_REQUEST = 8  # api_key, api_version, correlation_id


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


@lru_cache(maxsize=1)
def known_api_keys() -> frozenset[int]:
    """API keys the codec knows; without the codec, every key below 128."""
    try:
        from kipwire import codec

        return frozenset(int(k) for k in codec.ApiKey)
    except (ImportError, AttributeError):
        return frozenset(range(128))


def plausible_request_header(buf: bytes | memoryview, pos: int) -> tuple[int, int] | None:
    """(size, correlation_id) if a request header sits at `pos` that passes the sanity checks."""
    if len(buf) - pos < 12:
        return None
    size, key, version, corr = _req_head(buf, pos)
    if (
        _MIN_REQUEST <= size <= MAX_FRAME
        and 0 <= version <= MAX_API_VERSION
        and corr >= 0
        and key in known_api_keys()
    ):
        return size, corr
    return None


@lru_cache(maxsize=1)
def _api_versions() -> dict[int, tuple[int, int]]:
    """API key -> the codec's version range; empty without the codec (then any version)."""
    try:
        from kipwire import codec

        return {int(k): api.versions for k, api in codec.APIS.items()}
    except (ImportError, AttributeError):
        return {}


def _request_at(buf: bytes | mmap.mmap, pos: int) -> bool:
    """A request header at `pos` whose version the codec knows for its API key.

    The version range matters: a response frame starts with a correlation id, whose two
    halves read as a plausible API key and version unless the version is checked.
    """
    if plausible_request_header(buf, pos) is None:
        return False
    key, version = struct.unpack_from(">hh", buf, pos + 4)
    span = _api_versions().get(key)
    return span is None or span[0] <= version <= span[1]


def is_frame_dump_file(path: str) -> bool:
    """Size prefixes walk the whole file to its exact end, and the first frames are requests."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 12:
                return False
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return False
    with buf:
        return is_frame_dump(buf, size)


def is_frame_dump(buf: bytes | mmap.mmap, size: int) -> bool:
    """Size prefixes walk `buf` to its exact end, and the first frames are requests."""
    pos = n = 0
    while pos + 4 <= size:
        if n < _FRAME_CHAIN and not _request_at(buf, pos):
            return False
        (length,) = _i32(buf, pos)
        if length < 0:
            return False
        pos += 4 + length
        n += 1
    return size >= 12 and pos == size
