"""Kafka's wire primitives as construct classes, for building your own constructs.

The generated message codecs do not need these (they inline the same logic); they are for users
who describe other Kafka-framed data with construct, e.g. a custom frame around a message::

    from construct import Int32sb, Struct
    from kipwire.codec import primitives as kp

    Frame = Struct("id" / kp.UNSIGNED_VARINT, "name" / kp.COMPACT_STRING,
                   "ids" / kp.CompactArrayOf(Int32sb), "_tags" / kp.TaggedFields({}))

Instances carry Kafka's own type names (`Type.UNSIGNED_VARINT`, `Type.COMPACT_STRING`, `Type.UUID`
in Kafka's Java code). Every class works interpreted and under construct's compiler
(`Struct(...).compile()`): `_emitparse`/`_emitbuild` emit calls to the stream helpers below.
Bad bytes raise `codec.DecodeError` (with the stream offset, and the construct path when
interpreted); bad values raise `codec.EncodeError`. A length prefix is checked against the bytes
left in the stream before anything is read or allocated.
"""

from __future__ import annotations

import io as _io
import struct
import uuid
from collections.abc import Mapping
from typing import Any

from construct import Construct, Container, FormatField, ListContainer, SizeofError, Subconstruct

from . import _wire
from .errors import DecodeError, EncodeError

__all__ = [
    "BYTES",
    "COMPACT_BYTES",
    "COMPACT_NULLABLE_BYTES",
    "COMPACT_NULLABLE_STRING",
    "COMPACT_STRING",
    "NULLABLE_BYTES",
    "NULLABLE_STRING",
    "STRING",
    "UNSIGNED_VARINT",
    "UNSIGNED_VARLONG",
    "UUID",
    "VARINT",
    "VARLONG",
    "ArrayOf",
    "CompactArrayOf",
    "KafkaArray",
    "KafkaBytes",
    "KafkaString",
    "KafkaUuid",
    "NullableStruct",
    "TaggedFields",
    "UnsignedVarint",
    "ZigZagVarint",
]

# Reads of at most this many bytes are issued directly; longer ones are checked against the
# bytes left first, or read in pieces of this size when the stream cannot tell how many are left.
_CHUNK = 1 << 20
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


# -- stream helpers (called by interpreted and compiled code alike) ----------------------------


def _tell(stream: Any) -> int | None:
    try:
        return stream.tell()
    except (OSError, AttributeError, ValueError):
        return None


def _join(outer: str, inner: str) -> str:
    if not outer or not inner:
        return outer or inner
    return outer + inner if inner.startswith("[") else f"{outer}.{inner}"


def _path(path: str | None) -> str:
    """construct's '(parsing) -> a -> [3] -> b' as the codec's 'a[3].b'."""
    out = ""
    for part in (path or "").split("->"):
        part = part.strip()
        if part and not part.startswith("("):
            out = _join(out, part)
    return out


def _plain(value: Any) -> Any:
    """Containers as plain dicts (Container equality skips '_' keys such as _unknown_tags)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _remaining(stream: Any) -> int | None:
    """Bytes left in a seekable stream; None when the stream cannot say."""
    if type(stream) is _io.BytesIO:
        return stream.getbuffer().nbytes - stream.tell()
    try:
        pos = stream.tell()
        end = stream.seek(0, 2)
        stream.seek(pos)
    except (OSError, AttributeError, ValueError):
        return None
    return end - pos


def read_exact(stream: Any, n: int, what: str = "field", path: str | None = None) -> bytes:
    """Read exactly n bytes; DecodeError (before allocating n bytes) when fewer are left."""
    start = _tell(stream)
    if n > _CHUNK or type(stream) is not _io.BytesIO:
        left = _remaining(stream)
        if left is not None and n > left:
            raise DecodeError(
                f"{what} claims {n} bytes but only {left} remain", offset=start, path=_path(path)
            )
    if n <= _CHUNK:
        data = stream.read(n)
    else:  # the stream cannot say what is left: never ask it for more than a chunk at once
        pieces = []
        todo = n
        while todo:
            piece = stream.read(min(todo, _CHUNK))
            if not piece:
                break
            pieces.append(piece)
            todo -= len(piece)
        data = b"".join(pieces)
    if len(data) != n:
        raise DecodeError(
            f"{what} claims {n} bytes but only {len(data)} remain", offset=start, path=_path(path)
        )
    return data


def read_unsigned_varint(stream: Any, bits: int = 32, path: str | None = None) -> int:
    """Read an unsigned varint of at most `bits` value bits (5 bytes for 32, 10 for 64)."""
    read = stream.read
    raw = read(1)
    if raw and raw[0] < 0x80:
        return raw[0]
    max_bytes = (bits + 6) // 7
    # Take the varint's bytes off the stream, then decode them with the codec's one varint
    # reader. A BytesIO (what construct parses from) gives back what the varint did not use; any
    # other stream is read a byte at a time, never past the varint.
    if type(stream) is _io.BytesIO:
        raw += read(max_bytes - 1)
    else:
        while raw and raw[-1] >= 0x80 and len(raw) < max_bytes:
            byte = read(1)
            if not byte:
                break
            raw += byte
    try:
        value, used = _wire.read_uvarint(raw, 0, max_bytes)
    except DecodeError as e:
        end = _tell(stream)
        start = None if end is None else end - len(raw)
        raise DecodeError(e.reason, offset=start, path=_path(path)) from None
    if used != len(raw):
        stream.seek(used - len(raw), 1)
    if value >> bits:  # _wire checks 32 and 64 bits; a construct may ask for fewer
        end = _tell(stream)
        raise DecodeError(
            f"varint {value} does not fit in {bits} bits",
            offset=None if end is None else end - used,
            path=_path(path),
        )
    return value


def write_unsigned_varint(value: Any, stream: Any, bits: int = 32) -> Any:
    """Write an unsigned varint of at most `bits` bits; return the value."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(f"expected an int, got {type(value).__name__}")
    if not 0 <= value < 1 << bits:
        raise EncodeError(f"unsigned {bits}-bit varint cannot hold {value}")
    stream.write(bytes((value,)) if value < 0x80 else _wire.uvarint_bytes(value))
    return value


def read_zigzag_varint(stream: Any, bits: int = 32, path: str | None = None) -> int:
    """Read a zigzag-encoded signed varint (Kafka's varint/varlong)."""
    v = read_unsigned_varint(stream, bits, path)
    return (v >> 1) ^ -(v & 1)


def write_zigzag_varint(value: Any, stream: Any, bits: int = 32) -> Any:
    """Write a zigzag-encoded signed varint; return the value."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(f"expected an int, got {type(value).__name__}")
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise EncodeError(f"signed {bits}-bit varint cannot hold {value}")
    zz = (value << 1) ^ (value >> (bits - 1))
    stream.write(bytes((zz,)) if zz < 0x80 else _wire.uvarint_bytes(zz))
    return value


def _read_length(stream: Any, compact: bool, width: struct.Struct, path: str | None) -> int:
    """A length prefix, -1 for null: compact is uvarint(n + 1), classic is int16/int32."""
    if compact:
        return read_unsigned_varint(stream, 32, path) - 1
    raw = stream.read(width.size)
    if len(raw) != width.size:
        raise DecodeError("data ends inside a length", offset=_tell(stream), path=_path(path))
    return width.unpack(raw)[0]


def _null_or_bad(stream: Any, n: int, what: str, nullable: bool, width: int, path: str | None):
    """The value of a negative length: None when allowed, else a DecodeError."""
    if n == -1 and nullable:
        return None
    pos = _tell(stream)
    raise DecodeError(
        f"non-nullable {what} is null on the wire" if n == -1 else f"invalid {what} length {n}",
        offset=None if pos is None else pos - width,
        path=_path(path),
    )


def read_string(stream: Any, compact: bool, nullable: bool, path: str | None = None) -> Any:
    """Read a Kafka string (classic int16 or compact length); None for null when nullable."""
    n = _read_length(stream, compact, _I16, path)
    if n < 0:
        return _null_or_bad(stream, n, "string", nullable, 1 if compact else 2, path)
    start = _tell(stream)
    raw = read_exact(stream, n, "string", path)
    try:
        return raw.decode()
    except UnicodeDecodeError as e:
        raise DecodeError(
            f"string is not valid UTF-8: {e.reason}",
            offset=None if start is None else start + e.start,
            path=_path(path),
        ) from None


_STRING_WRITERS = {
    (False, False): _wire.write_string,
    (False, True): _wire.write_nullable_string,
    (True, False): _wire.write_compact_string,
    (True, True): _wire.write_compact_nullable_string,
}
_BYTES_WRITERS = {
    (False, False): _wire.write_bytes,
    (False, True): _wire.write_nullable_bytes,
    (True, False): _wire.write_compact_bytes,
    (True, True): _wire.write_compact_nullable_bytes,
}


def write_string(value: Any, stream: Any, compact: bool, nullable: bool) -> Any:
    """Write a Kafka string; return the value."""
    w = bytearray()
    try:
        _STRING_WRITERS[(compact, nullable)](w, value)
    except UnicodeEncodeError as e:
        raise EncodeError(f"string cannot be encoded as UTF-8: {e.reason}") from None
    stream.write(w)
    return value


def read_bytes(stream: Any, compact: bool, nullable: bool, path: str | None = None) -> Any:
    """Read Kafka bytes (classic int32 or compact length); None for null when nullable."""
    n = _read_length(stream, compact, _I32, path)
    if n < 0:
        return _null_or_bad(stream, n, "bytes", nullable, 1 if compact else 4, path)
    return read_exact(stream, n, "bytes", path)


def write_bytes(value: Any, stream: Any, compact: bool, nullable: bool) -> Any:
    """Write Kafka bytes; return the value."""
    w = bytearray()
    _BYTES_WRITERS[(compact, nullable)](w, value)
    stream.write(w)
    return value


def read_uuid(stream: Any, path: str | None = None) -> uuid.UUID:
    """Read a 16-byte uuid."""
    return _wire.uuid_from_bytes(read_exact(stream, 16, "uuid", path))


def write_uuid(value: Any, stream: Any) -> Any:
    """Write a uuid given as uuid.UUID or 16 bytes; return the value."""
    stream.write(_wire.uuid_bytes(value))
    return value


def read_array_count(
    stream: Any, compact: bool, nullable: bool, min_size: int, path: str | None = None
) -> int:
    """An array's element count (-1 for null), checked against the bytes left."""
    n = _read_length(stream, compact, _I32, path)
    if n < 0:
        _null_or_bad(stream, n, "array", nullable, 1 if compact else 4, path)  # raises unless null
        return -1
    # Every element takes at least min_size (>= 1) bytes: a longer claim is a lie, caught
    # before the list (or anything else) is allocated.
    left = _remaining(stream)
    if left is not None and n * min_size > left:
        raise DecodeError(
            f"array claims {n} elements of at least {min_size} bytes but only {left} bytes remain",
            offset=_tell(stream),
            path=_path(path),
        )
    return n


def write_array_count(value: Any, stream: Any, compact: bool, nullable: bool) -> Any:
    """Write an array's count prefix; return the elements (None for a null array)."""
    if value is None:
        if not nullable:
            raise EncodeError("null is not allowed: the array is not nullable")
        stream.write(b"\x00" if compact else b"\xff\xff\xff\xff")
        return None
    if not isinstance(value, list | tuple):
        raise EncodeError(f"expected a list, got {type(value).__name__}")
    w = bytearray()
    _wire.write_array_length(w, value, compact)
    stream.write(w)
    return value


def read_fixed_array(stream: Any, n: int, fmt: str, size: int, path: str | None = None) -> Any:
    """n fixed-width values (construct FormatField format `fmt`) in one struct call."""
    raw = read_exact(stream, n * size, "array", path)
    return ListContainer(struct.unpack(f"{fmt[0]}{n}{fmt[1:]}", raw))


def read_null_marker(stream: Any, path: str | None = None) -> bool:
    """A nullable struct's int8 marker: True for null (Kafka treats any negative as null)."""
    raw = stream.read(1)
    if not raw:
        raise DecodeError("data ends before a nullable struct marker", offset=_tell(stream),
                          path=_path(path))  # fmt: skip
    return raw[0] >= 0x80


def parse_tags(
    stream: Any, this: Any, known: Mapping[int, tuple[str, Any]], tf: Any, path: str | None = None
) -> Any:
    """Read a tagged-field section: known tags through `known[tag] = (name, parse(io, this))`."""
    start = _tell(stream)
    count = read_unsigned_varint(stream, 32, path)
    left = _remaining(stream)
    if left is not None and count * 2 > left:  # a tag and a size take a byte each at least
        raise DecodeError(
            f"tagged-field section claims {count} fields but only {left} bytes remain",
            offset=start,
            path=_path(path),
        )
    out = Container()
    for name, default in tf._defaults:
        out[name] = default
    unknown: dict[int, bytes] = {}
    for _ in range(count):
        tag = read_unsigned_varint(stream, 32, path)
        size = read_unsigned_varint(stream, 32, path)
        at = _tell(stream)
        raw = read_exact(stream, size, f"tagged field {tag}", path)
        entry = known.get(tag)
        if entry is None:
            unknown[tag] = raw
            continue
        name, parse = entry
        sub = _io.BytesIO(raw)
        try:
            value = parse(sub, this)
        except DecodeError as e:
            where = None if at is None or e.offset is None else at + e.offset
            raise DecodeError(
                e.reason, offset=where, path=_join(_path(path), e.path or name)
            ) from None
        if sub.tell() != size:
            raise DecodeError(
                f"tagged field {tag} declares {size} bytes but its value takes {sub.tell()}",
                offset=at,
                path=_join(_path(path), name),
            )
        out[name] = value
    if unknown:
        out["_unknown_tags"] = unknown
    return out


def build_tags(obj: Any, stream: Any, this: Any, known: Mapping[str, tuple[int, Any]], tf: Any):
    """Write a tagged-field section: fields away from their default and unknown tags, ascending."""
    if obj is None:
        obj = {}
    if not isinstance(obj, Mapping):
        raise EncodeError(f"expected a dict of tagged fields, got {type(obj).__name__}")
    for key in obj:
        if key not in known and key != "_unknown_tags":
            raise EncodeError(f"unknown tagged field {key!r}", path=str(key))
    entries: list[tuple[int, bytes]] = []
    for name, default in tf._defaults:
        value = obj.get(name, default)
        if value is default or _plain(value) == _plain(default):
            continue  # Kafka omits a tagged field that holds its default
        tag, build = known[name]
        sub = _io.BytesIO()
        try:
            build(value, sub, this)
        except EncodeError as e:
            raise EncodeError(e.reason, path=f"{name}.{e.path}" if e.path else name) from None
        entries.append((tag, sub.getvalue()))
    unknown = obj.get("_unknown_tags")
    if unknown:
        if not isinstance(unknown, Mapping):
            raise EncodeError("_unknown_tags must be a dict of tag number to bytes")
        taken = {tag for tag, _ in tf._known}
        for tag, raw in unknown.items():
            if not isinstance(tag, int) or tag < 0:
                raise EncodeError(f"unknown tag {tag!r} is not a non-negative int")
            if tag in taken:
                raise EncodeError(f"unknown tag {tag} is a known tag of this section")
            if not isinstance(raw, bytes | bytearray | memoryview):
                raise EncodeError(f"unknown tag {tag} must hold bytes")
            entries.append((tag, bytes(raw)))
        entries.sort(key=lambda e: e[0])
    w = bytearray()
    _wire.write_uvarint(w, len(entries))
    for tag, raw in entries:
        _wire.write_uvarint(w, tag)
        _wire.write_uvarint(w, len(raw))
        w += raw
    stream.write(w)
    return obj


# -- construct classes --------------------------------------------------------------------------


def _import(code: Any, name: str) -> str:
    """Make a helper of this module available to compiled code; return its local name."""
    alias = f"_kipwire_{name}"
    code.append(f"from {__name__} import {name} as {alias}")
    return alias


class UnsignedVarint(Construct):
    """Kafka's unsigned varint (bits=32, at most 5 bytes) or unsigned varlong (bits=64)."""

    def __init__(self, bits: int = 32) -> None:
        super().__init__()
        self.bits = bits

    def _parse(self, stream: Any, context: Any, path: Any) -> int:
        return read_unsigned_varint(stream, self.bits, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        return write_unsigned_varint(obj, stream, self.bits)

    def _sizeof(self, context: Any, path: Any) -> int:
        raise SizeofError("a varint has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        return f"{_import(code, 'read_unsigned_varint')}(io, {self.bits})"

    def _emitbuild(self, code: Any) -> str:
        return f"{_import(code, 'write_unsigned_varint')}(obj, io, {self.bits})"


class ZigZagVarint(Construct):
    """Kafka's signed varint (bits=32) or varlong (bits=64), zigzag encoded."""

    def __init__(self, bits: int = 32) -> None:
        super().__init__()
        self.bits = bits

    def _parse(self, stream: Any, context: Any, path: Any) -> int:
        return read_zigzag_varint(stream, self.bits, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        return write_zigzag_varint(obj, stream, self.bits)

    def _sizeof(self, context: Any, path: Any) -> int:
        raise SizeofError("a varint has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        return f"{_import(code, 'read_zigzag_varint')}(io, {self.bits})"

    def _emitbuild(self, code: Any) -> str:
        return f"{_import(code, 'write_zigzag_varint')}(obj, io, {self.bits})"


class KafkaString(Construct):
    """A UTF-8 string: classic (int16 length, -1 null) or compact (uvarint length + 1, 0 null).

    Classic strings longer than 32,767 bytes are rejected on write, as Kafka's Java code does.
    """

    def __init__(self, compact: bool = False, nullable: bool = False) -> None:
        super().__init__()
        self.compact = compact
        self.nullable = nullable

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        return read_string(stream, self.compact, self.nullable, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        return write_string(obj, stream, self.compact, self.nullable)

    def _sizeof(self, context: Any, path: Any) -> int:
        raise SizeofError("a string has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        return f"{_import(code, 'read_string')}(io, {self.compact}, {self.nullable})"

    def _emitbuild(self, code: Any) -> str:
        return f"{_import(code, 'write_string')}(obj, io, {self.compact}, {self.nullable})"


class KafkaBytes(Construct):
    """Raw bytes: classic (int32 length, -1 null) or compact (uvarint length + 1, 0 null)."""

    def __init__(self, compact: bool = False, nullable: bool = False) -> None:
        super().__init__()
        self.compact = compact
        self.nullable = nullable

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        return read_bytes(stream, self.compact, self.nullable, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        return write_bytes(obj, stream, self.compact, self.nullable)

    def _sizeof(self, context: Any, path: Any) -> int:
        raise SizeofError("bytes have no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        return f"{_import(code, 'read_bytes')}(io, {self.compact}, {self.nullable})"

    def _emitbuild(self, code: Any) -> str:
        return f"{_import(code, 'write_bytes')}(obj, io, {self.compact}, {self.nullable})"


class KafkaUuid(Construct):
    """A 16-byte uuid: parses to uuid.UUID, builds from uuid.UUID or 16 bytes."""

    def _parse(self, stream: Any, context: Any, path: Any) -> uuid.UUID:
        return read_uuid(stream, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        return write_uuid(obj, stream)

    def _sizeof(self, context: Any, path: Any) -> int:
        return 16

    def _emitparse(self, code: Any) -> str:
        return f"{_import(code, 'read_uuid')}(io)"

    def _emitbuild(self, code: Any) -> str:
        return f"{_import(code, 'write_uuid')}(obj, io)"


def _fixed_format(subcon: Construct) -> tuple[str, int] | None:
    """(format, size) when every element is one fixed-width struct value, e.g. Int32sb."""
    if isinstance(subcon, FormatField) and len(subcon.fmtstr) == 2 and subcon.fmtstr[0] in "<>=!":
        return subcon.fmtstr, subcon.length
    return None


class KafkaArray(Subconstruct):
    """An array: classic (int32 count, -1 null) or compact (uvarint count + 1, 0 null).

    The count is checked against the bytes left (at least one byte per element, or the element's
    size when fixed) before the list is allocated. Arrays of fixed-width numbers (Int32sb, ...)
    are read with one struct call.
    """

    def __init__(self, subcon: Construct, compact: bool = False, nullable: bool = False) -> None:
        super().__init__(subcon)
        self.compact = compact
        self.nullable = nullable
        self.flagbuildnone = nullable
        try:
            self.min_size = max(1, subcon.sizeof())
        except Exception:  # variable-size element (SizeofError) or one needing a context
            self.min_size = 1
        self.fixed = _fixed_format(subcon)

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        n = read_array_count(stream, self.compact, self.nullable, self.min_size, path)
        if n < 0:
            return None
        if self.fixed is not None:
            return read_fixed_array(stream, n, self.fixed[0], self.fixed[1], path)
        out = ListContainer()
        for i in range(n):
            context._index = i
            out.append(self.subcon._parsereport(stream, context, f"{path} -> [{i}]"))
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        items = write_array_count(obj, stream, self.compact, self.nullable)
        if items is None:
            return None
        out = ListContainer()
        for i, item in enumerate(items):
            context._index = i
            try:
                out.append(self.subcon._build(item, stream, context, path))
            except EncodeError as e:
                raise EncodeError(e.reason, path=_join(f"[{i}]", e.path)) from None
        return out

    def _sizeof(self, context: Any, path: Any) -> int:
        raise SizeofError("an array has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        count = _import(code, "read_array_count")
        fname = f"parse_kafka_array_{code.allocateId()}"
        if self.fixed is not None:
            fixed = _import(code, "read_fixed_array")
            loop = f"return {fixed}(io, n, {self.fixed[0]!r}, {self.fixed[1]})"
        else:
            loop = f"""result = ListContainer()
                append = result.append
                for i in range(n):
                    append({self.subcon._compileparse(code)})
                return result"""
        code.append(f"""
            def {fname}(io, this):
                n = {count}(io, {self.compact}, {self.nullable}, {self.min_size})
                if n < 0:
                    return None
                {loop}
        """)
        return f"{fname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        count = _import(code, "write_array_count")
        fname = f"build_kafka_array_{code.allocateId()}"
        code.append(f"""
            def {fname}(objs, io, this):
                objs = {count}(objs, io, {self.compact}, {self.nullable})
                if objs is None:
                    return None
                for obj in objs:
                    {self.subcon._compilebuild(code)}
                return objs
        """)
        return f"{fname}(obj, io, this)"


def ArrayOf(subcon: Construct, nullable: bool = False) -> KafkaArray:
    """A classic array (int32 count) of `subcon`, as Kafka's ArrayOf type."""
    return KafkaArray(subcon, compact=False, nullable=nullable)


def CompactArrayOf(subcon: Construct, nullable: bool = False) -> KafkaArray:
    """A compact array (uvarint count + 1) of `subcon`, as Kafka's CompactArrayOf type."""
    return KafkaArray(subcon, compact=True, nullable=nullable)


class NullableStruct(Subconstruct):
    """A nullable struct: an int8 marker (-1 null, 1 present) before the struct.

    Parsing treats any negative marker as null and any other as present, as Kafka's reader does.
    """

    def __init__(self, subcon: Construct) -> None:
        super().__init__(subcon)
        self.flagbuildnone = True

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        if read_null_marker(stream, path):
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        if obj is None:
            stream.write(b"\xff")
            return None
        stream.write(b"\x01")
        return self.subcon._build(obj, stream, context, path)

    def _sizeof(self, context: Any, path: Any) -> int:
        raise SizeofError("a nullable struct has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        marker = _import(code, "read_null_marker")
        return f"(None if {marker}(io) else {self.subcon._compileparse(code)})"

    def _emitbuild(self, code: Any) -> str:
        inner = self.subcon._compilebuild(code)
        null = "(io.write(b'\\xff'), None)[1]"
        return f"({null} if obj is None else (io.write(b'\\x01'), {inner})[1])"


class TaggedFields(Construct):
    """A tagged-field section: known fields by tag, plus unknown tags kept as raw bytes.

    `fields` maps each known tag to a named construct (`{0: "rack" / COMPACT_NULLABLE_STRING}`);
    `defaults` gives a field's default (None when not given). Parsing yields a Container with every
    known field (its default when absent from the wire) and, when any were found, `_unknown_tags`
    (tag -> raw bytes). Building writes the fields that differ from their default and the
    `_unknown_tags`, all in ascending tag order, so parse -> build reproduces the bytes.
    """

    def __init__(self, fields: Mapping[int, Construct], defaults: Mapping[str, Any] | None = None):
        super().__init__()
        self.flagbuildnone = True
        known: list[tuple[int, str, Construct]] = []
        for tag, sc in sorted(fields.items()):
            if not isinstance(tag, int) or tag < 0:
                raise ValueError(f"tag {tag!r} is not a non-negative int")
            if not sc.name or sc.name == "_unknown_tags":
                raise ValueError(f"tagged field {tag} needs a name: {{{tag}: 'name' / subcon}}")
            known.append((tag, sc.name, sc))
        names = [name for _, name, _ in known]
        if len(set(names)) != len(names):
            raise ValueError("tagged field names must be unique")
        defaults = dict(defaults or {})
        if set(defaults) - set(names):
            extra = set(defaults) - set(names)
            raise ValueError(f"defaults for fields not in the section: {extra}")
        self._known = [(tag, name) for tag, name, _ in known]
        self._subcons = known
        self._defaults = [(name, defaults.get(name)) for name in names]

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        # Each known field is parsed from its own bytes; its path restarts at its name
        # (construct's Renamed adds ' -> name').
        parsers = {
            tag: (name, lambda io, this, sc=sc: sc._parsereport(io, this, ""))
            for tag, name, sc in self._subcons
        }
        return parse_tags(stream, context, parsers, self, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        builders = {
            name: (tag, lambda o, io, this, sc=sc: sc._build(o, io, this, ""))
            for tag, name, sc in self._subcons
        }
        return build_tags(obj, stream, context, builders, self)

    def _sizeof(self, context: Any, path: Any) -> int:
        raise SizeofError("a tagged-field section has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        parse = _import(code, "parse_tags")
        fname = f"tagged_parsers_{code.allocateId()}"
        code.linkedinstances[id(self)] = self
        items = ", ".join(
            f"{tag}: ({name!r}, lambda io, this: {sc._compileparse(code)})"
            for tag, name, sc in self._subcons
        )
        code.append(f"{fname} = {{{items}}}")
        return f"{parse}(io, this, {fname}, linkedinstances[{id(self)}])"

    def _emitbuild(self, code: Any) -> str:
        build = _import(code, "build_tags")
        fname = f"tagged_builders_{code.allocateId()}"
        code.linkedinstances[id(self)] = self
        items = ", ".join(
            f"{name!r}: ({tag}, lambda obj, io, this: {sc._compilebuild(code)})"
            for tag, name, sc in self._subcons
        )
        code.append(f"{fname} = {{{items}}}")
        return f"{build}(obj, io, this, {fname}, linkedinstances[{id(self)}])"


UNSIGNED_VARINT = UnsignedVarint(32)
UNSIGNED_VARLONG = UnsignedVarint(64)
VARINT = ZigZagVarint(32)
VARLONG = ZigZagVarint(64)
STRING = KafkaString(compact=False, nullable=False)
NULLABLE_STRING = KafkaString(compact=False, nullable=True)
COMPACT_STRING = KafkaString(compact=True, nullable=False)
COMPACT_NULLABLE_STRING = KafkaString(compact=True, nullable=True)
BYTES = KafkaBytes(compact=False, nullable=False)
NULLABLE_BYTES = KafkaBytes(compact=False, nullable=True)
COMPACT_BYTES = KafkaBytes(compact=True, nullable=False)
COMPACT_NULLABLE_BYTES = KafkaBytes(compact=True, nullable=True)
UUID = KafkaUuid()
