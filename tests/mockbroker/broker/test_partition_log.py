"""The partition log: offsets without re-encoding, CRC checks, reads, LSO, markers, epochs."""

from __future__ import annotations

import pytest

from kipwire.codec import ErrorCode
from kipwire.codec.records import build_batch, decode_control, iter_batches
from kipwire.mockbroker.broker.log import EARLIEST, LATEST, MAX_TIMESTAMP, LogError, PartitionLog


def _batch(
    n: int,
    *,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    txn: bool = False,
    ts: int = 1000,
    compression: str = "none",
) -> bytes:
    records = [{"key": b"k%d" % i, "value": b"v%d" % i, "timestamp": ts + i} for i in range(n)]
    return build_batch(
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=txn,
        compression=compression,
    )


def _offsets(data: bytes) -> list[int]:
    return [r.offset for b in iter_batches(data) for r in b.records]


def test_offsets_assigned_in_order_and_records_kept_byte_for_byte():
    log = PartitionLog(leader_epoch=7)
    first, second = _batch(3), _batch(2, compression="zstd")
    assert log.append(first).base_offset == 0
    assert log.append(second).base_offset == 3
    log.advance_high_watermark(log.end_offset)  # a leader alone in its ISR commits at once
    data = log.read(0, 1 << 20)
    assert _offsets(data) == [0, 1, 2, 3, 4]
    # only the base offset (bytes 0-8) and leader epoch (12-16) change: records are not rebuilt
    assert data[16 : len(first)] == first[16:]
    assert [b.partition_leader_epoch for b in iter_batches(data)] == [7, 7]
    assert log.end_offset == log.high_watermark == 5


def test_corrupt_batch_is_refused_and_nothing_is_appended():
    data = bytearray(_batch(2))
    data[-1] ^= 0xFF
    log = PartitionLog()
    with pytest.raises(LogError) as err:
        log.append(bytes(data))
    assert err.value.code == ErrorCode.CORRUPT_MESSAGE
    assert log.end_offset == 0


def test_truncated_and_empty_produce_are_refused():
    log = PartitionLog()
    with pytest.raises(LogError) as err:
        log.append(_batch(2)[:-5])
    assert err.value.code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(LogError) as err:
        log.append(b"")
    assert err.value.code == ErrorCode.INVALID_RECORD


def test_read_starts_at_the_batch_holding_the_offset_and_returns_one_batch_past_the_limit():
    log = PartitionLog()
    for _ in range(3):
        log.append(_batch(4))
    log.advance_high_watermark(log.end_offset)  # a leader alone in its ISR commits at once
    assert _offsets(log.read(5, 1))[:1] == [4]  # the batch 4..7, whole, although over 1 byte
    assert log.read(12, 1 << 20) == b""
    assert log.read(5, 1, min_one=False) == b""
    with pytest.raises(LogError) as err:
        log.read(13, 100)
    assert err.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_parts_are_the_stored_batches_read_joins():
    log = PartitionLog(leader_epoch=3)
    produced = [_batch(4) for _ in range(3)]
    for batch in produced:
        log.append(memoryview(bytearray(batch)))  # a request's buffer, as the serve path has it
    log.advance_high_watermark(log.end_offset)
    parts = log.read_parts(0, 1 << 20)
    assert len(parts) == 3 and all(type(p) is bytes for p in parts)
    assert b"".join(parts) == log.read(0, 1 << 20)
    assert [b.base_offset for b in iter_batches(b"".join(parts))] == [0, 4, 8]
    assert {b.partition_leader_epoch for b in iter_batches(b"".join(parts))} == {3}
    # only the offset and the epoch differ from what was produced (the CRC still holds)
    assert [p[16:] for p in parts] == [b[16:] for b in produced]
    assert log.read_parts(12, 1 << 20) == []


def test_idempotent_sequences_duplicates_and_gaps():
    log = PartitionLog()
    assert log.append(_batch(2, pid=5, epoch=0, seq=0)).base_offset == 0
    assert log.append(_batch(2, pid=5, epoch=0, seq=2)).base_offset == 2
    # a retry of the last batch answers the original offset and appends nothing
    assert log.append(_batch(2, pid=5, epoch=0, seq=2)).base_offset == 2
    assert log.end_offset == 4
    with pytest.raises(LogError) as err:
        log.append(_batch(1, pid=5, epoch=0, seq=9))
    assert err.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # a producer the log has no state for is accepted at any sequence (ProducerAppendInfo)
    assert log.append(_batch(1, pid=6, epoch=0, seq=3)).base_offset == 4


def test_duplicate_older_than_the_cache_is_duplicate_sequence_number():
    log = PartitionLog()
    for i in range(7):
        log.append(_batch(1, pid=1, epoch=0, seq=i))
    with pytest.raises(LogError) as err:
        log.append(_batch(1, pid=1, epoch=0, seq=0))
    assert err.value.code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER


def test_stale_epoch_is_fenced_and_new_epoch_restarts_at_zero():
    log = PartitionLog()
    log.append(_batch(1, pid=1, epoch=3, seq=0))
    with pytest.raises(LogError) as err:
        log.append(_batch(1, pid=1, epoch=2, seq=1))
    assert err.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(LogError) as err:
        log.append(_batch(1, pid=1, epoch=4, seq=1))
    assert err.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append(_batch(1, pid=1, epoch=4, seq=0)).base_offset == 1


def test_open_transaction_holds_the_lso_and_an_abort_is_indexed():
    log = PartitionLog()
    log.append(_batch(2))
    log.append(_batch(2, pid=9, epoch=0, seq=0, txn=True))
    log.advance_high_watermark(log.end_offset)  # a leader alone in its ISR commits at once
    assert log.last_stable_offset == 2
    assert log.high_watermark == 4
    assert _offsets(log.read(0, 1 << 20, committed=True)) == [0, 1]
    marker = log.append_marker(9, 0, commit=False)
    log.advance_high_watermark(log.end_offset)  # a leader alone in its ISR commits at once
    assert marker == 4
    assert log.last_stable_offset == 5
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.aborted_in(0, 5)] == [
        (9, 2, 4)
    ]
    (control,) = [b for b in iter_batches(log.read(4, 1 << 20))]
    assert control.is_control
    assert decode_control(control.records[0]).type.name == "ABORT"


def test_commit_marker_leaves_no_aborted_transaction():
    log = PartitionLog()
    log.append(_batch(1, pid=3, epoch=0, seq=0, txn=True))
    log.append_marker(3, 0, commit=True)
    log.advance_high_watermark(log.end_offset)  # a leader alone in its ISR commits at once
    assert log.aborted_in(0, 10) == []
    assert log.last_stable_offset == log.high_watermark == 2


def test_list_offsets_by_time_and_special_values():
    log = PartitionLog()
    log.append(_batch(2, ts=100))
    log.append(_batch(2, ts=500))
    log.advance_high_watermark(log.end_offset)  # a leader alone in its ISR commits at once
    assert log.offset_for_time(EARLIEST)[0] == 0
    assert log.offset_for_time(LATEST)[0] == 4
    # record by record, as Kafka: the first record at or after 300 (not its batch's max)
    assert log.offset_for_time(300)[:2] == (2, 500)
    assert log.offset_for_time(MAX_TIMESTAMP)[:2] == (3, 501)
    assert log.offset_for_time(10_000) == (-1, -1, -1)


def test_epoch_end_offsets_and_delete_records():
    log = PartitionLog(leader_epoch=1)
    log.append(_batch(3))
    log.leader_epoch = 4
    log.append(_batch(2))
    log.advance_high_watermark(log.end_offset)  # a leader alone in its ISR commits at once
    assert log.end_offset_for_epoch(1) == (1, 3)
    assert log.end_offset_for_epoch(3) == (1, 3)
    assert log.end_offset_for_epoch(4) == (4, 5)
    assert log.end_offset_for_epoch(0) == (-1, -1)
    assert log.delete_before(4) == 4
    assert log.offset_for_time(EARLIEST)[0] == 4
    with pytest.raises(LogError):
        log.read(2, 100)
    with pytest.raises(LogError):
        log.delete_before(99)


def test_by_time_skips_records_below_the_log_start_inside_a_batch():
    log = PartitionLog()
    log.append(_batch(4, ts=100))  # timestamps 100..103 at offsets 0..3
    log.advance_high_watermark(log.end_offset)
    log.delete_before(2)  # the batch stays, its first two records are gone
    assert log.offset_for_time(0)[:2] == (2, 102)
    assert log.offset_for_time(MAX_TIMESTAMP)[:2] == (3, 103)


def test_log_append_time_is_stamped_into_each_batch_with_a_valid_crc():
    log = PartitionLog()
    log.append(_batch(3, ts=100) + _batch(2, ts=200), log_append_time=5_000)
    batches = [b for s in log.batches for b in iter_batches(s.data, verify_crc=True)]
    assert [b.timestamp_type.name for b in batches] == ["LOG_APPEND_TIME"] * 2
    assert [r.timestamp for b in batches for r in b.records] == [5_000] * 5
    log.advance_high_watermark(log.end_offset)
    assert log.offset_for_time(4_000)[:2] == (0, 5_000)
    assert log.offset_for_time(MAX_TIMESTAMP)[:2] == (0, 5_000)  # the first with the largest


def test_batches_from_starts_at_the_batch_holding_the_offset():
    log = PartitionLog()
    for _ in range(3):
        log.append(_batch(4))
    assert [b.base_offset for b in log.batches_from(5)] == [4, 8]
    assert [b.base_offset for b in log.batches_from(0)] == [0, 4, 8]
    assert [b.base_offset for b in log.batches_from(11)] == [8]
    assert list(log.batches_from(12)) == [log.batches[-1]]  # past the end: the last batch
