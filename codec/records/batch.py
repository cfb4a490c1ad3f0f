"""Record batches, magic 2: the 61-byte header, CRC-32C, and zigzag-varint framed records."""

from __future__ import annotations

import contextlib
import struct
import time
from collections.abc import Iterable, Iterator, Mapping

from crc32c import crc32c

from ..errors import DecodeError, EncodeError
from . import compression as codecs
from ._native import NATIVE
from .model import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    Batch,
    Compression,
    Header,
    Record,
    TimestampType,
)
from .varint import encode_varint, read_unsigned, read_varint

# base offset, batch length, partition leader epoch, magic, CRC | attributes, last offset delta,
# base timestamp, max timestamp, producer id, producer epoch, base sequence, record count
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
_HEAD = struct.Struct(">qiibI")  # the fields before the CRC, which it does not cover
_TAIL = struct.Struct(">hiqqqhii")  # the fields after the CRC, which it covers
CRC_START = _HEAD.size  # 21
LOG_OVERHEAD = 12  # base offset and batch length, which the length does not count
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
# Smallest record: length, attributes, timestamp delta, offset delta, key length, value length and
# header count, one byte each.
_MIN_RECORD_SIZE = 7

_COMPRESSIONS = {c.value: c for c in Compression}

# The compiled record loops in use (None: the Python ones); `use_compiled` switches.
_native = NATIVE


def use_compiled(compiled: bool) -> None:
    """Read and frame records with the compiled loops (when built) or the Python ones.

    For tests and benchmarks that compare the two paths; the compiled loops are the default.
    """
    global _native
    _native = NATIVE if compiled else None


class RecordBatch(Batch):
    """A magic-2 batch; its records are decompressed and decoded on first access."""

    __slots__ = ()

    def __init__(
        self, raw: memoryview, position: int, *, verify_crc: bool = True, max_decompressed: int
    ) -> None:
        (
            base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            magic,
            self.crc,
            attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            count,
        ) = HEADER.unpack_from(raw)
        self.raw = raw
        self.position = position
        self.base_offset = base_offset
        self.magic = magic
        self.attributes = attributes
        self.record_count = count
        self.max_decompressed = max_decompressed
        self.truncated = False
        self._records = None
        self.timestamp_type = (
            TimestampType.LOG_APPEND_TIME
            if attributes & TIMESTAMP_TYPE_BIT
            else TimestampType.CREATE_TIME
        )
        codec = _COMPRESSIONS.get(attributes & COMPRESSION_MASK)
        if codec is None:
            raise DecodeError(
                f"unknown compression code {attributes & COMPRESSION_MASK}",
                offset=position + CRC_START,
                path=f"batch@{base_offset}.attributes",
            )
        self.compression = codec
        if count < 0:
            raise DecodeError(
                f"negative record count {count}",
                offset=position + HEADER_SIZE - 4,
                path=f"batch@{base_offset}.record_count",
            )
        if verify_crc:
            actual = crc32c(raw[CRC_START:])
            if actual != self.crc:
                raise DecodeError(
                    f"CRC-32C mismatch in the batch at base offset {base_offset}: "
                    f"header says {self.crc:#010x}, bytes give {actual:#010x}",
                    offset=position + CRC_START - 4,
                    path=f"batch@{base_offset}.crc",
                )

    @classmethod
    def truncated_at(cls, raw: memoryview, position: int) -> Batch:
        """A batch cut short by the end of the buffer: header fields if they are all there."""
        batch: Batch | None = None
        if len(raw) >= HEADER_SIZE:
            with contextlib.suppress(DecodeError):  # a cut batch is never an error
                batch = cls(raw, position, verify_crc=False, max_decompressed=0)
        if batch is None:
            return Batch.cut(raw, position, 2)
        batch.truncated = True
        return batch

    def __iter__(self) -> Iterator[Record]:
        """The records one at a time, made as they are reached and not kept (`records` keeps
        them): with the compiled loops, a consumer that drops each record never holds the batch's
        records at once. A malformed batch raises here, before its first record, as `records`
        does."""
        if self._records is None and not self.truncated and _native is not None:
            buf = self._payload()
            stream = _native.stream(
                buf, self.record_count, self.base_offset, self.base_timestamp, self._fixed()
            )
            if stream is not None:
                return stream
        return iter(self.records)

    def _fixed(self) -> int | None:
        """The timestamp every record takes (log append time), or None."""
        return self.max_timestamp if self.timestamp_type is TimestampType.LOG_APPEND_TIME else None

    def _payload(self) -> memoryview | bytes:
        """The records' bytes: the batch's own, or decompressed."""
        payload = self.raw[HEADER_SIZE:]
        if self.compression is Compression.NONE:
            return payload
        try:
            return codecs.decompress(self.compression, payload, limit=self.max_decompressed)
        except DecodeError as exc:
            raise DecodeError(
                exc.reason,
                offset=self.position + HEADER_SIZE + (exc.offset or 0),
                path=f"batch@{self.base_offset}.records",
            ) from None

    def _decode_records(self) -> list[Record]:
        buf, fixed = self._payload(), self._fixed()
        if _native is not None:
            records = _native.read(
                buf, self.record_count, self.base_offset, self.base_timestamp, fixed
            )
            if records is not None:
                return records
        path = f"batch@{self.base_offset}.records"
        origin: int | None = self.position + HEADER_SIZE
        if self.compression is not Compression.NONE:
            origin = None
            path += " (decompressed)"
        return decode_records(
            bytes(buf),
            self.record_count,
            self.base_offset,
            self.base_timestamp,
            fixed,
            origin,
            path,
        )


def decode_records(
    buf: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    fixed_timestamp: int | None,
    origin: int | None,
    path: str,
) -> list[Record]:
    """Decode ``count`` v2 records that must exactly fill ``buf``.

    ``fixed_timestamp`` replaces every record's timestamp (log append time); ``origin`` is where
    ``buf`` sits in the input, for error offsets (None when ``buf`` was decompressed).
    """
    end = len(buf)
    if count > end // _MIN_RECORD_SIZE:
        raise DecodeError(
            f"record count {count} cannot fit in {end} bytes of records", offset=origin, path=path
        )
    records: list[Record] = []
    append = records.append
    log_append = fixed_timestamp is not None
    pos = 0
    # One loop, with varints of one and two bytes decoded inline (lengths, deltas and offset
    # deltas below 8192 all are): this is where decode time goes, and a call costs more than the
    # decoding itself.
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                z = b
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                z, pos = read_unsigned(buf, pos)
            length = (z >> 1) ^ -(z & 1)
            record_end = pos + length
            if record_end > end or length < _MIN_RECORD_SIZE - 1:
                raise DecodeError(f"record length {length} does not fit", offset=pos)
            pos += 1  # attributes: no bit is defined for records yet
            b = buf[pos]
            if b < 0x80:
                z = b
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                z, pos = read_unsigned(buf, pos, 10)
            timestamp_delta = (z >> 1) ^ -(z & 1)
            b = buf[pos]
            if b < 0x80:
                z = b
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                z, pos = read_unsigned(buf, pos)
            offset_delta = (z >> 1) ^ -(z & 1)
            b = buf[pos]
            if b < 0x80:
                z = b
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                z, pos = read_unsigned(buf, pos)
            size = (z >> 1) ^ -(z & 1)
            if size >= 0:
                key = buf[pos : pos + size]
                pos += size
            elif size == -1:
                key = None
            else:
                raise DecodeError(f"key length {size}", offset=pos)
            b = buf[pos]
            if b < 0x80:
                z = b
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                z, pos = read_unsigned(buf, pos)
            size = (z >> 1) ^ -(z & 1)
            if size >= 0:
                value = buf[pos : pos + size]
                pos += size
            elif size == -1:
                value = None
            else:
                raise DecodeError(f"value length {size}", offset=pos)
            if buf[pos] == 0:  # no headers: the common case
                headers: list[Header] = []
                pos += 1
            else:
                headers, pos = _decode_headers(buf, pos, record_end)
            if pos != record_end:
                raise DecodeError(
                    f"record length {length} but its fields take {pos - record_end + length}",
                    offset=pos,
                )
            timestamp = fixed_timestamp if log_append else base_timestamp + timestamp_delta
            append(Record(base_offset + offset_delta, timestamp, key, value, headers))
    except (IndexError, UnicodeDecodeError, DecodeError) as exc:
        raise _located(exc, pos, origin, f"{path}[{len(records)}]") from None
    if pos != end:
        raise DecodeError(
            f"{end - pos} bytes left after the {count} records the header counts",
            offset=None if origin is None else origin + pos,
            path=path,
        )
    return records


def _decode_headers(buf: bytes, pos: int, record_end: int) -> tuple[list[Header], int]:
    count, pos = read_varint(buf, pos)
    # Each header takes at least two bytes: a lying count fails here, before the list grows.
    if count < 0 or 2 * count > record_end - pos:
        raise DecodeError(f"header count {count} does not fit in the record", offset=pos)
    headers = []
    for _ in range(count):
        size, pos = read_varint(buf, pos)
        if size < 0:
            raise DecodeError(f"header key length {size}", offset=pos)
        key = buf[pos : pos + size].decode()
        pos += size
        size, pos = read_varint(buf, pos)
        if size >= 0:
            value = buf[pos : pos + size]
            pos += size
        elif size == -1:
            value = None
        else:
            raise DecodeError(f"header value length {size}", offset=pos)
        headers.append((key, value))
    return headers, pos


def _located(exc: Exception, pos: int, origin: int | None, path: str) -> DecodeError:
    """Turn a failure inside ``buf`` into a DecodeError placed in the input and the batch."""
    if isinstance(exc, IndexError):
        reason, at = "record runs past the end of the records", pos
    elif isinstance(exc, UnicodeDecodeError):
        reason, at = f"header key is not UTF-8: {exc.reason}", pos
    else:
        assert isinstance(exc, DecodeError)
        reason, at = exc.reason, pos if exc.offset is None else exc.offset
    return DecodeError(reason, offset=None if origin is None else origin + at, path=path)


def build(
    records: Iterable[Mapping | Record],
    *,
    compression: Compression,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    control: bool,
    partition_leader_epoch: int,
    log_append_time: int | None,
    keep_offsets: bool = False,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Encode one v2 batch; see `codec.records.build_batch`."""
    records = list(records)
    if not records:
        raise EncodeError("a batch needs at least one record", path="records")
    deltas = None
    if keep_offsets:
        if not all(isinstance(r, Record) for r in records):
            raise EncodeError("keep_offsets needs Record values (with offsets)", path="records")
        deltas = [r.offset - base_offset for r in records]
        if deltas[0] < 0 or any(b <= a for a, b in zip(deltas, deltas[1:], strict=False)):
            raise EncodeError("kept offsets must rise from the base offset", path="records")
    now = time.time_ns() // 1_000_000
    framed = None if _native is None else _native.frame(records, now, deltas, delete_horizon_ms)
    if framed is None:  # the Python code gives the same bytes, or the EncodeError
        framed = _encode_records(records, now, deltas, delete_horizon_ms)
    body, base_timestamp, max_timestamp = framed
    attributes = compression.value
    if log_append_time is not None:
        attributes |= TIMESTAMP_TYPE_BIT
        max_timestamp = log_append_time
    if transactional:
        attributes |= TRANSACTIONAL_BIT
    if control:
        attributes |= CONTROL_BIT
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_BIT
    last_delta = len(records) - 1 if deltas is None else deltas[-1]
    if last_offset_delta is not None:
        if last_offset_delta < last_delta:
            raise EncodeError("last_offset_delta is below the last record's", path="records")
        last_delta = last_offset_delta
    payload = body if compression is Compression.NONE else codecs.compress(compression, body)
    try:
        tail = _TAIL.pack(
            attributes,
            last_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        crc = crc32c(payload, crc32c(tail))
        length = MIN_BATCH_LENGTH + len(payload)
        head = _HEAD.pack(base_offset, length, partition_leader_epoch, 2, crc)
    except struct.error as exc:
        raise EncodeError(f"a header field is out of range: {exc}", path="batch") from None
    return b"".join((head, tail, payload))


def _encode_records(
    records: list, now: int, deltas: list[int] | None = None, base: int | None = None
) -> tuple[bytes, int, int]:
    """Frame the records, at offset deltas `deltas` (list order when None) and timestamps
    relative to `base` (the first record's when None); returns (bytes, base timestamp, max
    timestamp)."""
    out = bytearray()
    enc = encode_varint
    base_timestamp = max_timestamp = None
    if base is not None:
        # compaction's delete horizon takes the base timestamp's place (Kafka's KIP-534)
        base_timestamp, max_timestamp = base, -1
    i = 0
    try:
        for i, record in enumerate(records):
            # `model.record_fields`, inlined: a call per record costs a fifth of the encode time
            if isinstance(record, Record):
                key, value, headers, timestamp = (
                    record.key,
                    record.value,
                    record.headers,
                    record.timestamp,
                )
            else:
                key = record.get("key")
                value = record.get("value")
                headers = record.get("headers")
                timestamp = record.get("timestamp")
            if timestamp is None:
                timestamp = now
            if base_timestamp is None:
                base_timestamp = max_timestamp = timestamp
            elif timestamp > max_timestamp:
                max_timestamp = timestamp
            ts = enc(timestamp - base_timestamp)
            od = enc(i if deltas is None else deltas[i])
            if key is None:
                kl, key = b"\x01", b""  # length -1 zigzags to 1
            else:
                kl = enc(len(key))
            if value is None:
                vl, value = b"\x01", b""
            else:
                vl = enc(len(value))
            hd = _encode_headers(headers) if headers else b"\x00"
            size = 1 + len(ts) + len(od) + len(kl) + len(key) + len(vl) + len(value) + len(hd)
            out += enc(size)
            out += b"\x00"  # attributes
            out += ts
            out += od
            out += kl
            out += key
            out += vl
            out += value
            out += hd
    except (TypeError, AttributeError, ValueError) as exc:
        raise EncodeError(f"cannot encode record: {exc}", path=f"records[{i}]") from None
    assert base_timestamp is not None and max_timestamp is not None
    return bytes(out), base_timestamp, max_timestamp


def _encode_headers(headers: list[Header]) -> bytes:
    parts = [encode_varint(len(headers))]
    for key, value in headers:
        if not isinstance(key, str):
            raise TypeError(f"header key must be str, not {type(key).__name__}")
        raw = key.encode()
        parts += (encode_varint(len(raw)), raw)
        if value is None:
            parts.append(b"\x01")
        else:
            parts += (encode_varint(len(value)), value)
    return b"".join(parts)
