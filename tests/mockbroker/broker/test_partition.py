"""`Partition.append` owns the acks=all rule (kip-rules A.3) on its own, with a stand-in broker:
the min-ISR gate before the append, the wait for the high watermark, the errors after it."""

from __future__ import annotations

import uuid

import pytest
import trio
import trio.testing

from kipwire.codec import ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker.broker.isr import LeaderIsr
from kipwire.mockbroker.broker.log import LogError, PartitionLog
from kipwire.mockbroker.broker.metadata_image import MetadataImage, PartitionInfo
from kipwire.mockbroker.broker.partition import ACKS_ALL, Partition

KEY = ("t", 0)
RECORDS = build_batch([{"key": None, "value": b"v", "headers": []}])


class _Replication:
    """The broker's replication runtime reduced to one led partition's ISR state."""

    def __init__(self, state: LeaderIsr | None, min_isr: int) -> None:
        self.leader = state
        self._min_isr = min_isr
        self.appends = 0

    def state(self, key: tuple[str, int]) -> LeaderIsr | None:
        return self.leader

    def min_isr(self, part: PartitionInfo) -> int:
        return self._min_isr

    def appended(self, key: tuple[str, int]) -> None:
        self.appends += 1

    def follower_fetched(self, key, replica_id, replica_epoch, offset) -> None:
        raise AssertionError("no follower fetches here")


class _Broker:
    """A broker holding one partition it leads, with replicas 1, 2, 3."""

    node_id = 1

    def __init__(self, isr: tuple[int, ...], min_isr: int) -> None:
        self.image = MetadataImage()
        topic_id = uuid.uuid4()
        self.image.replay(0, "TopicRecord", {"name": "t", "topic_id": topic_id})
        record = {
            "topic_id": topic_id,
            "partition_id": 0,
            "replicas": [1, 2, 3],
            "isr": list(isr),
            "leader": 1,
            "leader_epoch": 0,
            "partition_epoch": 0,
        }
        self.image.replay(1, "PartitionRecord", record)
        state = LeaderIsr(1, 0, 0, [1, 2, 3], list(isr), now_ms=0, lag_ms=1000)
        self.replication = _Replication(state, min_isr)
        self.logs = {KEY: PartitionLog()}
        self._arrived = trio.Event()

    def replica_log(self, topic: str, index: int) -> PartitionLog:
        return self.logs[topic, index]

    def data_arrived(self) -> None:
        self._arrived.set()
        self._arrived = trio.Event()

    async def wait_for_data(self, key: tuple[str, int] | None = None) -> None:
        await self._arrived.wait()


async def _append_and_then(broker: _Broker, acks: int, timeout_ms: int, then) -> object:
    """Start an append, run `then()` once it waits, and return its result or its LogError."""
    result: list[object] = []

    async def append() -> None:
        try:
            result.append(await Partition(broker, *KEY).append(RECORDS, acks, timeout_ms))
        except LogError as exc:
            result.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(append)
        await trio.testing.wait_all_tasks_blocked()
        then()
    return result[0]


@pytest.mark.trio
async def test_acks_all_below_min_isr_is_refused_before_anything_is_written():
    broker = _Broker(isr=(1,), min_isr=2)
    with pytest.raises(LogError) as refused:
        await Partition(broker, *KEY).append(RECORDS, ACKS_ALL, 1000)
    assert refused.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert broker.logs[KEY].end_offset == 0 and broker.replication.appends == 0
    # acks=1 does not look at the ISR
    appended = await Partition(broker, *KEY).append(RECORDS, 1, 1000)
    assert (appended.base_offset, broker.logs[KEY].end_offset) == (0, 1)


@pytest.mark.trio
async def test_acks_all_answers_once_the_high_watermark_passes_the_batch(autojump_clock):
    broker = _Broker(isr=(1, 2), min_isr=2)

    def replicate() -> None:
        broker.logs[KEY].advance_high_watermark(1)
        broker.data_arrived()

    appended = await _append_and_then(broker, ACKS_ALL, 5000, replicate)
    assert appended.base_offset == 0 and broker.replication.appends == 1


@pytest.mark.trio
async def test_an_isr_shrunk_below_min_isr_meanwhile_is_not_enough_replicas_after_append(
    autojump_clock,
):
    broker = _Broker(isr=(1, 2), min_isr=2)

    def shrink_then_replicate() -> None:
        broker.replication.leader.metadata([1], 1, 0)
        broker.logs[KEY].advance_high_watermark(1)
        broker.data_arrived()

    error = await _append_and_then(broker, ACKS_ALL, 5000, shrink_then_replicate)
    assert error.code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert broker.logs[KEY].end_offset == 1  # written, but not acknowledged


@pytest.mark.trio
async def test_acks_all_times_out_or_loses_leadership(autojump_clock):
    broker = _Broker(isr=(1, 2), min_isr=2)
    start = trio.current_time()
    with pytest.raises(LogError) as late:
        await Partition(broker, *KEY).append(RECORDS, ACKS_ALL, 300)
    assert late.value.code == ErrorCode.REQUEST_TIMED_OUT
    assert trio.current_time() - start == pytest.approx(0.3)

    def lose_leadership() -> None:
        broker.replication.leader = None
        broker.data_arrived()

    error = await _append_and_then(broker, ACKS_ALL, 5000, lose_leadership)
    assert error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


@pytest.mark.trio
async def test_write_never_waits_and_replicated_keeps_one_deadline(autojump_clock):
    # what a produce of several partitions does: write each, then wait for each in turn
    broker = _Broker(isr=(1, 2), min_isr=2)
    partition = Partition(broker, *KEY)
    start = trio.current_time()
    writes = [partition.write(RECORDS, ACKS_ALL) for _ in range(2)]
    assert [(a.base_offset, end) for a, end in writes] == [(0, 1), (1, 2)]
    assert trio.current_time() == start and broker.replication.appends == 2
    broker.logs[KEY].advance_high_watermark(1)
    await partition.replicated(writes[0][1], start + 0.3)  # passed already: no wait
    assert trio.current_time() == start
    with pytest.raises(LogError) as late:
        await partition.replicated(writes[1][1], start + 0.3)
    assert late.value.code == ErrorCode.REQUEST_TIMED_OUT
    assert trio.current_time() - start == pytest.approx(0.3)
