"""The share coordinator, sans-I/O (under trio's clock): the simple assignor, member epochs,
session expiry releasing a member's records, and share sessions."""

from __future__ import annotations

import trio
import trio.testing

from kipwire.codec import ErrorCode
from kipwire.mockbroker.controller.group_configs import duration_ms
from kipwire.mockbroker.coordinators.share_groups import (
    ShareCoordinator,
    ShareGroupState,
    ShareMember,
    assign,
)
from kipwire.mockbroker.coordinators.share_partition import RecordState, SharePartition

SESSION_MS, MAX_SIZE, LIMIT = 1000, 3, 5


def _member(member_id: str, *topics: str) -> ShareMember:
    return ShareMember(member_id, "client", "/127.0.0.1", None, list(topics))


def test_assign_spreads_partitions_and_shares_them_when_members_outnumber_them():
    members = {"a": ["t", "u"], "b": ["t"], "c": ["t"]}
    spread = assign(members, {"t": 6, "u": 1})
    assert spread == {"a": {"t": [0, 3], "u": [0]}, "b": {"t": [1, 4]}, "c": {"t": [2, 5]}}
    shared = assign(members, {"t": 2})
    assert shared == {"a": {"t": [0]}, "b": {"t": [1]}, "c": {"t": [0]}}
    assert assign({"a": ["missing"]}, {"t": 1}) == {"a": {}}


def _run(test) -> None:
    trio.run(test, clock=trio.testing.MockClock(autojump_threshold=0))


def test_members_take_new_epochs_with_their_own_heartbeats():
    async def story() -> None:
        shares = ShareCoordinator()
        counts = {"t": 2}
        one = shares.heartbeat("g", _member("a", "t"), 0, counts, SESSION_MS, MAX_SIZE, LIMIT)
        # epoch 2: Kafka bumps once for the new member and once for the topics' metadata
        assert (one.error, one.member_epoch, one.assignment) == (0, 2, {"t": [0, 1]})
        two = shares.heartbeat("g", _member("b", "t"), 0, counts, SESSION_MS, MAX_SIZE, LIMIT)
        assert (two.member_epoch, two.assignment) == (3, {"t": [1]})
        group = shares.group("g")
        assert group is not None and group.members["a"].epoch == 2  # until it heartbeats
        again = shares.heartbeat("g", _member("a"), 2, counts, SESSION_MS, MAX_SIZE, LIMIT)
        assert (again.member_epoch, again.assignment) == (3, {"t": [0]})
        quiet = shares.heartbeat("g", _member("a"), 3, counts, SESSION_MS, MAX_SIZE, LIMIT)
        assert quiet.assignment is None
        # a new partition is a new epoch and a new assignment
        more = shares.heartbeat("g", _member("a"), 3, {"t": 4}, SESSION_MS, MAX_SIZE, LIMIT)
        assert (more.member_epoch, more.assignment) == (4, {"t": [0, 2]})
        full = [
            shares.heartbeat("g", _member(m, "t"), 0, counts, SESSION_MS, MAX_SIZE, LIMIT).error
            for m in ("c", "d")
        ]
        assert full == [ErrorCode.NONE, ErrorCode.GROUP_MAX_SIZE_REACHED]
        fenced = shares.heartbeat("g", _member("b"), 9, counts, SESSION_MS, MAX_SIZE, LIMIT)
        assert fenced.error == ErrorCode.FENCED_MEMBER_EPOCH

    _run(story)


def test_an_expired_member_is_removed_and_its_records_released():
    async def story() -> None:
        shares = ShareCoordinator()
        shares.heartbeat("g", _member("a", "t"), 0, {"t": 1}, SESSION_MS, MAX_SIZE, LIMIT)
        group = shares.group("g")
        assert group is not None
        part = group.partitions["t", 0] = SharePartition(0)
        part.acquire("a", [(0, 0)], 1, 10, deadline=60.0, max_in_flight=100)
        shares.open_session("g", "a", 1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(shares.run_timers)
            await trio.sleep(SESSION_MS / 1000 + 0.5)
            nursery.cancel_scope.cancel()
        assert group.state is ShareGroupState.EMPTY
        assert part.state_of(0).state is RecordState.AVAILABLE
        assert shares.session("g", "a", 1) is None

    _run(story)


def test_share_sessions_open_close_and_release():
    async def story() -> None:
        shares = ShareCoordinator()
        group = shares.group("g", create=True)
        assert group is not None
        part = group.partitions["t", 0] = SharePartition(0)
        session = shares.open_session("g", "a", 1)
        assert session.next_epoch == 1
        session.partitions.add(("t", 0))
        part.acquire("a", [(0, 1)], 2, 10, deadline=60.0, max_in_flight=100)
        assert shares.session("g", "a", 2) is None  # sessions are per broker
        shares.close_session("g", "a", 1, LIMIT)
        assert shares.session("g", "a", 1) is None
        assert part.state_of(1).state is RecordState.AVAILABLE
        assert shares.delete("g") == ErrorCode.NONE
        assert shares.delete("g") == ErrorCode.GROUP_ID_NOT_FOUND

    _run(story)


def test_by_duration_reads_iso_8601_durations():
    assert duration_ms("PT1H") == 3_600_000
    assert duration_ms("P1DT30M") == 88_200_000
    assert duration_ms("pt0.5s") == 500
    assert duration_ms("P") is None and duration_ms("1h") is None
