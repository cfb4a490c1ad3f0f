"""Control records: the key and value of each record in a control batch.

The key is (version int16, type int16), schema ``ControlRecordType``. The value depends on the
type: transaction markers hold an int16 version and then an ``EndTxnMarker``; the KRaft types hold
a message whose own first field is its int16 version (``LeaderChangeMessage`` and the others in
`VALUE_SCHEMAS`). Both are decoded with the generated codecs, ``codec.message(name, version)``.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import DecodeError, EncodeError
from .model import Record

KEY_SCHEMA = "ControlRecordType"
_INT16 = struct.Struct(">h")


class ControlType(enum.IntEnum):
    """The type in a control record's key (Kafka's ControlRecordType)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


# type -> (schema of the value, True when an int16 version precedes the message)
VALUE_SCHEMAS: dict[ControlType, tuple[str, bool]] = {
    ControlType.ABORT: ("EndTxnMarker", True),
    ControlType.COMMIT: ("EndTxnMarker", True),
    ControlType.LEADER_CHANGE: ("LeaderChangeMessage", False),
    ControlType.SNAPSHOT_HEADER: ("SnapshotHeaderRecord", False),
    ControlType.SNAPSHOT_FOOTER: ("SnapshotFooterRecord", False),
    ControlType.KRAFT_VERSION: ("KRaftVersionRecord", False),
    ControlType.KRAFT_VOTERS: ("VotersRecord", False),
}


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded control record: key version, type, and the value as its schema decodes it.

    ``value`` is the decoded message, or the raw bytes when no codec for its schema exists.
    """

    version: int
    type: ControlType | int
    value: Mapping[str, Any] | bytes | None


def _codec(name: str, version: int) -> Any | None:
    """The generated codec for a schema, or None when the schema has no such version."""
    from ... import codec  # at call time: codec may import this package

    try:
        return codec.message(name, version)
    except (LookupError, DecodeError):
        return None


def _parse(
    name: str, version: int, data: bytes, path: str, *, tolerant: bool = False
) -> Mapping[str, Any] | bytes:
    """Decode ``data`` as schema ``name``; ``tolerant`` ignores bytes a later version added."""
    generated = _codec(name, version)
    if generated is None:
        return bytes(data)
    try:
        return generated.parse_at(data, 0)[0] if tolerant else generated.parse(data)
    except DecodeError as exc:
        reason = f"{name} v{version}: {exc.reason}"
        raise DecodeError(reason, offset=exc.offset, path=path) from None


def _build(name: str, version: int, value: Mapping[str, Any], path: str) -> bytes:
    generated = _codec(name, version)
    if generated is None:
        raise EncodeError(f"no codec for {name} v{version}", path=path)
    return generated.build(dict(value))


def decode_control(record: Record) -> ControlRecord:
    """Decode the key and value of a record from a control batch."""
    key = record.key
    path = f"record@{record.offset}"
    if key is None or len(key) < 4:
        raise DecodeError("control record key needs 4 bytes (version, type)", path=f"{path}.key")
    # Kafka reads (version, type) from any key version: later versions may only add fields.
    parsed = _parse(KEY_SCHEMA, 0, key, f"{path}.key", tolerant=True)
    assert not isinstance(parsed, bytes)
    version, raw_type = parsed["version"], parsed["type"]
    try:
        kind: ControlType | int = ControlType(raw_type)
    except ValueError:
        return ControlRecord(version, raw_type, record.value)  # unknown: keep the bytes
    name, prefixed = VALUE_SCHEMAS[kind]
    value = record.value
    if value is None:
        return ControlRecord(version, kind, None)
    if len(value) < 2:
        raise DecodeError(f"{name} value needs a version", path=f"{path}.value")
    (value_version,) = _INT16.unpack_from(value)
    if prefixed:
        # Kafka parses a newer EndTxnMarker as the version it knows (0): fields only get added.
        decoded = _parse(name, 0, value[2:], f"{path}.value", tolerant=True)
    else:
        decoded = _parse(name, value_version, value, f"{path}.value")
    return ControlRecord(version, kind, decoded)


def control_record(
    kind: ControlType, value: Mapping[str, Any], *, timestamp: int | None = None
) -> dict[str, Any]:
    """A record for ``build_batch(..., control=True)``: key and value encoded for ``kind``."""
    kind = ControlType(kind)
    name, prefixed = VALUE_SCHEMAS[kind]
    key = _build(KEY_SCHEMA, 0, {"version": 0, "type": kind.value}, "key")
    if prefixed:
        encoded = _INT16.pack(0) + _build(name, 0, value, "value")
    else:
        encoded = _build(name, int(value.get("version", 0)), value, "value")
    return {"key": key, "value": encoded, "headers": [], "timestamp": timestamp}
