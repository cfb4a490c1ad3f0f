"""The transaction coordinator: epochs, fencing, markers on commit/abort, timeouts."""

from __future__ import annotations

import pytest
import trio

from kipwire.codec import ErrorCode
from kipwire.mockbroker.coordinators.consumer_group import ConsumerGroup
from kipwire.mockbroker.coordinators.consumer_groups import ConsumerGroupCoordinator
from kipwire.mockbroker.coordinators.group_offsets import GroupOffsets
from kipwire.mockbroker.coordinators.groups import CommittedOffset, GroupCoordinator
from kipwire.mockbroker.coordinators.streams_groups import StreamsCoordinator
from kipwire.mockbroker.coordinators.transactions import TransactionCoordinator


def _coordinator() -> tuple[TransactionCoordinator, GroupCoordinator, list]:
    markers: list = []
    groups = GroupCoordinator()

    def write(topic: str, index: int, pid: int, epoch: int, commit: bool) -> None:
        markers.append((topic, index, pid, epoch, commit))

    return TransactionCoordinator(groups, write), groups, markers


@pytest.mark.trio
async def test_commit_writes_markers_and_applies_offsets():
    txns, groups, markers = _coordinator()
    _, pid, epoch = txns.init_producer_id("tx", 60_000, -1, -1)
    assert txns.add_partitions("tx", pid, epoch, [("t", 0), ("t", 1)]) == 0
    assert txns.add_offsets("tx", pid, epoch, "g") == 0
    offsets = {("t", 0): CommittedOffset(7, -1, None)}
    assert txns.commit_offsets("tx", pid, epoch, "g", offsets) == 0
    assert groups.group("g") is None  # not visible before the commit
    assert txns.end("tx", pid, epoch, commit=True) == 0
    assert markers == [("t", 0, pid, epoch, True), ("t", 1, pid, epoch, True)]
    assert groups.group("g").offsets[("t", 0)].offset == 7
    assert txns.end("tx", pid, epoch, commit=True) == 0  # a retry succeeds
    assert txns.end("tx", pid, epoch, commit=False) == ErrorCode.INVALID_TXN_STATE


@pytest.mark.trio
async def test_a_new_incarnation_aborts_the_open_transaction_and_fences_the_old_one():
    txns, _, markers = _coordinator()
    _, pid, epoch = txns.init_producer_id("tx", 60_000, -1, -1)
    txns.add_partitions("tx", pid, epoch, [("t", 0)])
    _, pid2, epoch2 = txns.init_producer_id("tx", 60_000, -1, -1)
    assert (pid2, epoch2) == (pid, epoch + 1)
    assert markers == [("t", 0, pid, epoch, False)]
    assert txns.add_partitions("tx", pid, epoch, [("t", 0)]) == ErrorCode.PRODUCER_FENCED
    assert txns.end("tx", 999, epoch2, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


@pytest.mark.trio
async def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced():
    txns, _, markers = _coordinator()
    _, pid, epoch = txns.init_producer_id("tx", 100, -1, -1)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(txns.run_timers)
            txns.add_partitions("tx", pid, epoch, [("t", 0)])
            while not markers:
                await trio.sleep(0.02)
            nursery.cancel_scope.cancel()
    assert markers == [("t", 0, pid, epoch + 1, False)]
    assert txns.end("tx", pid, epoch, commit=True) == ErrorCode.PRODUCER_FENCED


@pytest.mark.trio
async def test_committed_offsets_go_where_the_group_keeps_them():
    # a streams group (KIP-1071) and a consumer group (KIP-848) keep their own offsets: a
    # transaction's land there; any other id is a classic group's
    groups = GroupCoordinator()
    consumers = ConsumerGroupCoordinator(groups)
    consumers.groups["billing"] = ConsumerGroup("billing")
    streams = StreamsCoordinator()
    app = streams.group("app", create=True)
    assert app is not None
    txns = TransactionCoordinator(GroupOffsets(consumers, streams), lambda *marker: None)
    _, pid, epoch = txns.init_producer_id("tx", 60_000, -1, -1)
    for group_id, offset in (("app", 3), ("billing", 4), ("plain", 5)):
        assert txns.add_offsets("tx", pid, epoch, group_id) == 0
        committed = {("t", 0): CommittedOffset(offset, -1, "")}
        assert txns.commit_offsets("tx", pid, epoch, group_id, committed) == 0
    assert txns.end("tx", pid, epoch, commit=True) == 0
    assert app.offsets[("t", 0)].offset == 3
    assert groups.group("app") is None  # no classic group appears beside the streams group
    assert consumers.groups["billing"].offsets[("t", 0)].offset == 4
    assert groups.group("billing") is None  # nor beside the consumer group
    plain = groups.group("plain")
    assert plain is not None and plain.offsets[("t", 0)].offset == 5
