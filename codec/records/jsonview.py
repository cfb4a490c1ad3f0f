"""Batches and records as JSON-ready dicts, for `python -m kipwire.codec decode --records`."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from .compression import DEFAULT_MAX_DECOMPRESSED
from .control import decode_control
from .model import Batch, Record
from .stream import Buffer, iter_batches

BytesRender = Callable[[bytes], Any]


def base64_text(raw: bytes) -> str:
    """Bytes as standard base64 text, as `codec.to_json` renders every other bytes field."""
    return base64.b64encode(raw).decode("ascii")


def expand_records(
    data: Buffer,
    *,
    render_bytes: BytesRender = base64_text,
    verify_crc: bool = True,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> list[dict[str, Any]]:
    """Decode every batch in ``data`` into dicts of header fields and records.

    Keys, values and header values go through ``render_bytes`` (base64 text by default, as
    `codec.to_json` writes bytes); control records get a ``control`` entry with their decoded
    key and value.
    """
    return [
        batch_to_json(batch, render_bytes)
        for batch in iter_batches(data, verify_crc=verify_crc, max_decompressed=max_decompressed)
    ]


def batch_to_json(batch: Batch, render_bytes: BytesRender = base64_text) -> dict[str, Any]:
    """One batch as a dict: header fields (enums by name), then its records."""
    out: dict[str, Any] = {
        "base_offset": batch.base_offset,
        "batch_length": batch.batch_length,
        "partition_leader_epoch": batch.partition_leader_epoch,
        "magic": batch.magic,
        "crc": batch.crc,
        "attributes": batch.attributes,
        "compression": batch.compression.name.lower(),
        "timestamp_type": batch.timestamp_type.name,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control,
        "has_delete_horizon": batch.has_delete_horizon,
        "last_offset_delta": batch.last_offset_delta,
        "base_timestamp": batch.base_timestamp,
        "max_timestamp": batch.max_timestamp,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "record_count": batch.record_count,
        "truncated": batch.truncated,
    }
    out["records"] = [_record(r, batch.is_control, render_bytes) for r in batch.records]
    return out


def _record(record: Record, control: bool, render_bytes: BytesRender) -> dict[str, Any]:
    def render(raw: bytes | None) -> Any:
        return None if raw is None else render_bytes(raw)

    out: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": render(record.key),
        "value": render(record.value),
        "headers": [[key, render(value)] for key, value in record.headers],
    }
    if control:
        decoded = decode_control(record)
        value = decoded.value
        out["control"] = {
            "version": decoded.version,
            "type": getattr(decoded.type, "name", decoded.type),
            "value": _plain(value, render),
        }
    return out


def _plain(value: Any, render: Callable[[bytes | None], Any]) -> Any:
    """Decoded schema values (construct Containers, lists, bytes) as plain JSON types."""
    if isinstance(value, Mapping):
        return {k: _plain(v, render) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list | tuple):
        return [_plain(v, render) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return render(bytes(value))
    return value
