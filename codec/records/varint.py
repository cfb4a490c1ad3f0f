"""Zigzag varints, the integer encoding of v2 records (the same as protobuf's sint32/sint64)."""

from __future__ import annotations

from .._wire import uvarint_bytes
from ..errors import DecodeError

# Most varints in a batch (lengths, small deltas) zigzag to less than 2**14, i.e. one or two bytes:
# encoding those is a list lookup instead of a loop.
_TABLE_LIMIT = 1 << 14
_SMALL = [uvarint_bytes(z) for z in range(_TABLE_LIMIT)]


def encode_varint(value: int) -> bytes:
    """Zigzag-encode a signed 64-bit integer as a varint."""
    z = (value << 1) ^ (value >> 63)
    if z < _TABLE_LIMIT:
        return _SMALL[z]
    return uvarint_bytes(z)


def read_varint(buf: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode the zigzag varint at ``pos``; return ``(value, next_pos)``.

    ``max_bytes`` is 5 for a varint (int32) and 10 for a varlong (int64), as in Kafka's ByteUtils.
    Raises IndexError when the buffer ends inside the varint (callers turn that into DecodeError).
    """
    z, pos = read_unsigned(buf, pos, max_bytes)
    return (z >> 1) ^ -(z & 1), pos


def read_unsigned(buf: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode the varint at ``pos`` without undoing the zigzag; return ``(raw, next_pos)``.

    Unlike `codec._wire.read_uvarint` it raises IndexError at the end of ``buf``: record decoding
    catches that once around its whole loop, as it does for its inlined one- and two-byte reads.
    """
    start = pos
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 7 * max_bytes:
            raise DecodeError(f"varint longer than {max_bytes} bytes", offset=start)
    bits = 32 if max_bytes == 5 else 64
    if result >> bits:
        # 5 bytes carry 35 bits but an int32 has 32 (10 bytes carry 70, an int64 has 64).
        raise DecodeError(f"varint overflows int{bits}", offset=start)
    return result, pos
