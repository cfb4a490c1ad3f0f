"""Sans-I/O Kafka framing: size-prefixed frames out of a byte stream, and what a frame's first
bytes say without decoding its body (a request's header, a response's error code).

Like h11's receive buffer, `FrameBuffer` never reads a socket: feed it whatever bytes arrived and
take the complete frames out. A frame is a 4-byte big-endian size and that many bytes; the size is
checked against the maximum as soon as its 4 bytes are in, before any of the body is waited for.
Frames come out as memoryviews of the bytes fed (no copy) whenever a frame arrived in one piece.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterator

from ._wire import read_uvarint
from .errors import DecodeError, FrameTooLargeError, UnknownApiError
from .headers import RequestHeader, request_header_version, response_header_version
from .messages import APIS, registry
from .versions import Versions

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameBuffer",
    "RequestHeader",
    "peek_error_code",
    "peek_request_header",
]

#: Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_SIZE = struct.Struct(">i").unpack_from
_FIXED_HEADER = struct.Struct(">hhi").unpack_from  # api_key, api_version, correlation_id
_CLIENT_ID_LENGTH = struct.Struct(">h").unpack_from
_ERROR_CODE = struct.Struct(">h").unpack_from
_FIXED_WIDTHS = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
    "float64": 8, "uuid": 16,
}  # fmt: skip


class FrameBuffer:
    """Bytes in (`feed`), whole size-prefixed frames out (`next_frame`, `frames`)."""

    __slots__ = ("max_frame_size", "_data", "_view", "_pos", "_pending", "_pending_len", "_seen")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        # _data[_pos:] then the _pending pieces, in order, are the bytes not yet taken out.
        self._data = b""
        self._view = memoryview(self._data)
        self._pos = 0
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._seen = 0  # stream offset of _data[0]

    @property
    def buffered(self) -> int:
        """Bytes fed and not yet returned as part of a frame."""
        return len(self._data) - self._pos + self._pending_len

    @property
    def position(self) -> int:
        """Stream offset of the next frame's size prefix (bytes consumed so far)."""
        return self._seen + self._pos

    @property
    def next_frame_size(self) -> int | None:
        """The size prefix of the next frame once its 4 bytes are buffered, else None."""
        if self.buffered < 4:
            return None
        if len(self._data) - self._pos < 4:
            self._merge()
        return _SIZE(self._data, self._pos)[0]

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes received; anything but `bytes` is copied, as its owner may reuse it."""
        if type(data) is not bytes:
            if not isinstance(data, bytes | bytearray | memoryview):
                raise TypeError(f"feed() takes bytes, got {type(data).__name__}")
            data = bytes(data)
        if data:
            self._pending.append(data)
            self._pending_len += len(data)

    def next_frame(self) -> memoryview | None:
        """The body of the next complete frame, or None until more bytes are fed.

        Raises FrameTooLargeError (a DecodeError) for a size over `max_frame_size` and DecodeError
        for a negative size, as soon as the size prefix is in; the stream cannot be resynchronised
        after that, so every later call raises the same.
        """
        pos = self._pos
        if len(self._data) - pos < 4:
            if len(self._data) - pos + self._pending_len < 4:
                return None
            self._merge()
            pos = 0
        size = _SIZE(self._data, pos)[0]
        if size < 0 or size > self.max_frame_size:
            raise self._size_error(size)
        end = pos + 4 + size
        if end > len(self._data):
            if end - len(self._data) > self._pending_len:
                return None
            self._merge()
            pos, end = 0, 4 + size
        self._pos = end
        return self._view[pos + 4 : end]

    def frames(self) -> Iterator[memoryview]:
        """Every complete frame buffered now, in order."""
        frame = self.next_frame()
        while frame is not None:
            yield frame
            frame = self.next_frame()

    __iter__ = frames

    def compact(self) -> None:
        """Let go of the bytes already taken out, once they are at least as many as those left
        (a long-lived buffer does not hold a large frame after it; amortised O(1) per byte)."""
        if self._pos and len(self._data) - self._pos <= self._pos:
            self._merge()

    def _merge(self) -> None:
        """Join the unread tail and the pending pieces into one bytes object.

        Called only when a header or a whole frame is known to be in, so each byte is copied at
        most a couple of times however small the pieces fed: amortised O(1) per byte.
        """
        tail = self._view[self._pos :]
        self._seen += self._pos
        if not tail and len(self._pending) == 1:
            self._data = self._pending[0]  # one piece fed whole: keep it, no copy
        else:
            self._data = b"".join([tail, *self._pending])
        self._view = memoryview(self._data)
        self._pos = 0
        self._pending = []
        self._pending_len = 0

    def _size_error(self, size: int) -> DecodeError:
        if size < 0:
            return DecodeError(f"frame size {size} is negative", offset=self.position)
        return FrameTooLargeError(
            f"frame size {size} bytes exceeds the maximum of {self.max_frame_size} bytes",
            offset=self.position,
            size=size,
            limit=self.max_frame_size,
        )


def peek_request_header(frame: bytes | bytearray | memoryview) -> RequestHeader:
    """Read a request frame's header (v0, v1 or v2) without decoding its body."""
    if not isinstance(frame, bytes | bytearray | memoryview):
        raise TypeError(f"a request frame is bytes, got {type(frame).__name__}")
    if len(frame) < 8:
        raise DecodeError(f"a request header needs 8 bytes, got {len(frame)}", offset=0)
    api_key, api_version, correlation_id = _FIXED_HEADER(frame, 0)
    try:
        version = request_header_version(api_key, api_version)
    except UnknownApiError as e:
        raise UnknownApiError(e.reason, offset=0, path="request_api_key") from None
    if version == 0:
        return RequestHeader(api_key, api_version, correlation_id, None, 8)
    if len(frame) < 10:
        raise DecodeError("data ends before the client id", offset=8, path="client_id")
    n = _CLIENT_ID_LENGTH(frame, 8)[0]
    pos = 10
    if n == -1:
        client_id = None
    elif n < 0:
        raise DecodeError(f"invalid string length {n}", offset=8, path="client_id")
    elif n > len(frame) - pos:
        raise DecodeError(
            f"client id claims {n} bytes but only {len(frame) - pos} remain",
            offset=pos,
            path="client_id",
        )
    else:
        try:
            client_id = bytes(frame[pos : pos + n]).decode()
        except UnicodeDecodeError as e:
            raise DecodeError(
                f"client id is not valid UTF-8: {e.reason}", offset=pos + e.start, path="client_id"
            ) from None
        pos += n
    if version == 2:
        pos = _skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def peek_error_code(
    frame: bytes | bytearray | memoryview, api_key: int, api_version: int
) -> int | None:
    """The top-level error code of a response frame (header + body) without decoding the body.

    For a response that does not decode, e.g. an ApiVersions reply whose body does not match
    the version asked for but starts with UNSUPPORTED_VERSION. None when the body has no
    top-level ErrorCode at a fixed offset, or the frame is too short to hold it.
    """
    if api_key not in APIS or APIS[api_key][2] is None:
        raise UnknownApiError(f"unknown API key {api_key}", offset=0, path="request_api_key")
    at = _error_code_offset(api_key, api_version)
    if at is None or len(frame) < 4:
        return None
    pos = 4
    if response_header_version(api_key, api_version) == 1:
        try:
            pos = _skip_tagged_fields(frame, pos)
        except DecodeError:
            return None
    if len(frame) < pos + at + 2:
        return None
    return _ERROR_CODE(frame, pos + at)[0]


@functools.lru_cache(maxsize=1024)
def _error_code_offset(api_key: int, api_version: int) -> int | None:
    """Where a response body's ErrorCode is, when only fixed-width fields come before it."""
    at = 0
    for name, ftype, versions, _nullable, tagged, *_ in registry.module(APIS[api_key][2]).SCHEMA:
        if api_version not in Versions.parse(versions) or api_version in Versions.parse(tagged):
            continue  # absent from this version, or in the tagged section after the body
        if name == "ErrorCode":
            return at
        width = _FIXED_WIDTHS.get(ftype)
        if width is None:
            return None
        at += width
    return None


def _skip_tagged_fields(frame: bytes | bytearray | memoryview, pos: int) -> int:
    """The offset after a tagged-field section (request header v2 defines no tags to keep)."""
    count, pos = read_uvarint(frame, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(frame, pos)
        size, pos = read_uvarint(frame, pos)
        if size > len(frame) - pos:
            raise DecodeError(
                f"tagged field claims {size} bytes but only {len(frame) - pos} remain",
                offset=pos,
                path="_tagged_fields",
            )
        pos += size
    return pos
