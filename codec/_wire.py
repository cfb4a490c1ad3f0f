"""Readers and writers for Kafka's variable-width wire types, shared by the generated codecs.

Readers take `(buf, pos)` and return `(value, new_pos)`; writers append to a bytearray. Both raise
DecodeError/EncodeError with the exact offset or reason; the generated struct code adds the path.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from ._paths import VersionedEncodeError
from .errors import DecodeError, EncodeError

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
unpack_i16 = _I16.unpack_from
unpack_i32 = _I32.unpack_from
pack_i16 = _I16.pack
pack_i32 = _I32.pack
UUID = uuid.UUID
ZERO_UUID = uuid.UUID(int=0)
MAX_CLASSIC_STRING = 0x7FFF


class _ArrayUnpackers(dict):
    """`unpack_from` functions of `n` big-endian `code` values, keyed by n and made on demand."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code = code

    def __missing__(self, n: int) -> Any:
        unpack = struct.Struct(f">{n}{self.code}").unpack_from
        if len(self) < 1024:  # bounded: hostile input must not grow the cache without limit
            self[n] = unpack
        return unpack


UNPACK_INT8S = _ArrayUnpackers("b")
UNPACK_INT16S = _ArrayUnpackers("h")
UNPACK_INT32S = _ArrayUnpackers("i")
UNPACK_INT64S = _ArrayUnpackers("q")
UNPACK_UINT16S = _ArrayUnpackers("H")
UNPACK_UINT32S = _ArrayUnpackers("I")
UNPACK_FLOAT64S = _ArrayUnpackers("d")
UNPACK_BOOLS = _ArrayUnpackers("?")


def read_uvarint(buf: Any, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Read an unsigned varint: at most 5 bytes for an int32 value, 10 for an int64 (varlong).

    The one varint reader: `records.varint` and the generated codecs read with it.
    """
    start = pos
    try:
        value = buf[pos]
        pos += 1
        if value < 0x80:
            return value, pos
        value &= 0x7F
        shift = 7
        limit = 7 * max_bytes
        while True:
            byte = buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift >= limit:
                raise DecodeError(f"varint is longer than {max_bytes} bytes", offset=start)
    except IndexError:
        raise DecodeError("data ends inside a varint", offset=start) from None
    bits = 32 if max_bytes == 5 else 64
    if value >> bits:
        # 5 bytes carry 35 bits but an int32 has 32 (10 bytes carry 70, an int64 has 64).
        raise DecodeError(f"varint {value} does not fit in {bits} bits", offset=start)
    return value, pos


def uvarint_bytes(value: int) -> bytes:
    """Encode an unsigned varint."""
    if value < 0:
        raise EncodeError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_uvarint(w: bytearray, value: int) -> None:
    """Append an unsigned varint."""
    if 0 <= value < 0x80:
        w.append(value)
    else:
        w += uvarint_bytes(value)


def _length(buf: Any, pos: int, n: int, what: str, unit: str = "bytes") -> None:
    if n > len(buf) - pos:
        raise DecodeError(
            f"{what} claims {n} {unit} but only {len(buf) - pos} bytes remain", offset=pos
        )


def _utf8(raw: Any, pos: int) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"string is not valid UTF-8: {e.reason}", offset=pos + e.start) from None


def _text(buf: Any, pos: int, n: int) -> str:
    """Decode n bytes at pos as UTF-8; `bytes.decode` is about twice as fast as `str(raw, ...)`."""
    try:
        return buf[pos : pos + n].decode()
    except AttributeError:  # a memoryview has no decode()
        return _utf8(buf[pos : pos + n], pos)
    except UnicodeDecodeError as e:
        raise DecodeError(f"string is not valid UTF-8: {e.reason}", offset=pos + e.start) from None


def read_string(buf: Any, pos: int) -> tuple[str, int]:
    """Read a classic (int16-length) non-nullable string."""
    n = unpack_i16(buf, pos)[0]
    pos += 2
    if n < 0:
        raise DecodeError("non-nullable string is null on the wire", offset=pos - 2)
    if n > len(buf) - pos:
        _length(buf, pos, n, "string")
    return _text(buf, pos, n), pos + n


def read_nullable_string(buf: Any, pos: int) -> tuple[str | None, int]:
    """Read a classic nullable string (-1 means null)."""
    n = unpack_i16(buf, pos)[0]
    pos += 2
    if n < 0:
        if n != -1:
            raise DecodeError(f"invalid string length {n}", offset=pos - 2)
        return None, pos
    if n > len(buf) - pos:
        _length(buf, pos, n, "string")
    return _text(buf, pos, n), pos + n


def read_compact_string(buf: Any, pos: int) -> tuple[str, int]:
    """Read a compact (uvarint length + 1) non-nullable string."""
    start = pos
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("non-nullable string is null on the wire", offset=start)
    n -= 1
    if n > len(buf) - pos:
        _length(buf, pos, n, "string")
    return _text(buf, pos, n), pos + n


def read_compact_nullable_string(buf: Any, pos: int) -> tuple[str | None, int]:
    """Read a compact nullable string (length 0 means null)."""
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    n -= 1
    if n > len(buf) - pos:
        _length(buf, pos, n, "string")
    return _text(buf, pos, n), pos + n


def read_bytes(buf: Any, pos: int) -> tuple[Any, int]:
    """Read classic (int32-length) non-nullable bytes."""
    n = unpack_i32(buf, pos)[0]
    pos += 4
    if n < 0:
        raise DecodeError("non-nullable bytes are null on the wire", offset=pos - 4)
    _length(buf, pos, n, "bytes")
    return buf[pos : pos + n], pos + n


def read_nullable_bytes(buf: Any, pos: int) -> tuple[Any, int]:
    """Read classic nullable bytes (-1 means null)."""
    n = unpack_i32(buf, pos)[0]
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"invalid bytes length {n}", offset=pos - 4)
        return None, pos
    _length(buf, pos, n, "bytes")
    return buf[pos : pos + n], pos + n


def read_compact_bytes(buf: Any, pos: int) -> tuple[Any, int]:
    """Read compact non-nullable bytes."""
    start = pos
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("non-nullable bytes are null on the wire", offset=start)
    n -= 1
    _length(buf, pos, n, "bytes")
    return buf[pos : pos + n], pos + n


def read_compact_nullable_bytes(buf: Any, pos: int) -> tuple[Any, int]:
    """Read compact nullable bytes."""
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    n -= 1
    _length(buf, pos, n, "bytes")
    return buf[pos : pos + n], pos + n


def read_array_length(buf: Any, pos: int, nullable: bool) -> tuple[int, int]:
    """Read a classic array length; -1 is null (returned as -1) when nullable."""
    n = unpack_i32(buf, pos)[0]
    pos += 4
    if n < 0:
        if n == -1 and nullable:
            return -1, pos
        raise DecodeError(
            "non-nullable array is null on the wire" if n == -1 else f"invalid array length {n}",
            offset=pos - 4,
        )
    # Every element takes at least one byte, so a longer claim is a lie; checked before allocating.
    _length(buf, pos, n, "array", "elements")
    return n, pos


def read_compact_array_length(buf: Any, pos: int, nullable: bool) -> tuple[int, int]:
    """Read a compact array length (uvarint + 1); 0 is null (returned as -1) when nullable."""
    start = pos
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        if nullable:
            return -1, pos
        raise DecodeError("non-nullable array is null on the wire", offset=start)
    n -= 1
    if n > len(buf) - pos:
        _length(buf, pos, n, "array", "elements")
    return n, pos


_new_object = object.__new__
_set_slot = object.__setattr__
_UNKNOWN_SAFETY = uuid.SafeUUID.unknown


def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    """uuid.UUID(bytes=raw) for exactly 16 bytes, without its argument checks (twice as fast)."""
    u = _new_object(UUID)
    _set_slot(u, "int", int.from_bytes(raw, "big"))
    _set_slot(u, "is_safe", _UNKNOWN_SAFETY)
    return u


def read_uuid(buf: Any, pos: int) -> tuple[uuid.UUID, int]:
    """Read a 16-byte uuid."""
    raw = bytes(buf[pos : pos + 16])
    if len(raw) != 16:
        raise DecodeError("data ends inside a uuid", offset=pos)
    return uuid_from_bytes(raw), pos + 16


def read_unknown_tag(buf: Any, pos: int, size: int) -> tuple[bytes, int]:
    """Take the raw bytes of a tagged field this version does not know."""
    _length(buf, pos, size, "tagged field")
    return bytes(buf[pos : pos + size]), pos + size


def check_tag_end(pos: int, end: int, tag: int) -> None:
    """A known tagged field must fill exactly the size its header declared."""
    if pos != end:
        raise DecodeError(
            f"tagged field {tag} declares {end} as its end but ends at {pos}", offset=pos
        )


def _encode_str(value: Any) -> bytes:
    if value is None:
        raise EncodeError("null is not allowed: the field is not nullable in this version")
    if not isinstance(value, str):
        raise EncodeError(f"expected a str, got {type(value).__name__}")
    return value.encode("utf-8")


def write_string(w: bytearray, value: Any) -> None:
    """Append a classic non-nullable string."""
    raw = _encode_str(value)
    if len(raw) > MAX_CLASSIC_STRING:
        raise EncodeError(f"string of {len(raw)} bytes is longer than 32767")
    w += pack_i16(len(raw))
    w += raw


def write_nullable_string(w: bytearray, value: Any) -> None:
    """Append a classic nullable string."""
    if value is None:
        w += b"\xff\xff"
    else:
        write_string(w, value)


def write_compact_string(w: bytearray, value: Any) -> None:
    """Append a compact non-nullable string."""
    raw = _encode_str(value)
    n = len(raw) + 1
    if n < 0x80:
        w.append(n)
    else:
        w += uvarint_bytes(n)
    w += raw


def write_compact_nullable_string(w: bytearray, value: Any) -> None:
    """Append a compact nullable string."""
    if value is None:
        w.append(0)
    else:
        write_compact_string(w, value)


def _as_bytes(value: Any) -> Any:
    if value is None:
        raise EncodeError("null is not allowed: the field is not nullable in this version")
    if not isinstance(value, bytes | bytearray | memoryview):
        raise EncodeError(f"expected bytes, got {type(value).__name__}")
    return value


def write_bytes(w: bytearray, value: Any) -> None:
    """Append classic non-nullable bytes."""
    raw = _as_bytes(value)
    w += pack_i32(len(raw))
    w += raw


def write_nullable_bytes(w: bytearray, value: Any) -> None:
    """Append classic nullable bytes."""
    if value is None:
        w += b"\xff\xff\xff\xff"
    else:
        write_bytes(w, value)


def write_compact_bytes(w: bytearray, value: Any) -> None:
    """Append compact non-nullable bytes."""
    raw = _as_bytes(value)
    write_uvarint(w, len(raw) + 1)
    w += raw


def write_compact_nullable_bytes(w: bytearray, value: Any) -> None:
    """Append compact nullable bytes."""
    if value is None:
        w.append(0)
    else:
        write_compact_bytes(w, value)


def uuid_bytes(value: Any) -> bytes:
    """The 16 wire bytes of a uuid given as uuid.UUID or 16 bytes."""
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, bytes | bytearray | memoryview) and len(value) == 16:
        return bytes(value)
    raise EncodeError(f"expected a uuid.UUID or 16 bytes, got {value!r}")


def write_array_length(w: bytearray, value: Any, compact: bool, nullable: bool) -> int:
    """Append an array's length (null when value is None) and return the element count."""
    if value is None:
        if not nullable:
            raise null_error()
        if compact:
            w.append(0)
        else:
            w += b"\xff\xff\xff\xff"
        return 0
    if not isinstance(value, list | tuple):
        raise EncodeError(f"expected a list, got {type(value).__name__}")
    n = len(value)
    if compact:
        write_uvarint(w, n + 1)
    else:
        w += pack_i32(n)
    return n


def null_error() -> EncodeError:
    """The error for a null where this version does not allow one (the codec adds the number)."""
    return VersionedEncodeError("null is not allowed in version")


def write_tags(w: bytearray, known: list[tuple[int, bytes]] | None, unknown: Any) -> None:
    """Append a tagged-field section: known fields and preserved unknown ones, tags ascending."""
    entries = list(known or ())
    if unknown:
        if not isinstance(unknown, dict):
            raise EncodeError("_unknown_tags must be a dict of tag number to bytes")
        entries.extend((int(t), _as_bytes(v)) for t, v in unknown.items())
        entries.sort(key=lambda e: e[0])
    write_uvarint(w, len(entries))
    last = -1
    for tag, raw in entries:
        if tag == last:
            raise EncodeError(f"tag {tag} appears twice")
        last = tag
        write_uvarint(w, tag)
        write_uvarint(w, len(raw))
        w += raw
