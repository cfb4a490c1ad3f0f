"""The controller's metadata log: framed records with their offsets, as brokers fetch them."""

from __future__ import annotations

from typing import Any

from kipwire.codec import decode_record, encode_record
from kipwire.codec.messages import MESSAGES

# The topic brokers fetch the log from, as in Kafka.
METADATA_TOPIC = "__cluster_metadata"


class LogEntry:
    """One record of the log: offset, record name and version, decoded record, framed bytes."""

    __slots__ = ("offset", "name", "version", "record", "data")

    def __init__(self, offset: int, name: str, version: int, record: Any, data: bytes) -> None:
        self.offset = offset
        self.name = name
        self.version = version
        self.record = record
        self.data = data

    def __repr__(self) -> str:
        return f"<LogEntry {self.offset} {self.name} v{self.version}>"


def frame(offset: int, name: str, version: int, body: Any) -> LogEntry:
    """Encode a record body with the codec and decode it back, so the log holds what the wire
    holds (defaults filled, nothing the codec would drop)."""
    data = encode_record(name, version, body)
    _, _, record = decode_record(data)
    return LogEntry(offset, name, version, record, data)


def latest_version(name: str) -> int:
    """The highest version of a metadata record the codec knows."""
    entry = MESSAGES.get(name)
    if entry is None or entry[1] != "metadata":
        raise ValueError(f"{name!r} is not a metadata record")
    return entry[3][1]
