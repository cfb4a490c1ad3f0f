"""Decoded values as JSON-safe structures."""

from __future__ import annotations

import base64
import dataclasses
import enum
import uuid
from collections.abc import Callable
from typing import Any


def uuid_to_str(value: uuid.UUID) -> str:
    """Kafka's textual uuid: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


# Exact types that are already JSON-safe and returned as they are. Checked by `type(x) in`, so
# subclasses (IntEnum, str enums, ...) still take the general path below and keep its answer.
_SAME = frozenset({str, int, float, bool, type(None)})


def to_json(obj: Any) -> Any:
    """A structure of dicts, lists, str, int, float, bool and None (uuid and bytes as text)."""
    t = type(obj)
    if t in _SAME:
        return obj
    conv = _CONVERT.get(t)
    if conv is None:
        conv = _CONVERT[t] = _converter(t)
    return conv(obj)


# Decoded bodies are trees of a few types (Container, ListContainer, int, str, bytes, ...), and
# this runs once per field of every PDU: a per-type converter picked once replaces an isinstance
# chain per value, and scalar children are returned without a call.


def _dict(obj: dict) -> dict:
    same, convert = _SAME, to_json
    return {
        (k if type(k) is str else str(k)): (v if type(v) in same else convert(v))
        for k, v in obj.items()
    }


def _list(obj: list | tuple) -> list:
    same, convert = _SAME, to_json
    return [v if type(v) in same else convert(v) for v in obj]


def _same(obj: Any) -> Any:
    return obj


def _enum(obj: enum.Enum) -> Any:
    return obj.value


def _bytes(obj: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(obj).decode("ascii")


def _dataclass(obj: Any) -> dict:
    return {name: to_json(getattr(obj, name)) for name in obj.__dataclass_fields__}


def _converter(t: type) -> Callable[[Any], Any]:
    """The converter for values of type `t`: the first rule that matches, in this order."""
    if issubclass(t, str | bool) or t is type(None):
        return _same
    if issubclass(t, enum.Enum):
        return _enum
    if issubclass(t, int | float):
        return _same
    if issubclass(t, dict):
        return _dict
    if issubclass(t, list | tuple):
        return _list
    if issubclass(t, uuid.UUID):
        return uuid_to_str
    if issubclass(t, bytes | bytearray | memoryview):
        return _bytes
    if hasattr(t, "__slots__") and dataclasses.is_dataclass(t):
        return _dataclass
    return _unsupported


def _unsupported(obj: Any) -> Any:
    raise TypeError(f"cannot turn {type(obj).__name__} into JSON")


_CONVERT: dict[type, Callable[[Any], Any]] = {}
