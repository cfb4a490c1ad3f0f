"""LZ4 frames as Kafka writes them: independent 64 KiB blocks, no checksums.

cramjam's frame codec writes linked blocks, which Kafka's Java reader cannot decode, so the frame
is assembled here over cramjam's block codec. Reading independent-block frames here too bounds the
output block by block and ignores the header checksum, which Kafka got wrong for magic 0 messages
(it hashed the magic number as well). Frames with linked blocks go to cramjam's frame decoder.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import cramjam

from ..errors import DecodeError

MAGIC = b"\x04\x22\x4d\x18"
_BLOCK_SIZE = 64 * 1024
_BD_64KB = 0x40  # block max size code 4 in bits 4-6
_FLG_V1_INDEPENDENT = 0x60  # version 01, blocks independent, no checksums, no content size
_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_UNCOMPRESSED_BIT = 0x80000000

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data``; only used on the few bytes of a frame descriptor."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32]
        while i + 16 <= n:
            for lane in range(4):
                word = int.from_bytes(data[i : i + 4], "little")
                v[lane] = (_rotl((v[lane] + word * _P2) & _M32, 13) * _P1) & _M32
                i += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        word = int.from_bytes(data[i : i + 4], "little")
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def compress(data: bytes, *, broken_header_checksum: bool = False) -> bytes:
    """Write an LZ4 frame; ``broken_header_checksum`` reproduces Kafka's magic-0 framing."""
    descriptor = bytes((_FLG_V1_INDEPENDENT, _BD_64KB))
    hashed = MAGIC + descriptor if broken_header_checksum else descriptor
    parts = [MAGIC, descriptor, bytes(((xxh32(hashed) >> 8) & 0xFF,))]
    view = memoryview(data)
    for start in range(0, len(view), _BLOCK_SIZE):
        chunk = view[start : start + _BLOCK_SIZE]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):  # incompressible: the format stores it as is
            parts += (struct.pack("<I", len(chunk) | _UNCOMPRESSED_BIT), chunk)
        else:
            parts += (struct.pack("<I", len(block)), block)
    parts.append(b"\x00\x00\x00\x00")  # end mark
    return b"".join(parts)


def decompress(data: bytes, limit: int, fallback: Callable[[bytes, int], bytes]) -> bytes:
    """Decode one or more frames into at most ``limit`` bytes, else raise DecodeError.

    ``fallback(frames, limit)`` decodes the rest from a linked-block frame on (bounded by it).
    """
    out = bytearray()
    pos = 0
    end = len(data)
    while pos < end:
        if data[pos : pos + 4] != MAGIC:
            raise DecodeError("lz4: not an LZ4 frame (bad magic number)", offset=pos)
        if end - pos < 7:
            raise DecodeError("lz4: frame header truncated", offset=pos)
        flg, bd = data[pos + 4], data[pos + 5]
        if flg >> 6 != 1:
            raise DecodeError(f"lz4: unsupported frame version {flg >> 6}", offset=pos + 4)
        if not flg & 0x20:
            return bytes(out + fallback(data[pos:], limit - len(out)))
        block_max = _BLOCK_MAX.get((bd >> 4) & 0x7)
        if block_max is None:
            raise DecodeError(f"lz4: invalid block size code in {bd:#04x}", offset=pos + 5)
        header_len = 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        if end - pos < header_len:
            raise DecodeError("lz4: frame header truncated", offset=pos)
        if flg & 0x08:
            (content_size,) = struct.unpack_from("<Q", data, pos + 6)
            if len(out) + content_size > limit:
                raise DecodeError(
                    f"lz4: frame declares {content_size} bytes, more than the {limit} allowed",
                    offset=pos,
                )
        block_checksum = 4 if flg & 0x10 else 0
        pos += header_len
        scratch = bytearray(block_max)
        while True:
            if pos + 4 > end:
                raise DecodeError("lz4: frame ends before its end mark", offset=pos)
            (size,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if size == 0:
                break
            stored = size & _UNCOMPRESSED_BIT
            size &= ~_UNCOMPRESSED_BIT
            if size > block_max or pos + size > end:
                raise DecodeError(f"lz4: block of {size} bytes does not fit", offset=pos - 4)
            block = data[pos : pos + size]
            if stored:
                out += block
            else:
                try:
                    n = cramjam.lz4.decompress_block_into(block, scratch)
                except cramjam.DecompressionError as exc:
                    raise DecodeError(f"lz4: corrupt block: {exc}", offset=pos) from None
                out += memoryview(scratch)[:n]
            if len(out) > limit:
                raise DecodeError(f"lz4: decompresses to more than {limit} bytes", offset=pos)
            pos += size + block_checksum
        if flg & 0x04:
            pos += 4  # content checksum; the batch CRC already covers the compressed bytes
    return bytes(out)
