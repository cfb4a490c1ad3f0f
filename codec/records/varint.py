"""Zigzag varints, the integer encoding of v2 records (the same as protobuf's sint32/sint64)."""

from __future__ import annotations

from .._wire import read_uvarint, uvarint_bytes

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
    A varint cut off by the end of ``buf`` is a DecodeError with the varint's offset in ``buf``.
    """
    z, pos = read_uvarint(buf, pos, max_bytes)
    return (z >> 1) ^ -(z & 1), pos


#: The varint at ``pos`` without undoing the zigzag: batch decoding inlines the one- and two-byte
#: cases and calls this for longer ones.
read_unsigned = read_uvarint
