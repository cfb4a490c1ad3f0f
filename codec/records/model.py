"""The values record decoding yields: `Record`, `Batch` and the enums of the attribute bits."""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Header = tuple[str, bytes | None]


class Compression(enum.IntEnum):
    """Compression codec, the low three attribute bits of a batch or legacy message."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def parse(cls, value: str | int | Compression) -> Compression:
        """Accept a codec name (``"lz4"``), a number or a member; raise ValueError otherwise."""
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise ValueError(f"unknown compression {value!r}") from None
        return cls(value)


class TimestampType(enum.IntEnum):
    """Who set the timestamps: the producer (create time) or the broker (log append time)."""

    NO_TIMESTAMP_TYPE = -1  # magic 0 messages carry no timestamp at all
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(slots=True)
class Record:
    """One record with its absolute offset and timestamp (ms; -1 when magic 0 has none)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


def record_fields(
    record: Mapping[str, Any] | Record,
) -> tuple[bytes | None, bytes | None, list[Header] | None, int | None]:
    """(key, value, headers, timestamp) of a `Record`, or of a dict that may leave any out."""
    if isinstance(record, Record):
        return record.key, record.value, record.headers, record.timestamp
    return record.get("key"), record.get("value"), record.get("headers"), record.get("timestamp")


# Attribute bits shared by both formats (legacy messages only use the first four).
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


class Batch:
    """A v2 record batch, or a legacy (magic 0/1) wrapper message or run of plain messages.

    Header fields are plain attributes; ``records`` is decoded on first access (and cached), so
    iterating a fetch response to count or forward batches never touches the records; iterating
    the batch itself gives the same records without keeping them. ``raw`` is a zero-copy
    memoryview of the batch's bytes in the buffer it was read from, which starts at byte
    ``position`` of that buffer. For a run of plain legacy messages, ``crc`` and ``attributes``
    are the first message's and ``batch_length`` spans the run.
    """

    __slots__ = (
        "raw",
        "position",
        "truncated",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "compression",
        "timestamp_type",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
        "max_decompressed",
        "_records",
    )

    raw: memoryview
    position: int
    truncated: bool
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    compression: Compression
    timestamp_type: TimestampType
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    max_decompressed: int
    _records: list[Record] | None

    def __init__(self, raw: memoryview, position: int, base_offset: int, magic: int) -> None:
        # Defaults are what Kafka reports for fields a format (or a truncated batch) lacks.
        self.raw = raw
        self.position = position
        self.truncated = False
        self.base_offset = base_offset
        self.batch_length = -1
        self.partition_leader_epoch = -1
        self.magic = magic
        self.crc = -1
        self.attributes = 0
        self.compression = Compression.NONE
        self.timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
        self.last_offset_delta = 0
        self.base_timestamp = -1
        self.max_timestamp = -1
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.record_count = 0
        self.max_decompressed = 0
        self._records = None

    @staticmethod
    def cut(raw: memoryview, position: int, magic: int) -> Batch:
        """A batch cut short by the end of the buffer: base offset and length when present."""
        batch = Batch(raw, position, _INT64.unpack_from(raw)[0] if len(raw) >= 8 else -1, magic)
        if len(raw) >= 12:
            batch.batch_length = _INT32.unpack_from(raw, 8)[0]
        batch.truncated = True
        return batch

    @property
    def records(self) -> list[Record]:
        """The batch's records, decoded (and decompressed) on first access."""
        if self._records is None:
            self._records = [] if self.truncated else self._decode_records()
        return self._records

    def __iter__(self) -> Iterator[Record]:
        """The batch's records, one at a time (magic 2 makes them as they are reached)."""
        return iter(self.records)

    def _decode_records(self) -> list[Record]:
        return []

    @property
    def is_transactional(self) -> bool:
        """Attribute bit 4: the records belong to a transaction."""
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        """Attribute bit 5: the records are control records (transaction markers, raft)."""
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        """Attribute bit 6: compaction stored the delete horizon in ``base_timestamp``."""
        return bool(self.attributes & DELETE_HORIZON_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon (ms) when the batch has one, else None."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_offset(self) -> int:
        """Offset of the last record the batch covers (compaction may have removed it)."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset after this batch: where the next batch starts."""
        return self.last_offset + 1

    @property
    def size(self) -> int:
        """Bytes the batch occupies in the buffer (what was read, for a truncated batch)."""
        return len(self.raw)

    def __repr__(self) -> str:
        state = " truncated" if self.truncated else ""
        return (
            f"<Batch magic={self.magic} offsets={self.base_offset}..{self.last_offset} "
            f"records={self.record_count} compression={self.compression.name.lower()}"
            f" size={self.size}{state}>"
        )
