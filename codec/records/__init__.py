"""Kafka record batches: v2 with CRC-32C, legacy magic 0/1 message sets, four codecs.

Read with `iter_batches` (lazy, zero-copy; records decode on access to `Batch.records`, or one at
a time by iterating the batch), write with `build_batch`, and stamp offsets like a broker with
`assign_offsets`. With the compiled codec built, v2 records are read and framed in C
(`codec/_compiled/records.c`). Control batches' records decode with
`decode_control`; `expand_records` renders a whole ``records`` field as JSON-ready dicts.
"""

from .compression import DEFAULT_MAX_DECOMPRESSED
from .control import ControlRecord, ControlType, control_record, decode_control
from .jsonview import batch_to_json, expand_records
from .model import Batch, Compression, Header, Record, TimestampType
from .stream import assign_offsets, build_batch, iter_batches

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED",
    "Batch",
    "Compression",
    "ControlRecord",
    "ControlType",
    "Header",
    "Record",
    "TimestampType",
    "assign_offsets",
    "batch_to_json",
    "build_batch",
    "control_record",
    "decode_control",
    "expand_records",
    "iter_batches",
]
