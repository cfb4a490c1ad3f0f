"""Turning low-level failures inside generated code into DecodeError/EncodeError with a path."""

from __future__ import annotations

import struct
from typing import Any

from .errors import DecodeError, EncodeError


class VersionedEncodeError(EncodeError):
    """An EncodeError whose reason ends with the message version, which only the codec knows.

    Build code is shared by every version whose wire format it writes, so it raises the reason
    without the number (`null is not allowed in version`); `MessageCodec` appends its own.
    """

    def in_version(self, version: int) -> EncodeError:
        """The EncodeError the caller sees: the reason completed with `version`."""
        return EncodeError(f"{self.reason} {version}", path=self.path)


def _join(name: str, path: str) -> str:
    if not path:
        return name
    if not name:
        return path
    return name + path if path.startswith("[") else f"{name}.{path}"


def _field_name(entry: Any) -> str:
    return entry if isinstance(entry, str) else entry[0][0]


def decode_failure(exc: BaseException, pos: int, names: tuple, index: int) -> DecodeError:
    """A DecodeError for `exc` raised while reading field `names[index]` starting at `pos`."""
    name = _field_name(names[index]) if 0 <= index < len(names) else ""
    if isinstance(exc, DecodeError):
        return DecodeError(exc.reason, offset=exc.offset, path=_join(name, exc.path))
    if isinstance(exc, struct.error | IndexError):
        reason = "data ends before the field does"
    elif isinstance(exc, OverflowError | MemoryError):
        reason = "length is too large"
    else:
        reason = f"{type(exc).__name__}: {exc}"
    return DecodeError(reason, offset=pos, path=name)


def tag_failure(exc: BaseException, pos: int, names: dict, tag: int) -> DecodeError:
    """A DecodeError for a failure inside the tagged-field section."""
    name = names.get(tag, f"_unknown_tags[{tag}]" if tag >= 0 else "")
    return decode_failure(exc, pos, (name,), 0)


def at_index(exc: DecodeError | EncodeError, index: int) -> DecodeError | EncodeError:
    """The same error with `[index]` in front of its path."""
    path = _join(f"[{index}]", exc.path)
    if isinstance(exc, DecodeError):
        return DecodeError(exc.reason, offset=exc.offset, path=path)
    return type(exc)(exc.reason, path=path)


def encode_failure(exc: BaseException, names: tuple, index: int, obj: Any) -> EncodeError:
    """An EncodeError for `exc` raised while writing field `names[index]` of `obj`."""
    entry = names[index] if 0 <= index < len(names) else ""
    name = _field_name(entry) if entry else ""
    if not isinstance(entry, str) and entry and isinstance(obj, dict):
        # A run of fixed-width fields is packed at once: find the value that did not fit.
        for key, fmt, default in entry:
            try:
                struct.pack(">" + fmt, obj.get(key, default))
            except struct.error as e:
                value = obj.get(key, default)
                if value is None:
                    return EncodeError("null is not allowed: the field is not nullable", path=key)
                return EncodeError(f"{value!r} does not fit ({e})", path=key)
    if isinstance(exc, EncodeError):
        return type(exc)(exc.reason, path=_join(name, exc.path))
    if isinstance(exc, DecodeError):
        return EncodeError(exc.reason, path=_join(name, exc.path))
    if isinstance(exc, TypeError | AttributeError) and not isinstance(obj, dict):
        return EncodeError(f"expected a dict, got {type(obj).__name__}", path=name)
    return EncodeError(f"{type(exc).__name__}: {exc}", path=name)
