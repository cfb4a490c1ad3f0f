"""Kafka's on-disk format: segment files and their indexes, recovery, the small files."""

from __future__ import annotations

import struct
import uuid

from kipwire.codec.records import build_batch, iter_batches
from kipwire.mockbroker.broker import segment_files as files
from kipwire.mockbroker.broker.log_dirs import PartitionStore


def _batches(count: int, *, size: int = 900, start: int = 0, ts: int = 5000) -> list:
    """`count` one-record batches of about `size` bytes at offsets `start`..."""
    out = []
    for i in range(count):
        data = build_batch(
            [{"key": b"k", "value": b"x" * size, "timestamp": ts + i}], base_offset=start + i
        )
        (batch,) = iter_batches(data)
        out.append(files.SegmentBatch(start + i, start + i, batch.max_timestamp, data))
    return out


def test_names_are_kafkas():
    assert files.segment_name(42) == "00000000000000000042"
    assert files.partition_dir_name("orders.v1-x", 3) == "orders.v1-x-3"
    assert files.parse_partition_dir("orders.v1-x-3") == ("orders.v1-x", 3)
    assert files.parse_partition_dir("controller") is None
    topic_id = uuid.UUID("7b2ca0f1-83b1-4f4c-9d2a-0c6f2d7b2a11")
    assert files.uuid_text(topic_id) == "eyyg8YOxT0ydKgxvLXsqEQ"  # Uuid.toString()
    assert files.parse_uuid(files.uuid_text(topic_id)) == topic_id


def test_a_segment_holds_the_batches_as_stored_with_sparse_indexes(tmp_path):
    store = PartitionStore(tmp_path)
    batches = _batches(12)
    store.write(batches[:7])
    store.write(batches[5:])  # what is on disk already is not written twice
    log = (tmp_path / "00000000000000000000.log").read_bytes()
    assert log == b"".join(b.data for b in batches)
    size = len(batches[0].data)
    # an entry once more than 4096 bytes went by: at the 6th batch (5 sizes > 4096), then the 11th
    index = files.read_index((tmp_path / "00000000000000000000.index").read_bytes())
    assert index == [(5, 5 * size), (10, 10 * size)]
    times = files.read_time_index((tmp_path / "00000000000000000000.timeindex").read_bytes())
    assert times == [(5005, 5), (5010, 10)]  # the largest timestamp so far, with its offset
    assert len((tmp_path / "00000000000000000000.index").read_bytes()) == 8 * len(index)
    assert store.end_offset == 12


def test_segments_roll_by_size_and_are_read_back_in_order(tmp_path):
    size = len(_batches(1)[0].data)
    store = PartitionStore(tmp_path, segment_bytes=lambda: 3 * size)
    batches = _batches(8)
    store.write(batches)
    assert files.segment_bases(tmp_path) == [0, 3, 6]
    # a rolled segment's time index ends with its largest timestamp
    rolled = files.read_time_index((tmp_path / "00000000000000000003.timeindex").read_bytes())
    assert rolled == [(5005, 2)]
    again = PartitionStore(tmp_path, segment_bytes=lambda: 3 * size)
    assert [b.data for b in again.load()] == [b.data for b in batches]
    assert again.end_offset == 8


def test_recovery_cuts_a_torn_tail_and_a_corrupt_batch_and_rebuilds_the_indexes(tmp_path):
    store = PartitionStore(tmp_path)
    batches = _batches(9)
    store.write(batches)
    log_path = tmp_path / "00000000000000000000.log"
    data = bytearray(log_path.read_bytes())
    size = len(batches[0].data)
    data[7 * size + 100] ^= 0xFF  # the 8th batch's CRC no longer holds
    log_path.write_bytes(bytes(data) + b"\x00\x00\x00")  # and a torn write after the 9th
    (tmp_path / "00000000000000000000.index").write_bytes(b"\x00" * 80)  # a stale index
    recovered = PartitionStore(tmp_path)
    assert [b.base_offset for b in recovered.load()] == list(range(7))
    assert log_path.read_bytes() == b"".join(b.data for b in batches[:7])
    index = files.read_index((tmp_path / "00000000000000000000.index").read_bytes())
    assert index == [(5, 5 * size)]
    assert recovered.end_offset == 7


def test_the_small_files_are_written_as_kafka_writes_them(tmp_path):
    topic_id = uuid.uuid4()
    files.write_partition_metadata(tmp_path, topic_id)
    text = (tmp_path / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {files.uuid_text(topic_id)}\n"
    assert files.read_partition_metadata(tmp_path) == topic_id

    files.write_leader_epochs(tmp_path, [(0, 0), (3, 120)])
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 120\n"
    assert files.read_leader_epochs(tmp_path) == [(0, 0), (3, 120)]

    path = tmp_path / "replication-offset-checkpoint"
    files.write_offsets_checkpoint(path, {("b", 1): 7, ("a", 0): 12})
    assert path.read_text() == "0\n2\na 0 12\nb 1 7\n"
    assert files.read_offsets_checkpoint(path) == {("a", 0): 12, ("b", 1): 7}
    path.write_text("0\n3\na 0 12\n")  # a count that does not match: unreadable, as in Kafka
    assert files.read_offsets_checkpoint(path) == {}

    directory_id = uuid.uuid4()
    files.write_meta_properties(tmp_path, 2, "abc", directory_id)
    assert files.read_meta_properties(tmp_path) == {
        "node.id": "2",
        "directory.id": files.uuid_text(directory_id),
        "version": "1",
        "cluster.id": "abc",
    }


def test_an_index_entry_is_two_big_endian_int32s():
    indexes = files.SegmentIndexes(100, interval_bytes=0)
    indexes.add(100, 7, 50)
    indexes.add(104, 9, 60)
    assert indexes.index_bytes() == struct.pack(">ii", 4, 50)
    assert indexes.time_index_bytes() == struct.pack(">qi", 9, 4)
