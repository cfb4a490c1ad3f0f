"""KRaft metadata records in Kafka's framing: frame version, api key, version, then the record."""

from __future__ import annotations

from typing import Any

from ._wire import read_uvarint, write_uvarint
from .errors import DecodeError, EncodeError, UnsupportedVersionError
from .messages import MESSAGES, RECORDS, message

FRAME_VERSION = 1


def encode_record(name: str, version: int, body: dict) -> bytes:
    """A metadata record with its frame header (frame version 1, api key, version)."""
    entry = MESSAGES.get(name)
    if entry is None or entry[1] != "metadata" or RECORDS.get(entry[2]) != name:
        # Tiered storage's records are "metadata" too, but keyed apart from the KRaft log's.
        raise EncodeError(f"{name!r} is not a KRaft metadata record")
    try:
        codec = message(name, version)
    except UnsupportedVersionError as e:
        raise EncodeError(e.reason) from None
    w = bytearray()
    write_uvarint(w, FRAME_VERSION)
    write_uvarint(w, entry[2])
    write_uvarint(w, version)
    codec.build_into(body, w)
    return bytes(w)


def decode_record(data: bytes | bytearray | memoryview) -> tuple[str, int, Any]:
    """Decode a framed metadata record into (record name, version, body)."""
    frame, pos = read_uvarint(data, 0)
    if frame != FRAME_VERSION:
        raise DecodeError(f"unknown metadata frame version {frame}", offset=0, path="frame_version")
    start = pos
    api_key, pos = read_uvarint(data, pos)
    name = RECORDS.get(api_key)
    if name is None:
        raise DecodeError(f"unknown metadata record type {api_key}", offset=start, path="api_key")
    start = pos
    version, pos = read_uvarint(data, pos)
    try:
        codec = message(name, version)
    except UnsupportedVersionError as e:
        raise UnsupportedVersionError(e.reason, offset=start, path="version") from None
    body, end = codec.parse_at(data, pos)
    if end != len(data):
        raise DecodeError(f"{len(data) - end} bytes follow the {name}", offset=end)
    return name, version, body
