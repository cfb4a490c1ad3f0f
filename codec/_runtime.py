"""Everything the generated message modules import, in one place."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from struct import Struct, pack, unpack_from
from typing import Any

from construct import Container

from ._paths import VersionedEncodeError, at_index, decode_failure, encode_failure, tag_failure
from ._wire import (
    UUID,
    ZERO_UUID,
    check_tag_end,
    null_error,
    read_array_length,
    read_bytes,
    read_compact_array_length,
    read_compact_bytes,
    read_compact_nullable_bytes,
    read_compact_nullable_string,
    read_compact_string,
    read_nullable_bytes,
    read_nullable_string,
    read_string,
    read_unknown_tag,
    read_uuid,
    read_uvarint,
    uuid_bytes,
    write_array_length,
    write_bytes,
    write_compact_bytes,
    write_compact_nullable_bytes,
    write_compact_nullable_string,
    write_compact_string,
    write_nullable_bytes,
    write_nullable_string,
    write_string,
    write_tags,
)
from .errors import DecodeError, EncodeError

__all__ = [
    "Container", "DecodeError", "EncodeError", "Struct", "StructDefault", "UUID", "ZERO_UUID",
    "at_index", "check_keys", "check_tag_end", "decode_failure", "default_encoding",
    "element_failure", "encode_failure", "null_error", "pack", "read_array_length",
    "read_bytes", "read_compact_array_length", "read_compact_bytes", "read_compact_nullable_bytes",
    "read_compact_nullable_string", "read_compact_string", "read_nullable_bytes",
    "read_nullable_string", "read_string", "read_unknown_tag",
    "read_unknown_tags", "read_uuid", "read_uvarint", "tag_failure", "unpack_from", "uuid_bytes",
    "write_array_length", "write_bytes",
    "write_compact_bytes", "write_compact_nullable_bytes", "write_compact_nullable_string",
    "write_compact_string", "write_nullable_bytes", "write_nullable_string", "write_string",
    "write_tags",
]  # fmt: skip


class StructDefault(dict):
    """The default value of a struct field, for checking a field the version lacks."""

    def matches(self, value: Any) -> bool:
        """True when `value` is this default: every present key at its default, no others."""
        if not isinstance(value, dict):
            return False
        for key, item in value.items():
            if key == "_unknown_tags" and not item:
                continue
            if key not in self:
                return False
            default = self[key]
            if isinstance(default, StructDefault):
                if not default.matches(item):
                    return False
            elif item != default:
                return False
        return True


def check_keys(obj: Any, allowed: frozenset, absent: dict[str, tuple[Any, bool]]) -> None:
    """Reject keys unknown to the struct, and non-default values for fields this version lacks."""
    if not isinstance(obj, dict):
        raise EncodeError(f"expected a dict, got {type(obj).__name__}")
    for key in obj:
        if key in allowed:
            continue
        if key not in absent:
            raise unknown_field(key, [*allowed, *absent])
        default, ignorable = absent[key]
        value = obj[key]
        if isinstance(default, StructDefault):
            same = default.matches(value)
        elif isinstance(default, list):
            same = isinstance(value, list | tuple) and not value
        else:
            same = value == default
        if not (same or ignorable):
            raise VersionedEncodeError("field does not exist in version", path=key)


def unknown_field(key: Any, known: Iterable[str], path: str = "") -> EncodeError:
    """The error for a key no version of the struct has, naming the closest known key."""
    hint = _closest(str(key), known)
    return EncodeError(
        f"unknown field {key!r}" + (f" (did you mean {hint!r}?)" if hint else ""),
        path=f"{path}.{key}" if path else str(key),
    )


def _squash(name: str) -> str:
    return name.replace("_", "").lower()


def _closest(key: str, known: Iterable[str]) -> str | None:
    """The known key `key` most likely meant: the same letters in another case (Kafka's
    CamelCase for our snake_case), else the nearest spelling."""
    by_letters = {_squash(k): k for k in known if k != "_unknown_tags"}
    letters = _squash(key)
    if letters in by_letters:
        return by_letters[letters]
    close = difflib.get_close_matches(letters, by_letters, n=1, cutoff=0.75)
    return by_letters[close[0]] if close else None


def default_encoding(builder: Any) -> bytes:
    """The bytes a struct builder writes for an all-defaults value."""
    w = bytearray()
    builder({}, w)
    return bytes(w)


def element_failure(parse: Callable, b: Any, p: int, n: int) -> int:
    """Read `n` elements again one at a time, after the inlined loop over them failed.

    The element that fails raises its DecodeError with its index in the path; when none does,
    the offset after them is returned and the caller re-raises the original failure.
    """
    for i in range(n):
        try:
            _x, p = parse(b, p)
        except DecodeError as y:
            raise at_index(y, i) from None
    return p


def read_unknown_tags(b: Any, p: int, nt: int, o: dict) -> int:
    """Read the `nt` tagged fields of a struct that defines none into `o['_unknown_tags']`.

    The tagged-field reader of every such struct; structs with tagged fields of their own get a
    generated one that reads those and keeps the rest the same way.
    """
    t = -1
    try:
        for _ in range(nt):
            t, p = read_uvarint(b, p)
            s, p = read_uvarint(b, p)
            e = p + s
            if e > len(b):
                past = f"{e - len(b)} bytes past the end"
                raise DecodeError(f"tagged field {t} runs {past}", offset=p)
            u = o.get("_unknown_tags")
            if u is None:
                u = o["_unknown_tags"] = {}
            u[t], p = read_unknown_tag(b, p, s)
        return p
    except Exception as x:
        raise tag_failure(x, p, _NO_TAGS, t) from None


_NO_TAGS: dict[int, str] = {}
