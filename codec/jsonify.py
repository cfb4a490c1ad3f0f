"""Decoded values as JSON-safe structures."""

from __future__ import annotations

import base64
import enum
import uuid
from typing import Any


def uuid_to_str(value: uuid.UUID) -> str:
    """Kafka's textual uuid: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def to_json(obj: Any) -> Any:
    """A structure of dicts, lists, str, int, float, bool and None (uuid and bytes as text)."""
    if obj is None or isinstance(obj, str | bool):
        return obj
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, int | float):
        return obj
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_json(v) for v in obj]
    if isinstance(obj, uuid.UUID):
        return uuid_to_str(obj)
    if isinstance(obj, bytes | bytearray | memoryview):
        return base64.b64encode(obj).decode("ascii")
    if hasattr(obj, "__slots__") and hasattr(obj, "__dataclass_fields__"):
        return {name: to_json(getattr(obj, name)) for name in obj.__dataclass_fields__}
    raise TypeError(f"cannot turn {type(obj).__name__} into JSON")
