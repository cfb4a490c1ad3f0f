"""A kept batch's header rewrites: `with_offsets` writes what `assign_offsets` writes."""

from __future__ import annotations

from kipwire.codec.records import assign_offsets, build_batch, iter_batches
from kipwire.mockbroker.broker.batch_headers import with_offsets


def test_with_offsets_is_assign_offsets_for_one_batch():
    batch = build_batch([{"value": b"v%d" % i} for i in range(5)], producer_id=7, base_sequence=0)
    copied = with_offsets(memoryview(batch), 1234, 9)
    assert type(copied) is bytes
    assert copied == assign_offsets(batch, 1234, partition_leader_epoch=9)
    (read,) = iter_batches(copied, verify_crc=True)  # the CRC still holds
    assert (read.base_offset, read.partition_leader_epoch, read.last_offset) == (1234, 9, 1238)
