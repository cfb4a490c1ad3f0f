"""The four codecs of Kafka's record formats, with a hard bound on decompressed size.

gzip uses zlib-ng (the zlib module's API, so ``max_length`` bounds output exactly; it deflates a
batch about twice as fast as the standard library's zlib at the same level); snappy, lz4 and zstd
use cramjam, one maintained wheel with all three that also decompresses into a caller-sized
buffer, which is how a decompression bomb is stopped without allocating what it asks for.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import cramjam
from zlib_ng import zlib_ng as zlib

from ..errors import DecodeError
from . import lz4frame
from .model import Compression

DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

# snappy-java's stream format, which Kafka's Java client writes: a 16-byte header (magic, version
# 1, compatible version 1), then blocks of raw snappy, each after a big-endian int32 length.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size

_GZIP_LEVEL = 6  # java.util.zip's default, which Kafka uses unless configured
_ZSTD_LEVEL = 3  # Kafka's default compression.zstd.level
_FIRST_GUESS = 64 * 1024  # smallest first output buffer when the size is unknown


def compress(codec: Compression, data: bytes, *, magic: int = 2) -> bytes:
    """Compress a record payload the way Kafka's Java client does for this codec and magic."""
    if codec is Compression.GZIP:
        deflater = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: gzip container
        return deflater.compress(data) + deflater.flush()
    if codec is Compression.SNAPPY:
        parts = [_XERIAL_HEADER]
        view = memoryview(data)
        for start in range(0, len(view), _XERIAL_BLOCK):
            block = cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK])
            parts += (struct.pack(">i", len(block)), block)
        return b"".join(parts)
    if codec is Compression.LZ4:
        return lz4frame.compress(data, broken_header_checksum=magic == 0)
    if codec is Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    raise ValueError(f"not a compression codec: {codec!r}")


def decompress(
    codec: Compression, data: bytes, *, limit: int = DEFAULT_MAX_DECOMPRESSED, magic: int = 2
) -> bytes:
    """Decompress a record payload; more than ``limit`` bytes of output is a DecodeError."""
    if codec is Compression.GZIP:
        return _gunzip(data, limit)
    if codec is Compression.SNAPPY:
        return _unsnappy(data, limit)
    if codec is Compression.LZ4:
        # magic needs no special case: the frame reader ignores the header checksum magic 0 broke
        return lz4frame.decompress(data, limit, _lz4_linked)
    if codec is Compression.ZSTD:
        return _into_bounded(cramjam.zstd.decompress_into, data, limit, _zstd_size(data), "zstd")
    raise ValueError(f"not a compression codec: {codec!r}")


def _bomb(name: str, limit: int) -> DecodeError:
    return DecodeError(f"{name}: decompresses to more than {limit} bytes (the configured limit)")


def _gunzip(data: bytes, limit: int) -> bytes:
    out: list[bytes] = []
    total = 0
    rest = data
    while True:  # a gzip stream may hold several members; Java's GZIPInputStream reads them all
        inflater = zlib.decompressobj(47)  # 32 + 15: gzip or zlib header, detected
        try:
            chunk = inflater.decompress(rest, limit + 1 - total)
        except zlib.error as exc:
            raise DecodeError(f"gzip: corrupt data: {exc}") from None
        total += len(chunk)
        out.append(chunk)
        if total > limit:
            raise _bomb("gzip", limit)
        if not inflater.eof:
            raise DecodeError("gzip: stream ends early")
        rest = inflater.unused_data
        if not rest:
            return b"".join(out)


def _unsnappy(data: bytes, limit: int) -> bytes:
    if bytes(data[:8]) != _XERIAL_MAGIC:
        return _snappy_raw(data, limit, 0, limit)
    if len(data) < len(_XERIAL_HEADER):
        raise DecodeError("snappy: xerial header truncated")
    out = []
    room = limit
    pos = len(_XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecodeError("snappy: xerial block length truncated", offset=pos)
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise DecodeError(f"snappy: xerial block of {size} bytes does not fit", offset=pos - 4)
        block = _snappy_raw(data[pos : pos + size], room, pos, limit)
        room -= len(block)
        out.append(block)
        pos += size
    return b"".join(out)


def _snappy_raw(block: bytes, room: int, offset: int, limit: int) -> bytes:
    # Raw snappy starts with its decompressed length: checked before anything is allocated.
    try:
        size = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as exc:
        raise DecodeError(f"snappy: corrupt block: {exc}", offset=offset) from None
    if size > room:
        raise _bomb("snappy", limit)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise DecodeError(f"snappy: corrupt block: {exc}", offset=offset) from None


def _lz4_linked(frames: bytes, limit: int) -> bytes:
    return _into_bounded(cramjam.lz4.decompress_into, frames, limit, 4 * len(frames), "lz4")


def _zstd_size(data: bytes) -> int:
    """Frame_Content_Size from a zstd frame header when present, else a guess from the input."""
    if len(data) < 6 or bytes(data[:4]) != b"\x28\xb5\x2f\xfd":
        return 8 * len(data)
    descriptor = data[4]
    fcs_code, single_segment, dict_code = descriptor >> 6, descriptor & 0x20, descriptor & 0x03
    fcs_len = (1 if single_segment else 0, 2, 4, 8)[fcs_code]
    if not fcs_len:
        return 8 * len(data)
    start = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_code]
    if start + fcs_len > len(data):
        return 8 * len(data)
    size = int.from_bytes(data[start : start + fcs_len], "little")
    return size + 256 if fcs_len == 2 else size


def _into_bounded(
    decompress_into: Callable[[bytes, bytearray], int],
    data: bytes,
    limit: int,
    guess: int,
    name: str,
) -> bytes:
    """Decompress into buffers of growing size, never larger than ``limit + 1`` bytes.

    cramjam fails with "failed to write whole buffer" when the output does not fit, so a bomb
    costs at most a few passes over ``limit`` bytes; typical batches fit the first guess.
    """
    size = min(max(guess + 1, _FIRST_GUESS), limit + 1)
    while True:
        out = bytearray(size)
        try:
            n = decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if "whole buffer" not in str(exc):
                raise DecodeError(f"{name}: corrupt data: {exc}") from None
            if size > limit:
                raise _bomb(name, limit) from None
            size = min(size * 4, limit + 1)
            continue
        if n > limit:
            raise _bomb(name, limit)
        return bytes(memoryview(out)[:n])
