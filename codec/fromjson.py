"""`to_json` output back into a value `build` takes: the schema says which strings are uuids or
bytes, so `build(from_json(name, version, to_json(parse(data))))` gives `data` back."""

from __future__ import annotations

import base64
import binascii
import functools
import re
import uuid
from typing import Any, NamedTuple

from ._runtime import unknown_field
from .errors import EncodeError
from .messages import registry

__all__ = ["from_json"]

# The generator's rule for Python names (generator.spec.snake_case; a test keeps the two equal):
# codec does not import the generator.
_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class _Field(NamedTuple):
    """How a field's JSON turns back into a value: its kind, and its fields when a struct."""

    kind: str  # "uuid", "bytes", "struct" or "plain" (JSON already holds the value)
    array: bool
    fields: dict[str, _Field] | None


def _struct(schema: tuple) -> dict[str, _Field]:
    out = {}
    for name, ftype, *_, children in schema:
        array = ftype.startswith("[]")
        element = ftype[2:] if array else ftype
        if element == "uuid":
            kind = "uuid"
        elif element in ("bytes", "records"):
            kind = "bytes"
        elif children:
            kind = "struct"
        else:
            kind = "plain"
        out[_SNAKE.sub("_", name).lower()] = _Field(kind, array, _struct(children) or None)
    return out


@functools.cache
def _message_fields(name: str) -> dict[str, _Field]:
    return _struct(registry.module(name).SCHEMA)


def from_json(name: str, version: int, obj: Any) -> dict:
    """A `to_json` value of message `name` at `version` as a dict `build` takes."""
    registry.message(name, version)  # an unknown message or version fails here, clearly
    return _object(_message_fields(name), obj, "")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _object(fields: dict[str, _Field], obj: Any, path: str) -> dict:
    if not isinstance(obj, dict):
        raise EncodeError(f"expected a JSON object, got {type(obj).__name__}", path=path)
    out = {}
    for key, value in obj.items():
        field = fields.get(key)
        if field is not None:
            out[key] = _value(field, value, _join(path, key))
        elif key == "_unknown_tags":
            out[key] = _unknown_tags(value, _join(path, key))
        else:
            raise unknown_field(key, fields, path)
    return out


def _value(field: _Field, value: Any, path: str) -> Any:
    if value is None or field.kind == "plain":
        return value
    if not field.array:
        return _element(field, value, path)
    if not isinstance(value, list):
        raise EncodeError(f"expected a JSON array, got {type(value).__name__}", path=path)
    return [_element(field, v, f"{path}[{i}]") for i, v in enumerate(value)]


def _element(field: _Field, value: Any, path: str) -> Any:
    if value is None:
        return None
    if field.kind == "uuid":
        return _uuid(value, path)
    if field.kind == "bytes":
        return _bytes(value, path)
    assert field.fields is not None
    return _object(field.fields, value, path)


def _uuid(value: Any, path: str) -> uuid.UUID:
    """A uuid from Kafka's text (22 characters of URL-safe base64) or the canonical form."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            if len(value) == 22:
                return uuid.UUID(bytes=base64.urlsafe_b64decode(value + "=="))
            return uuid.UUID(value)
        except (ValueError, binascii.Error):
            pass
    raise EncodeError(
        f"{value!r} is not a uuid (Kafka's 22-character base64url, or the canonical form)",
        path=path,
    )


def _bytes(value: Any, path: str) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            pass
    raise EncodeError(f"expected bytes as a base64 string, got {value!r:.40}", path=path)


def _unknown_tags(value: Any, path: str) -> dict[int, bytes]:
    if not isinstance(value, dict):
        raise EncodeError("expected an object of tag number to base64 bytes", path=path)
    out = {}
    for tag, raw in value.items():
        try:
            number = int(tag)
        except ValueError:
            raise EncodeError(f"tag {tag!r} is not a number", path=path) from None
        out[number] = _bytes(raw, f"{path}[{tag}]")
    return out
