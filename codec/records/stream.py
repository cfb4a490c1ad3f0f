"""Entry points over a buffer of batches (a `records` field): iterate, build, assign offsets."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping

from ..errors import DecodeError, EncodeError
from . import batch as v2
from . import legacy
from .compression import DEFAULT_MAX_DECOMPRESSED
from .model import Batch, Compression, Record

_OFFSET_LENGTH = struct.Struct(">qi")
_MAGIC_AT = 16  # both formats: offset, length, then 4 bytes (leader epoch or CRC), then magic
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_MIN_LENGTH = {0: legacy.MIN_SIZE[0], 1: legacy.MIN_SIZE[1], 2: v2.MIN_BATCH_LENGTH}

Buffer = bytes | bytearray | memoryview


def iter_batches(
    data: Buffer,
    *,
    verify_crc: bool = True,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> Iterator[Batch]:
    """Yield the batches in ``data`` lazily, without copying it.

    A batch that runs past the end of ``data`` (brokers cut fetch responses like that) is the
    last one, yielded with ``truncated=True`` and no records. Inconsistent lengths inside a batch
    raise `DecodeError`, as does a CRC mismatch unless ``verify_crc`` is false (forensic reads).
    ``max_decompressed`` bounds the decompressed size of one batch.
    """
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    pos = 0
    end = len(view)
    while pos < end:
        if end - pos < _MAGIC_AT + 1:  # not even the magic byte: nothing but the offsets to tell
            yield Batch.cut(view[pos:], pos, -1)
            return
        base_offset, length = _OFFSET_LENGTH.unpack_from(view, pos)
        magic = view[pos + _MAGIC_AT]
        if magic not in _MIN_LENGTH:
            raise DecodeError(
                f"unknown magic {magic} (Kafka knows 0, 1 and 2)",
                offset=pos + _MAGIC_AT,
                path=f"batch@{base_offset}.magic",
            )
        if length < _MIN_LENGTH[magic]:
            raise DecodeError(
                f"batch length {length} is below magic {magic}'s minimum {_MIN_LENGTH[magic]}",
                offset=pos + 8,
                path=f"batch@{base_offset}.batch_length",
            )
        stop = pos + v2.LOG_OVERHEAD + length
        if stop > end:
            raw = view[pos:]
            if magic == 2:
                yield v2.RecordBatch.truncated_at(raw, pos)
            else:
                yield Batch.cut(raw, pos, magic)
            return
        if magic == 2:
            yield v2.RecordBatch(
                view[pos:stop], pos, verify_crc=verify_crc, max_decompressed=max_decompressed
            )
            pos = stop
        else:
            batch, pos = legacy.read(
                view, pos, verify_crc=verify_crc, max_decompressed=max_decompressed
            )
            yield batch


def build_batch(
    records: Iterable[Mapping | Record],
    *,
    compression: str | Compression = "none",
    base_offset: int = 0,
    magic: int = 2,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = -1,
    log_append_time: int | None = None,
    keep_offsets: bool = False,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Encode records (dicts of key, value, headers, timestamp, or `Record`) as one batch.

    Offsets run from ``base_offset`` in list order; a missing timestamp is the current time.
    ``compression`` is always applied, even when it does not shrink the data. ``magic`` 0 or 1
    writes a legacy message set (one wrapper message when compressed). ``log_append_time`` (ms)
    marks the batch as broker-timestamped.

    A compacted batch (magic 2 only, as Kafka's log cleaner writes it): ``keep_offsets`` keeps
    each `Record`'s own offset (gaps where records were removed), ``last_offset_delta`` keeps
    the original batch's last offset, and ``delete_horizon_ms`` is stored in the base timestamp
    with attribute bit 6 (KIP-534), the record timestamps relative to it.
    """
    compacted = keep_offsets or last_offset_delta is not None or delete_horizon_ms is not None
    if compacted and magic != 2:
        raise EncodeError("compacted batches need magic 2", path="magic")
    try:
        codec = Compression.parse(compression)
    except ValueError as exc:
        raise EncodeError(str(exc), path="compression") from None
    if magic == 2:
        return v2.build(
            records,
            compression=codec,
            base_offset=base_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            transactional=transactional,
            control=control,
            partition_leader_epoch=partition_leader_epoch,
            log_append_time=log_append_time,
            keep_offsets=keep_offsets,
            last_offset_delta=last_offset_delta,
            delete_horizon_ms=delete_horizon_ms,
        )
    if magic not in (0, 1):
        raise EncodeError(f"unknown magic {magic} (Kafka knows 0, 1 and 2)", path="magic")
    if transactional or control or (producer_id, producer_epoch, base_sequence) != (-1, -1, -1):
        raise EncodeError("producer state, transactions and control need magic 2", path="magic")
    return legacy.build(
        records,
        compression=codec,
        base_offset=base_offset,
        magic=magic,
        log_append_time=log_append_time,
    )


def assign_offsets(
    data: Buffer, base_offset: int, *, partition_leader_epoch: int | None = None
) -> bytes | bytearray:
    """Give the batches in ``data`` consecutive offsets from ``base_offset``, as a broker does.

    A v2 batch only has its 8-byte base offset rewritten (and its leader epoch when given): the
    CRC covers neither, so it stays valid and no record is re-encoded. A bytearray (or writable
    memoryview) is changed in place and returned; immutable input gives new bytes. Legacy plain
    messages and magic-1 wrappers get their offsets rewritten the same way; a magic-0 wrapper
    holds absolute inner offsets, so it is re-encoded, as Kafka does.
    """
    # The plan is made in its own frame: its views of ``data`` are gone before ``data`` is
    # changed, since a bytearray cannot be resized while a memoryview of it exists.
    return _apply(data, _plan(data, base_offset, partition_leader_epoch))


def _plan(
    data: Buffer, base_offset: int, partition_leader_epoch: int | None
) -> list[tuple[int, int, bytes]]:
    """The byte ranges ``assign_offsets`` replaces, in order: (start, stop, replacement)."""
    patches: list[tuple[int, int, bytes]] = []
    next_offset = base_offset
    for batch in iter_batches(data, verify_crc=False):
        if batch.truncated:
            raise EncodeError(f"the batch at byte {batch.position} is truncated", path="records")
        pos = batch.position
        if batch.magic == 2:
            patches.append((pos, pos + 8, _INT64.pack(next_offset)))
            if partition_leader_epoch is not None:
                patches.append((pos + 12, pos + 16, _INT32.pack(partition_leader_epoch)))
            next_offset += batch.last_offset_delta + 1
        elif batch.compression is Compression.NONE:
            at = pos
            for _ in batch.records:
                patches.append((at, at + 8, _INT64.pack(next_offset)))
                at += legacy.LOG_OVERHEAD + _INT32.unpack_from(batch.raw, at - pos + 8)[0]
                next_offset += 1
        elif batch.magic == 1:
            # relative inner offsets stay; the wrapper names the last record's absolute offset
            last = next_offset + batch.last_offset_delta
            patches.append((pos, pos + 8, _INT64.pack(last)))
            next_offset = last + 1
        else:
            rebuilt = legacy.build(
                batch.records,
                compression=batch.compression,
                base_offset=next_offset,
                magic=0,
                log_append_time=None,
            )
            patches.append((pos, pos + batch.size, rebuilt))
            next_offset += batch.record_count
    return patches


def _apply(data: Buffer, patches: list[tuple[int, int, bytes]]) -> bytes | bytearray:
    same_lengths = all(stop - start == len(new) for start, stop, new in patches)
    if isinstance(data, bytearray) or (
        isinstance(data, memoryview) and not data.readonly and same_lengths
    ):
        for start, stop, replacement in reversed(patches):  # from the end: lengths may change
            data[start:stop] = replacement
        return data
    view = memoryview(data)
    parts = []
    at = 0
    for start, stop, replacement in patches:
        parts += (view[at:start], replacement)
        at = stop
    parts.append(view[at:])
    return b"".join(parts)
