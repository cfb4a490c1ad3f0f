"""Golden vectors: bytes checked field by field against the format spec, CRCs included."""

from __future__ import annotations

import zlib

import pytest
from kafka.record._crc32c import crc as kafka_python_crc32c

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

TS = 1_700_000_000_000  # 0x0000018bcfe56800

# One record, key b"k", value b"v", one header ("h", b"1"), base offset 0.
V2_BATCH = bytes.fromhex(
    "0000000000000000"  # base offset 0
    "0000003e"  # batch length 62: the 74 bytes after these 12
    "ffffffff"  # partition leader epoch -1 (a producer does not know it)
    "02"  # magic 2
    "675a95fd"  # CRC-32C of everything from the attributes on
    "0000"  # attributes: no compression, create time, not transactional, not control
    "00000000"  # last offset delta 0
    "0000018bcfe56800"  # base timestamp
    "0000018bcfe56800"  # max timestamp
    "ffffffffffffffff"  # producer id -1
    "ffff"  # producer epoch -1
    "ffffffff"  # base sequence -1
    "00000001"  # record count 1
    "18"  # record length, zigzag 24 -> 12 bytes follow
    "00"  # record attributes
    "00"  # timestamp delta 0
    "00"  # offset delta 0
    "02"
    "6b"  # key length 1 (zigzag 2), b"k"
    "02"
    "76"  # value length 1, b"v"
    "02"  # one header
    "02"
    "68"  # header key length 1, "h"
    "02"
    "31"  # header value length 1, b"1"
)

# A magic-1 message: offset 5, null key, value b"hi", create time TS.
V1_MESSAGE = bytes.fromhex(
    "0000000000000005"  # offset 5
    "00000018"  # message size 24
    "dba4e6e2"  # CRC-32 (IEEE) of magic onward
    "01"  # magic 1
    "00"  # attributes: no compression, create time
    "0000018bcfe56800"  # timestamp
    "ffffffff"  # key: null
    "00000002"
    "6869"  # value b"hi"
)

# A magic-0 message: offset 5, key b"k", value b"hi", no timestamp field at all.
V0_MESSAGE = bytes.fromhex(
    "0000000000000005"  # offset 5
    "00000011"  # message size 17
    "d0a1b23e"  # CRC-32 (IEEE) of magic onward
    "00"  # magic 0
    "00"  # attributes
    "00000001"
    "6b"  # key b"k"
    "00000002"
    "6869"  # value b"hi"
)

# A transaction COMMIT marker as a broker writes it: transactional control batch, producer 1000
# epoch 3, at offset 42, one record with key (version 0, type 1) and value (version 0, epoch 7).
CONTROL_BATCH = bytes.fromhex(
    "000000000000002a"  # base offset 42
    "00000042"  # batch length 66
    "ffffffff"  # partition leader epoch
    "02"  # magic
    "ad320ccb"  # CRC-32C
    "0030"  # attributes: transactional (0x10) and control (0x20)
    "00000000"  # last offset delta
    "0000018bcfe56800"
    "0000018bcfe56800"  # base and max timestamp
    "00000000000003e8"  # producer id 1000
    "0003"  # producer epoch 3
    "ffffffff"  # base sequence
    "00000001"  # one record
    "20"
    "00"
    "00"
    "00"  # length 16, attributes, timestamp delta, offset delta
    "08"
    "00000001"  # key: 4 bytes, version 0, type 1 (COMMIT)
    "0c"
    "000000000007"  # value: 6 bytes, version 0, coordinator epoch 7
    "00"  # no headers
)


def test_v2_batch_bytes_and_crc() -> None:
    built = build_batch([{"key": b"k", "value": b"v", "headers": [("h", b"1")], "timestamp": TS}])
    assert built == V2_BATCH
    # the CRC from an independent implementation (kafka-python's pure-Python CRC-32C)
    assert kafka_python_crc32c(V2_BATCH[21:]) == 0x675A95FD


def test_v2_batch_decodes_every_field() -> None:
    (batch,) = iter_batches(V2_BATCH)
    assert (batch.base_offset, batch.batch_length, batch.partition_leader_epoch) == (0, 62, -1)
    assert (batch.magic, batch.crc, batch.attributes) == (2, 0x675A95FD, 0)
    assert batch.compression is Compression.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control and not batch.has_delete_horizon
    assert (batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp) == (0, TS, TS)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.record_count == 1 and not batch.truncated and batch.size == len(V2_BATCH)
    assert batch.records == [Record(0, TS, b"k", b"v", [("h", b"1")])]


def test_v1_message_bytes_and_crc() -> None:
    built = build_batch([{"key": None, "value": b"hi", "timestamp": TS}], magic=1, base_offset=5)
    assert built == V1_MESSAGE
    assert zlib.crc32(V1_MESSAGE[16:]) == 0xDBA4E6E2
    (batch,) = iter_batches(V1_MESSAGE)
    assert (batch.magic, batch.base_offset, batch.crc) == (1, 5, 0xDBA4E6E2)
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert batch.records == [Record(5, TS, None, b"hi", [])]


def test_v0_message_bytes_and_crc() -> None:
    built = build_batch([{"key": b"k", "value": b"hi"}], magic=0, base_offset=5)
    assert built == V0_MESSAGE
    assert zlib.crc32(V0_MESSAGE[16:]) == 0xD0A1B23E
    (batch,) = iter_batches(V0_MESSAGE)
    assert (batch.magic, batch.base_offset, batch.crc) == (0, 5, 0xD0A1B23E)
    assert batch.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE
    assert batch.records == [Record(5, -1, b"k", b"hi", [])]


def test_control_batch_bytes() -> None:
    marker = control_record(ControlType.COMMIT, {"coordinator_epoch": 7}, timestamp=TS)
    built = build_batch(
        [marker],
        base_offset=42,
        producer_id=1000,
        producer_epoch=3,
        transactional=True,
        control=True,
    )
    assert built == CONTROL_BATCH
    assert kafka_python_crc32c(CONTROL_BATCH[21:]) == 0xAD320CCB


def test_control_batch_decodes_to_a_commit_marker() -> None:
    (batch,) = iter_batches(CONTROL_BATCH)
    assert batch.is_control and batch.is_transactional
    assert (batch.base_offset, batch.producer_id, batch.producer_epoch) == (42, 1000, 3)
    (record,) = batch.records
    control = decode_control(record)
    assert (control.version, control.type) == (0, ControlType.COMMIT)
    assert control.value["coordinator_epoch"] == 7
