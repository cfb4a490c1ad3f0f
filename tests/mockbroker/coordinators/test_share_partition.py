"""A share partition's delivery state (KIP-932), sans-I/O: acquisition in both acquire modes,
acknowledgements of every type, lock expiry, the delivery count limit and the start offset."""

from __future__ import annotations

import pytest

from kipwire.codec import ErrorCode
from kipwire.mockbroker.coordinators.share_partition import (
    AcknowledgeError,
    AcknowledgeType,
    Acquired,
    AcquireMode,
    RecordState,
    SharePartition,
)

BATCHES = [(0, 2), (3, 3), (4, 7)]  # three batches: 3, 1 and 4 records
LIMIT = 3


def _acquire(part: SharePartition, member: str = "m", **kw) -> list[Acquired]:
    options = {"deadline": 10.0, "max_in_flight": 2000, **kw}
    hwm = options.pop("hwm", 8)
    max_records = options.pop("max_records", 500)
    return part.acquire(member, BATCHES, hwm, max_records, **options)


def _ack(part: SharePartition, first: int, last: int, *types: int, member: str = "m") -> None:
    part.acknowledge(member, first, last, list(types), delivery_limit=LIMIT, renewed_deadline=99.0)


def test_acquires_whole_batches_up_to_the_high_watermark():
    part = SharePartition(0)
    assert _acquire(part, hwm=5) == [Acquired(0, 4, 1)]
    assert part.next_offset == 5  # the HWM cut the last batch; the rest is acquired later
    assert _acquire(part) == [Acquired(5, 7, 1)]
    assert _acquire(part) == []


def test_batch_optimized_exceeds_max_records_to_the_batch_end_record_limit_does_not():
    batchy = SharePartition(0)
    assert _acquire(batchy, max_records=2) == [Acquired(0, 2, 1)]
    strict = SharePartition(0)
    assert _acquire(strict, max_records=2, mode=AcquireMode.RECORD_LIMIT) == [Acquired(0, 1, 1)]
    assert _acquire(strict, max_records=2, mode=AcquireMode.RECORD_LIMIT) == [Acquired(2, 3, 1)]


def test_acknowledge_types_and_the_start_offset():
    part = SharePartition(0)
    _acquire(part)
    accept, release, reject, gap = (
        AcknowledgeType.ACCEPT,
        AcknowledgeType.RELEASE,
        AcknowledgeType.REJECT,
        AcknowledgeType.GAP,
    )
    _ack(part, 0, 3, accept, release, reject, gap)  # one type per offset
    assert part.start_offset == 1  # offset 1 is available again, so the SPSO waits there
    assert part.state_of(1).state is RecordState.AVAILABLE
    assert part.state_of(2).state is RecordState.ARCHIVED
    # the released record comes back first, with its delivery count raised
    assert _acquire(part, "other") == [Acquired(1, 1, 2)]
    _ack(part, 1, 1, accept, member="other")
    _ack(part, 4, 7, accept)  # one type for a whole range
    assert part.start_offset == 8 and part.records == {}
    _ack(part, 0, 7, reject)  # all below the start offset: finished, skipped
    assert part.start_offset == 8


def test_acknowledge_is_all_or_nothing_and_checks_the_owner():
    part = SharePartition(0)
    _acquire(part, hwm=3)
    with pytest.raises(AcknowledgeError) as wrong_member:
        _ack(part, 0, 0, AcknowledgeType.ACCEPT, member="someone else")
    assert wrong_member.value.code == ErrorCode.INVALID_RECORD_STATE
    with pytest.raises(AcknowledgeError) as beyond:
        _ack(part, 1, 5, AcknowledgeType.ACCEPT)  # 3..5 were never acquired
    assert beyond.value.code == ErrorCode.INVALID_RECORD_STATE
    assert part.state_of(1).state is RecordState.ACQUIRED  # nothing of 1..5 was applied
    with pytest.raises(AcknowledgeError) as uneven:
        _ack(part, 0, 2, AcknowledgeType.ACCEPT, AcknowledgeType.ACCEPT)
    assert uneven.value.code == ErrorCode.INVALID_REQUEST
    with pytest.raises(AcknowledgeError) as unknown:
        _ack(part, 0, 0, 9)
    assert unknown.value.code == ErrorCode.INVALID_REQUEST


def test_lock_expiry_redelivers_until_the_delivery_limit_then_archives():
    part = SharePartition(0)
    counts = []
    for now in (10.0, 20.0, 30.0):
        got = _acquire(part, hwm=1, deadline=now + 5)
        counts.extend(run.delivery_count for run in got)
        assert part.next_deadline() == now + 5
        assert part.expire_locks(now + 5, LIMIT)
    assert counts == [1, 2, 3]
    assert _acquire(part, hwm=1) == []  # archived at the limit
    assert part.start_offset == 1 and part.next_deadline() is None


def test_renew_extends_the_lock_and_release_member_frees_what_it_holds():
    part = SharePartition(0)
    _acquire(part, hwm=3, deadline=5.0)
    _ack(part, 0, 0, AcknowledgeType.RENEW)
    assert part.state_of(0).deadline == 99.0
    assert part.expire_locks(6.0, LIMIT)  # 1 and 2 expire; 0 was renewed
    assert part.state_of(0).state is RecordState.ACQUIRED
    assert part.state_of(1).state is RecordState.AVAILABLE
    assert part.release_member("m", LIMIT)
    assert part.state_of(0).state is RecordState.AVAILABLE
    assert not part.release_member("m", LIMIT)


def test_in_flight_limit_reset_skip_and_lag():
    part = SharePartition(0)
    assert _acquire(part, max_in_flight=3) == [Acquired(0, 2, 1)]
    assert _acquire(part, max_in_flight=3) == []  # 3 records in flight: no more locks
    _ack(part, 0, 0, AcknowledgeType.ACCEPT)
    assert part.lag(8) == 7
    part.skip_to(2)  # records below 2 were deleted from the log
    assert part.start_offset == 2 and part.state_of(1) is None
    part.reset(6)
    assert (part.start_offset, part.next_offset, part.records) == (6, 6, {})
    assert _acquire(part) == [Acquired(6, 7, 1)]


def test_archive_cuts_aborted_records_out_of_what_was_acquired():
    part = SharePartition(0)
    runs = _acquire(part)  # 0..7
    kept = part.archive(runs, {0, 1, 2, 5})
    assert kept == [Acquired(3, 4, 1), Acquired(6, 7, 1)]
    assert part.start_offset == 3  # the archived prefix is finished
    assert part.state_of(5).state is RecordState.ARCHIVED
