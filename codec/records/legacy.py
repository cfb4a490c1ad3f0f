"""Legacy message sets, magic 0 and 1: CRC-32 per message, compressed sets inside wrappers.

A message is: offset int64, size int32, CRC-32 (IEEE, over the rest) uint32, magic int8,
attributes int8, [timestamp int64 when magic 1], key and value as int32-length bytes (-1: null).
A compressed message (a wrapper) holds a whole message set, compressed, as its value. In magic 1
the inner offsets are relative (0..n-1) and the wrapper carries the absolute offset of the last.
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Iterable, Mapping

from ..errors import DecodeError, EncodeError
from . import compression as codecs
from .model import (
    COMPRESSION_MASK,
    TIMESTAMP_TYPE_BIT,
    Batch,
    Compression,
    Record,
    TimestampType,
    record_fields,
)

_HEADER = {0: struct.Struct(">qiIbb"), 1: struct.Struct(">qiIbbq")}
# Smallest message size (the int32 after the offset): CRC, magic, attributes, [timestamp],
# key length and value length.
MIN_SIZE = {0: 14, 1: 22}
LOG_OVERHEAD = 12
_CRC_START = 16  # the CRC covers magic onward
_INT32 = struct.Struct(">i")
_COMPRESSIONS = {c.value: c for c in Compression if c is not Compression.ZSTD}


class _Message:
    """One parsed legacy message (internal: callers see `Record` and `Batch`)."""

    __slots__ = ("offset", "size", "crc", "magic", "attributes", "timestamp", "key", "value", "end")

    def __init__(self, buf: memoryview, pos: int, verify_crc: bool) -> None:
        magic = buf[pos + 16]
        header = _HEADER[magic]
        if len(buf) - pos < header.size:
            raise DecodeError("message header truncated", offset=pos)
        fields = header.unpack_from(buf, pos)
        self.offset, self.size, self.crc, self.magic, self.attributes = fields[:5]
        self.timestamp = fields[5] if magic else -1
        if self.size < MIN_SIZE[magic]:
            raise DecodeError(
                f"message size {self.size} is below the minimum {MIN_SIZE[magic]}",
                offset=pos + 8,
                path=f"message@{self.offset}.size",
            )
        end = self.end = pos + LOG_OVERHEAD + self.size
        if end > len(buf):
            raise DecodeError("message runs past the end of its set", offset=pos)
        if verify_crc:
            actual = zlib.crc32(buf[pos + _CRC_START : end])
            if actual != self.crc:
                raise DecodeError(
                    f"CRC-32 mismatch in the message at offset {self.offset}: header says "
                    f"{self.crc:#010x}, bytes give {actual:#010x}",
                    offset=pos + LOG_OVERHEAD,
                    path=f"message@{self.offset}.crc",
                )
        at = pos + header.size
        self.key, at = _read_bytes(buf, at, end, self.offset, "key")
        self.value, at = _read_bytes(buf, at, end, self.offset, "value")
        if at != end:
            raise DecodeError(
                f"{end - at} bytes after the value, inside the message's size",
                offset=at,
                path=f"message@{self.offset}",
            )


def _read_bytes(
    buf: memoryview, pos: int, end: int, offset: int, name: str
) -> tuple[memoryview | None, int]:
    if pos + 4 > end:
        raise DecodeError(f"{name} length truncated", offset=pos, path=f"message@{offset}")
    (size,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if size == -1:
        return None, pos
    if size < 0 or pos + size > end:
        raise DecodeError(
            f"{name} length {size} does not fit in the message",
            offset=pos - 4,
            path=f"message@{offset}.{name}",
        )
    return buf[pos : pos + size], pos + size


def _as_bytes(view: memoryview | None) -> bytes | None:
    return None if view is None else bytes(view)


def _record(message: _Message, offset: int, timestamp: int) -> Record:
    return Record(offset, timestamp, _as_bytes(message.key), _as_bytes(message.value), [])


def read(
    buf: memoryview, pos: int, *, verify_crc: bool, max_decompressed: int
) -> tuple[Batch, int]:
    """Read a wrapper, or a run of plain messages of one magic, at ``pos``; return it and the end.

    The first message must be complete (the caller checked); a run stops before a message that
    is not. Records are decoded here, not lazily: a wrapper's base offset is only known after
    decompressing it.
    """
    first = _Message(buf, pos, verify_crc)
    if first.attributes & COMPRESSION_MASK:
        return _read_wrapper(buf, pos, first, max_decompressed, verify_crc), first.end
    same_timestamp_type = first.attributes & TIMESTAMP_TYPE_BIT
    messages = [first]
    end = first.end
    while end + LOG_OVERHEAD + 6 <= len(buf):  # room to peek at size, magic and attributes
        (size,) = _INT32.unpack_from(buf, end + 8)
        magic, attributes = buf[end + 16], buf[end + 17]
        if (
            magic != first.magic
            or attributes & (COMPRESSION_MASK | TIMESTAMP_TYPE_BIT) != same_timestamp_type
            or end + LOG_OVERHEAD + size > len(buf)
        ):
            break
        message = _Message(buf, end, verify_crc)
        messages.append(message)
        end = message.end
    batch = _batch(buf[pos:end], pos, first)
    batch.batch_length = end - pos - LOG_OVERHEAD
    batch._records = [_record(m, m.offset, m.timestamp) for m in messages]
    _summarize(batch)
    return batch, end


def _read_wrapper(
    buf: memoryview, pos: int, wrapper: _Message, limit: int, verify_crc: bool
) -> Batch:
    codec = _COMPRESSIONS.get(wrapper.attributes & COMPRESSION_MASK)
    path = f"message@{wrapper.offset}"
    if codec is None:
        raise DecodeError(
            f"compression code {wrapper.attributes & COMPRESSION_MASK} is not valid in magic "
            f"{wrapper.magic}",
            offset=pos + 17,
            path=f"{path}.attributes",
        )
    if wrapper.value is None:
        raise DecodeError("compressed message has a null value", offset=pos, path=path)
    try:
        inner = codecs.decompress(codec, wrapper.value, limit=limit, magic=wrapper.magic)
    except DecodeError as exc:
        raise DecodeError(exc.reason, offset=pos, path=f"{path}.value") from None
    inner = memoryview(inner)
    messages = []
    at = 0
    inner_path = f"{path}.value (decompressed)"
    while at < len(inner):
        if len(inner) - at < LOG_OVERHEAD + 5:
            raise DecodeError("inner message truncated", offset=at, path=inner_path)
        if inner[at + 16] != wrapper.magic:
            raise DecodeError(
                f"inner message magic {inner[at + 16]} differs from the wrapper's {wrapper.magic}",
                offset=at + 16,
                path=inner_path,
            )
        try:
            message = _Message(inner, at, verify_crc)
        except DecodeError as exc:
            raise DecodeError(exc.reason, offset=exc.offset, path=inner_path) from None
        if message.attributes & COMPRESSION_MASK:
            raise DecodeError(
                "nested compression: a compressed message inside a compressed message",
                offset=at + 17,
                path=inner_path,
            )
        messages.append(message)
        at = message.end
    if not messages:
        raise DecodeError("compressed message holds no messages", offset=pos, path=path)
    # magic 1: inner offsets are relative and the wrapper has the last one's absolute offset.
    # A wrapper offset of 0 is a producer's set the broker has not stamped yet (librdkafka and
    # kafka-python send those): Kafka then keeps the inner offsets as they are, and so do we.
    shift = 0
    if wrapper.magic == 1 and wrapper.offset > 0:
        if wrapper.offset < messages[-1].offset:
            raise DecodeError(
                f"wrapper offset {wrapper.offset} is below its last inner offset "
                f"{messages[-1].offset}",
                offset=pos,
                path=path,
            )
        shift = wrapper.offset - messages[-1].offset
    log_append = wrapper.magic == 1 and wrapper.attributes & TIMESTAMP_TYPE_BIT
    batch = _batch(buf[pos : wrapper.end], pos, wrapper)
    batch._records = [
        _record(m, m.offset + shift, wrapper.timestamp if log_append else m.timestamp)
        for m in messages
    ]
    _summarize(batch)
    batch.max_timestamp = wrapper.timestamp
    return batch


def _batch(raw: memoryview, pos: int, message: _Message) -> Batch:
    batch = Batch(raw, pos, message.offset, message.magic)
    batch.batch_length = message.size
    batch.crc = message.crc
    batch.attributes = message.attributes
    batch.compression = Compression(message.attributes & COMPRESSION_MASK)
    if message.magic == 1:
        batch.timestamp_type = (
            TimestampType.LOG_APPEND_TIME
            if message.attributes & TIMESTAMP_TYPE_BIT
            else TimestampType.CREATE_TIME
        )
    return batch


def _summarize(batch: Batch) -> None:
    records = batch._records
    assert records
    batch.base_offset = records[0].offset
    batch.last_offset_delta = records[-1].offset - records[0].offset
    batch.record_count = len(records)
    if batch.magic == 1:
        batch.base_timestamp = records[0].timestamp
        batch.max_timestamp = max(r.timestamp for r in records)


def build(
    records: Iterable[Mapping | Record],
    *,
    compression: Compression,
    base_offset: int,
    magic: int,
    log_append_time: int | None,
) -> bytes:
    """Encode a magic 0 or 1 message set; compressed, it is one wrapper message."""
    records = list(records)
    if not records:
        raise EncodeError("a message set needs at least one record", path="records")
    if compression is Compression.ZSTD:
        raise EncodeError("zstd needs magic 2", path="compression")
    now = time.time_ns() // 1_000_000
    attributes = TIMESTAMP_TYPE_BIT if magic == 1 and log_append_time is not None else 0
    messages = []
    timestamps = []
    relative = compression is not Compression.NONE and magic == 1
    for i, record in enumerate(records):
        key, value, headers, timestamp = record_fields(record)
        if headers:
            raise EncodeError("record headers need magic 2", path=f"records[{i}].headers")
        timestamp = now if timestamp is None else timestamp
        timestamps.append(timestamp)
        offset = i if relative else base_offset + i
        messages.append(_encode(offset, magic, attributes, timestamp, key, value, f"records[{i}]"))
    if compression is Compression.NONE:
        return b"".join(messages)
    inner = codecs.compress(compression, b"".join(messages), magic=magic)
    wrapper_timestamp = log_append_time if log_append_time is not None else max(timestamps)
    return _encode(
        base_offset + len(records) - 1,
        magic,
        attributes | compression.value,
        wrapper_timestamp,
        None,
        inner,
        "wrapper",
    )


def _encode(
    offset: int,
    magic: int,
    attributes: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    path: str,
) -> bytes:
    try:
        parts = [struct.pack(">bb", magic, attributes)]
        if magic == 1:
            parts.append(struct.pack(">q", timestamp))
        for field in (key, value):
            if field is None:
                parts.append(b"\xff\xff\xff\xff")
            else:
                parts += (_INT32.pack(len(field)), field)
        body = b"".join(parts)
        return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body
    except (TypeError, struct.error) as exc:
        raise EncodeError(f"cannot encode message: {exc}", path=path) from None
