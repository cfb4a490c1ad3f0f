"""Interop with kafka-python 3.0.12's record builders and readers, in both directions."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

from kipwire.codec.records import (
    Compression,
    ControlType,
    Record,
    TimestampType,
    build_batch,
    control_record,
    decode_control,
    iter_batches,
)

pytestmark = pytest.mark.usefixtures("records_path")

TS = 1_700_000_000_000
CODECS = list(Compression)
LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def sample(with_keys: bool, with_headers: bool, count: int = 50) -> list[dict]:
    """Compressible records (kafka-python skips compression that does not shrink the data)."""
    records = []
    for i in range(count):
        headers = [("trace", b"id-%d" % i), ("empty", b""), ("null", None)] if with_headers else []
        records.append(
            {
                "key": (b"key-%d" % (i % 7) if i % 5 else b"") if with_keys else None,
                "value": None if i == 3 else b"value %d " % i * 4,
                "headers": headers,
                "timestamp": TS + i * 3 - (7 if i == 10 else 0),  # not monotonic: allowed
            }
        )
    return records


def kafka_python_records(data: bytes) -> tuple[list, list[Record]]:
    """Batches and records as kafka-python reads them (CRC checked)."""
    memory = MemoryRecords(bytes(data))
    batches, records = [], []
    while memory.has_next():
        batch = memory.next_batch()
        batches.append(batch)
        if batch.magic == 2:
            assert batch.validate_crc()
        for record in batch:
            if batch.magic < 2:
                assert record.validate_crc()
            headers = [tuple(h) for h in record.headers]
            timestamp = -1 if record.timestamp is None else record.timestamp
            records.append(Record(record.offset, timestamp, record.key, record.value, headers))
    return batches, records


def expected(records: list[dict], base_offset: int, magic: int = 2) -> list[Record]:
    return [
        Record(
            base_offset + i,
            r["timestamp"] if magic else -1,
            r["key"],
            r["value"],
            list(r["headers"]) if magic == 2 else [],
        )
        for i, r in enumerate(records)
    ]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name.lower())
@pytest.mark.parametrize("with_keys", [True, False], ids=["keys", "no-keys"])
@pytest.mark.parametrize("with_headers", [True, False], ids=["headers", "no-headers"])
def test_kafka_python_reads_our_v2_batches(codec, with_keys, with_headers) -> None:
    records = sample(with_keys, with_headers)
    data = build_batch(records, compression=codec, base_offset=100)
    batches, decoded = kafka_python_records(data)
    assert len(batches) == 1
    assert batches[0].compression_type == codec.value
    assert decoded == expected(records, 100)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name.lower())
@pytest.mark.parametrize("with_keys", [True, False], ids=["keys", "no-keys"])
@pytest.mark.parametrize("with_headers", [True, False], ids=["headers", "no-headers"])
def test_we_read_kafka_python_v2_batches(codec, with_keys, with_headers) -> None:
    records = sample(with_keys, with_headers)
    builder = DefaultRecordBatchBuilder(2, codec.value, False, -1, -1, -1, 1 << 20)
    for i, r in enumerate(records):
        builder.append(i, r["timestamp"], r["key"], r["value"], r["headers"])
    (batch,) = iter_batches(bytes(builder.build()))
    assert batch.compression is codec  # the data compresses, so kafka-python kept the codec
    assert batch.record_count == len(records) and batch.last_offset_delta == len(records) - 1
    assert batch.records == expected(records, 0)


def test_transactional_batches_both_ways() -> None:
    records = sample(True, True, 5)
    ours = build_batch(
        records, producer_id=4321, producer_epoch=7, base_sequence=99, transactional=True
    )
    (theirs_view,), decoded = kafka_python_records(ours)
    assert theirs_view.is_transactional and not theirs_view.is_control_batch
    assert (theirs_view.producer_id, theirs_view.producer_epoch) == (4321, 7)
    assert theirs_view.base_sequence == 99
    assert decoded == expected(records, 0)

    builder = DefaultRecordBatchBuilder(2, 0, True, 4321, 7, 99, 1 << 20)
    for i, r in enumerate(records):
        builder.append(i, r["timestamp"], r["key"], r["value"], r["headers"])
    (batch,) = iter_batches(bytes(builder.build()))
    assert batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4321, 7, 99)
    assert batch.records == expected(records, 0)


@pytest.mark.parametrize("kind", [ControlType.ABORT, ControlType.COMMIT])
def test_kafka_python_reads_our_control_batches(kind) -> None:
    marker = control_record(kind, {"coordinator_epoch": 12}, timestamp=TS)
    data = build_batch([marker], producer_id=5, producer_epoch=1, transactional=True, control=True)
    memory = MemoryRecords(data)
    batch = memory.next_batch()
    assert batch.is_control_batch and batch.is_transactional
    (record,) = list(batch)
    assert record.type == kind.value and record.version == 0
    assert record.commit == (kind is ControlType.COMMIT)


def test_we_read_a_kafka_python_built_control_batch() -> None:
    # kafka-python cannot mark a batch as control (only brokers write them), so its builder
    # writes the marker record and the control bit is set here, the CRC recomputed by its code.
    builder = DefaultRecordBatchBuilder(2, 0, True, 5, 1, -1, 1 << 20)
    builder.append(0, TS, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 3), [])
    data = bytearray(builder.build())
    struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 0x20)
    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    (batch,) = iter_batches(data)
    assert batch.is_control and batch.is_transactional
    control = decode_control(batch.records[0])
    assert control.type is ControlType.ABORT and control.value["coordinator_epoch"] == 3


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name.lower())
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_reads_our_legacy_sets(codec, magic) -> None:
    if codec is Compression.LZ4 and magic == 0:
        pytest.importorskip("xxhash", reason="kafka-python needs xxhash to read magic-0 lz4")
    records = [dict(r, headers=[]) for r in sample(True, False)]
    data = build_batch(records, compression=codec, magic=magic, base_offset=1000)
    batches, decoded = kafka_python_records(data)
    assert all(b.magic == magic for b in batches)
    assert decoded == expected(records, 1000, magic)


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name.lower())
@pytest.mark.parametrize("magic", [0, 1])
def test_we_read_kafka_python_legacy_sets(codec, magic) -> None:
    if codec is Compression.LZ4 and magic == 0:
        pytest.importorskip("xxhash", reason="kafka-python needs xxhash to write magic-0 lz4")
    records = [dict(r, headers=[]) for r in sample(True, False)]
    builder = LegacyRecordBatchBuilder(magic, codec.value, 1 << 20)
    for i, r in enumerate(records):
        builder.append(i, r["timestamp"], r["key"], r["value"])
    batches = list(iter_batches(bytes(builder.build())))
    # one wrapper when compressed; uncompressed messages form one run
    assert len(batches) == 1
    (batch,) = batches
    assert (batch.magic, batch.compression, batch.record_count) == (magic, codec, len(records))
    expected_type = TimestampType.CREATE_TIME if magic else TimestampType.NO_TIMESTAMP_TYPE
    assert batch.timestamp_type is expected_type
    assert batch.records == expected(records, 0, magic)
