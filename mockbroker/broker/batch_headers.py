"""The header rewrites a broker makes to a v2 record batch it keeps (Kafka's DefaultRecordBatch
layout): the offsets and leader epoch of a produce's batch, and LogAppendTime's stamp."""

from __future__ import annotations

import struct

from crc32c import crc32c

# Offsets of the header fields rewritten here.
_LENGTH_END, _MAGIC_AT, _CRC_AT, _ATTRIBUTES_AT, _MAX_TIMESTAMP_AT = 12, 16, 17, 21, 35
_V2_HEADER = 61
_INT16, _INT32, _INT64, _UINT32 = (struct.Struct(f) for f in (">h", ">i", ">q", ">I"))
_LOG_APPEND_TIME_BIT = 0x08


def with_offsets(raw: memoryview, base_offset: int, leader_epoch: int) -> bytes:
    """A copy of one v2 batch with its base offset and partition leader epoch set (what
    `assign_offsets` writes); the CRC covers neither, so it stays valid."""
    return b"".join(
        (_INT64.pack(base_offset), raw[8:12], _INT32.pack(leader_epoch), raw[_MAGIC_AT:])
    )


def stamp_log_append_time(data: bytearray, now_ms: int) -> None:
    """Mark every v2 batch in `data` LogAppendTime with `now_ms` as its max timestamp, and
    recompute its CRC (which covers the attributes and the timestamps)."""
    pos = 0
    while pos + _V2_HEADER <= len(data):
        size = _LENGTH_END + _INT32.unpack_from(data, pos + 8)[0]
        if data[pos + _MAGIC_AT] == 2:
            attributes = _INT16.unpack_from(data, pos + _ATTRIBUTES_AT)[0]
            _INT16.pack_into(data, pos + _ATTRIBUTES_AT, attributes | _LOG_APPEND_TIME_BIT)
            _INT64.pack_into(data, pos + _MAX_TIMESTAMP_AT, now_ms)
            crc = crc32c(memoryview(data)[pos + _ATTRIBUTES_AT : pos + size])
            _UINT32.pack_into(data, pos + _CRC_AT, crc)
        pos += size
