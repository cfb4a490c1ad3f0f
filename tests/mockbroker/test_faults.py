"""Faults on the running cluster, under trio's MockClock (virtual time): cuts and isolation
fence a broker after the session timeout and take it out of ISRs, heal brings it back, an
isolated broker still serves its clients, link latency and per-link errors on the wire; every
injection's handle (fired, remove()) and errors for one partition of a request."""

from __future__ import annotations

import time

import pytest
import trio
import trio.testing
from trio_client import AcksAllProducer, TrioWire, call_broker, read_partition

from kipwire.codec import ApiKey, CoordinatorType, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import ClusterError, MockCluster, open_cluster
from kipwire.mockbroker.network import CONTROLLER

METADATA_VERSION = 12
GROUP = {"key": "g", "key_type": CoordinatorType.GROUP}
HEARTBEAT_INTERVAL = 0.2  # broker.heartbeat.interval.ms, the mock's default
EMPTY_METADATA = {"topics": []}


async def _fenced_at(cluster, broker_id: int, limit: float = 60.0) -> float:
    """The virtual time at which the controller fences `broker_id`."""
    await cluster.wait_until(lambda: cluster.controller.broker(broker_id).fenced, timeout=limit)
    return trio.current_time()


@pytest.mark.trio
async def test_a_broker_cut_from_the_controller_is_fenced_after_the_session_timeout(
    autojump_clock,
):
    async with open_cluster(brokers=3, config={"min.insync.replicas": 2}) as cluster:
        await cluster.create_topic("t", partitions=1, replication_factor=3)
        assert cluster.partition("t", 0).isr == [1, 2, 3]
        cut = trio.current_time()
        cluster.partition_network(2, CONTROLLER)
        fenced = await _fenced_at(cluster, 2) - cut
        # fenced by the session timeout (2 s default, from the last heartbeat before the cut),
        # not earlier, and within the 3 s promised
        assert 2.0 - HEARTBEAT_INTERVAL <= fenced <= 3.0, fenced
        assert 2 not in cluster.partition("t", 0).isr
        assert cluster.metrics()["at_min_isr_partition_count"] == 1
        cluster.heal()
        await cluster.wait_until(lambda: not cluster.controller.broker(2).fenced, timeout=5)
        assert cluster.node(2).running


@pytest.mark.trio
async def test_a_thirty_second_session_timeout_costs_no_real_time(autojump_clock):
    async with open_cluster(brokers=2, config={"broker.session.timeout.ms": 30000}) as cluster:
        start, wall = trio.current_time(), time.perf_counter()
        cluster.isolate(1)
        # still unfenced just before the timeout, fenced just after
        await trio.sleep(29.5)
        assert not cluster.controller.broker(1).fenced
        fenced = await _fenced_at(cluster, 1) - start
        assert 30.0 - HEARTBEAT_INTERVAL <= fenced <= 31.0, fenced
        assert time.perf_counter() - wall < 10


@pytest.mark.trio
async def test_an_isolated_broker_still_serves_its_clients(autojump_clock):
    async with open_cluster(brokers=3) as cluster:
        cluster.isolate(1)
        await _fenced_at(cluster, 1)
        answer = await call_broker(
            cluster, 1, ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA, 1.0
        )
        assert answer["cluster_id"] == cluster.cluster_id
        assert cluster.network.is_cut(1, 3) and cluster.network.is_cut(CONTROLLER, 1)
        assert not cluster.network.is_cut(2, 3)


@pytest.mark.trio
async def test_a_cut_link_hangs_like_a_pulled_cable_and_heal_delivers(autojump_clock):
    async with open_cluster(brokers=3) as cluster:
        wire = TrioWire(await cluster.network.connect(1, 2))
        cluster.partition_network(1, 2)
        # brokers 1 and 2 still reach the controller: nobody is fenced
        await trio.sleep(5)
        assert not any(cluster.controller.broker(b).fenced for b in (1, 2, 3))
        with trio.move_on_after(3) as dialing:
            await cluster.network.connect(2, 1)
        # a new connection across the cut hangs too (a SYN nobody answers)
        assert dialing.cancelled_caught
        answers = []

        async def ask() -> None:
            answers.append(await wire.call(ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await trio.sleep(10)
            # no answer and no reset: the request waits on the cut
            assert answers == []
            cluster.heal()
        assert len(answers[0]["brokers"]) == 3
        await wire.aclose()


@pytest.mark.trio
async def test_link_latency_is_measured_on_the_wire(autojump_clock):
    async with open_cluster(brokers=2) as cluster:
        cluster.add_latency(50, link=(1, 2))
        wire = TrioWire(await cluster.network.connect(1, 2))
        start = trio.current_time()
        await wire.call(ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA)
        # one delay each way
        assert trio.current_time() - start == pytest.approx(0.1, abs=0.01)
        other = TrioWire(await cluster.network.connect(CONTROLLER, 2))
        start = trio.current_time()
        await other.call(ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA)
        assert trio.current_time() - start < 0.01
        cluster.add_latency(0, link=(2, 1))
        start = trio.current_time()
        await wire.call(ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA)
        assert trio.current_time() - start < 0.01
        await wire.aclose()
        await other.aclose()


@pytest.mark.trio
async def test_broker_latency_delays_its_client_answers(autojump_clock):
    async with open_cluster(brokers=2) as cluster:

        async def answered_in(broker: int) -> float:
            start = trio.current_time()
            await call_broker(
                cluster, broker, ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA, 5.0
            )
            return trio.current_time() - start

        cluster.add_latency(300, broker=2)
        assert [await answered_in(1), await answered_in(2)] == pytest.approx([0, 0.3], abs=0.01)
        # neither a broker nor a link: every broker
        cluster.add_latency(100)
        assert [await answered_in(1), await answered_in(2)] == pytest.approx([0.1, 0.1], abs=0.01)


@pytest.mark.trio
async def test_an_error_injected_on_a_link_hits_only_that_link(autojump_clock):
    async with open_cluster(brokers=3) as cluster:
        code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        cluster.inject_error(ApiKey.FIND_COORDINATOR, code, count=1, link=(2, 1))
        from_2 = TrioWire(await cluster.network.connect(2, 1))
        from_3 = TrioWire(await cluster.network.connect(3, 1))

        async def ask(wire: TrioWire | None) -> int:
            if wire is None:
                answer = await call_broker(cluster, 1, ApiKey.FIND_COORDINATOR, 3, GROUP, 1.0)
            else:
                answer = await wire.call(ApiKey.FIND_COORDINATOR, 3, GROUP)
            return answer["error_code"]

        # a client and another link are served; the link's next request fails, once
        assert [await ask(None), await ask(from_3), await ask(from_2), await ask(from_2)] == [
            0,
            0,
            code,
            0,
        ]
        await from_2.aclose()
        await from_3.aclose()


@pytest.mark.trio
async def test_metrics_report_isr_gauges_and_high_watermarks(autojump_clock):
    async with open_cluster(brokers=3, config={"min.insync.replicas": 2}) as cluster:
        await cluster.create_topic("t", partitions=1, replication_factor=3)
        producer = AcksAllProducer(cluster, "t")
        await producer.init(1)
        for value in (b"a", b"b", b"c"):
            assert await producer.send(value)
        metrics = cluster.metrics()
        assert metrics["high_watermark"] == {"t-0": 3}
        assert metrics["electable_leaders"] == {"t-0": 3}
        assert metrics["global_under_min_isr_partition_count"] == 0
        leader = cluster.partition("t", 0).leader
        followers = [b for b in cluster.partition("t", 0).replicas if b != leader]
        cluster.isolate(followers[0])
        await _fenced_at(cluster, followers[0])
        assert cluster.metrics()["at_min_isr_partition_count"] == 1
        cluster.isolate(followers[1])
        await _fenced_at(cluster, followers[1])
        assert cluster.metrics()["global_under_min_isr_partition_count"] == 1
        hwm, records = await read_partition(cluster, leader, "t", 0)
        assert hwm == 3 and [v for _, v in records] == [b"a", b"b", b"c"]
        # the last ISR member goes down uncleanly; after the heal an ELR member leads
        await cluster.stop_broker(leader, clean=False)
        cluster.heal()
        await cluster.wait_until(lambda: cluster.partition("t", 0).leader in followers, 10)
        metrics = cluster.metrics()
        assert metrics["election_from_eligible_leader_replicas"] == 1
        assert metrics["unclean_leader_elections"] == 0
        await cluster.wait_until(lambda: cluster.metrics()["high_watermark"] == {"t-0": 3}, 10)


@pytest.mark.trio
async def test_fault_arguments_are_checked(autojump_clock):
    async with open_cluster(brokers=2) as cluster:
        with pytest.raises(ClusterError):
            cluster.partition_network(1, 7)
        with pytest.raises(ValueError):
            cluster.partition_network(1, 1)
        with pytest.raises(ValueError):
            cluster.add_latency(-1, broker=1)
        with pytest.raises(ValueError):
            cluster.add_latency(10, broker=1, link=(1, 2))


def test_the_sync_cluster_fences_an_isolated_broker_after_its_session_and_heal_restores_it():
    with MockCluster(brokers=3, config={"min.insync.replicas": 2}) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=3)
        start = time.perf_counter()
        cluster.isolate(3)
        cluster.wait_until(lambda: cluster.controller.broker(3).fenced, timeout=10)
        # the mock's 2 s session, not Kafka's 9 s default; the margin is a loaded machine's
        assert time.perf_counter() - start < 5.0
        assert 3 not in cluster.partition("t", 0).isr
        assert cluster.metrics()["at_min_isr_partition_count"] == 1
        cluster.heal()
        # unfenced by its next heartbeat, back in the ISR once its fetches reach the leader
        assert cluster.wait_until(lambda: 3 in cluster.partition("t", 0).isr, timeout=10)


def test_the_sync_cluster_runs_on_a_given_clock():
    clock = trio.testing.MockClock(rate=20)
    config = {"broker.session.timeout.ms": 30000}
    with MockCluster(brokers=2, config=config, clock=clock) as cluster:
        start, wall = clock.current_time(), time.perf_counter()
        cluster.isolate(2)
        cluster.wait_until(lambda: cluster.controller.broker(2).fenced, timeout=60)
        # 30 virtual seconds at 20x: fenced by the session timeout in about 1.5 real seconds
        assert clock.current_time() - start >= 30.0 - HEARTBEAT_INTERVAL - 0.5
        assert time.perf_counter() - wall < 10


@pytest.mark.trio
async def test_an_answer_that_arrives_during_a_cut_is_held_until_heal(autojump_clock):
    async with open_cluster(brokers=2) as cluster:
        cluster.add_latency(1000, broker=2)
        wire = TrioWire(await cluster.network.connect(1, 2))
        answers = []

        async def ask() -> None:
            answers.append(await wire.call(ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await trio.sleep(0.5)
            # the request is across; its answer comes back at 1 s, into a cut cable
            cluster.partition_network(1, 2)
            await trio.sleep(5)
            assert answers == []
            healed = trio.current_time()
            cluster.heal()
        assert trio.current_time() - healed < 0.01
        assert len(answers[0]["brokers"]) == 2
        await wire.aclose()


@pytest.mark.trio
async def test_a_follower_cut_from_its_leader_leaves_the_isr_but_stays_unfenced(autojump_clock):
    async with open_cluster(brokers=3) as cluster:
        await cluster.create_topic("t", partitions=1, replication_factor=3)
        leader = cluster.partition("t", 0).leader
        follower = next(b for b in (1, 2, 3) if b != leader)
        cut = trio.current_time()
        cluster.partition_network(leader, follower)
        await cluster.wait_until(lambda: follower not in cluster.partition("t", 0).isr, 10)
        # shrunk by the leader after replica.lag.time.max.ms (1.5 s), not by fencing
        assert 1.5 <= trio.current_time() - cut <= 3.0
        assert not cluster.controller.broker(follower).fenced
        cluster.heal()
        await cluster.wait_until(lambda: follower in cluster.partition("t", 0).isr, 5)


@pytest.mark.trio
async def test_an_error_injected_on_a_link_to_the_controller(autojump_clock):
    async with open_cluster(brokers=3) as cluster:
        # stopped, so no heartbeat of its own can take the injection before ours
        await cluster.stop_broker(2, clean=True)
        code = ErrorCode.NOT_CONTROLLER
        # an untargeted injection is for the brokers' clients, never the controller
        cluster.inject_error(ApiKey.BROKER_HEARTBEAT, ErrorCode.UNKNOWN_SERVER_ERROR)
        cluster.inject_error(ApiKey.BROKER_HEARTBEAT, code, link=(2, CONTROLLER))

        async def heartbeat(broker: int) -> int:
            wire = TrioWire(await cluster.network.connect(broker, CONTROLLER))
            body = {
                "broker_id": broker,
                "broker_epoch": cluster.node(broker).epoch,
                "current_metadata_offset": cluster.node(broker).image.offset,
                "want_fence": not cluster.node(broker).running,
            }
            try:
                return (await wire.call(ApiKey.BROKER_HEARTBEAT, 1, body))["error_code"]
            finally:
                await wire.aclose()

        assert [await heartbeat(3), await heartbeat(2), await heartbeat(2)] == [0, code, 0]


# -- handles and partition errors ---------------------------------------------------------------

LIST_OFFSETS_VERSION, PRODUCE_VERSION, FETCH_BY_ID_VERSION = 7, 9, 13


def _produce_body(partitions: list[int]) -> dict:
    batch = build_batch([{"key": None, "value": b"v", "headers": []}])
    return {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": "t", "partition_data": [{"index": i, "records": batch} for i in partitions]}
        ],
    }


def _codes(response: dict, topics: str, parts: str, index: str) -> dict[int, int]:
    return {p[index]: p["error_code"] for t in response[topics] for p in t[parts]}


@pytest.mark.trio
async def test_an_error_handle_counts_what_it_fired_and_can_be_removed(autojump_clock):
    async with open_cluster(brokers=1) as cluster:
        code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        spent = cluster.inject_error(ApiKey.FIND_COORDINATOR, code, count=1)
        kept = cluster.inject_error(ApiKey.FIND_COORDINATOR, code, count=5)

        async def ask() -> int:
            body = await call_broker(cluster, 1, ApiKey.FIND_COORDINATOR, 3, GROUP, 1.0)
            return body["error_code"]

        assert [await ask(), await ask()] == [code, code]
        assert (spent.fired, spent.active, kept.fired, kept.active) == (1, False, 1, True)
        kept.remove()
        assert await ask() == ErrorCode.NONE
        assert (kept.fired, kept.active) == (1, False)
        kept.remove()  # removing twice is harmless


@pytest.mark.trio
async def test_latency_and_cut_handles_fire_and_remove(autojump_clock):
    async with open_cluster(brokers=2) as cluster:
        slow = cluster.add_latency(300, broker=2)
        start = trio.current_time()
        await call_broker(cluster, 2, ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA, 5.0)
        assert trio.current_time() - start == pytest.approx(0.3, abs=0.01)
        assert slow.fired == 1
        slow.remove()
        start = trio.current_time()
        await call_broker(cluster, 2, ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA, 5.0)
        assert trio.current_time() - start < 0.01
        wire = TrioWire(await cluster.network.connect(1, 2))
        cut = cluster.partition_network(1, 2)
        answers = []

        async def ask() -> None:
            answers.append(await wire.call(ApiKey.METADATA, METADATA_VERSION, EMPTY_METADATA))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await trio.sleep(1)
            assert answers == [] and cut.fired >= 1
            # removing the handle ends this cut alone: the held request goes through
            cut.remove()
        assert len(answers) == 1 and not cut.active
        await wire.aclose()


@pytest.mark.trio
async def test_an_error_for_one_partition_answers_only_that_partition(autojump_clock):
    async with open_cluster(brokers=1) as cluster:
        await cluster.create_topic("t", partitions=2)
        code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        produce = cluster.inject_error(ApiKey.PRODUCE, code, count=1, partition=("t", 1))
        body = await call_broker(
            cluster, 1, ApiKey.PRODUCE, PRODUCE_VERSION, _produce_body([0, 1]), 5.0
        )
        assert _codes(body, "responses", "partition_responses", "index") == {
            0: ErrorCode.NONE,
            1: code,
        }
        assert produce.fired == 1 and not produce.active
        assert cluster.node(1).logs["t", 0].end_offset == 1
        assert cluster.node(1).logs["t", 1].end_offset == 0
        # spent: the next produce to partition 1 is written
        body = await call_broker(
            cluster, 1, ApiKey.PRODUCE, PRODUCE_VERSION, _produce_body([1]), 5.0
        )
        assert _codes(body, "responses", "partition_responses", "index") == {1: ErrorCode.NONE}
        # a request that does not name the partition leaves the injection waiting
        offsets = cluster.inject_error(ApiKey.LIST_OFFSETS, code, count=1, partition=("t", 0))
        asked = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": "t", "partitions": [{"partition_index": 1, "timestamp": -1}]}],
        }
        body = await call_broker(cluster, 1, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, asked, 5.0)
        assert _codes(body, "topics", "partitions", "partition_index") == {1: ErrorCode.NONE}
        assert offsets.fired == 0 and offsets.active
        asked["topics"][0]["partitions"].insert(0, {"partition_index": 0, "timestamp": -1})
        body = await call_broker(cluster, 1, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, asked, 5.0)
        assert _codes(body, "topics", "partitions", "partition_index") == {
            0: code,
            1: ErrorCode.NONE,
        }
        assert offsets.fired == 1


@pytest.mark.trio
async def test_a_fetch_by_topic_id_with_a_failed_partition_answers_at_once(autojump_clock):
    async with open_cluster(brokers=1) as cluster:
        await cluster.create_topic("t", partitions=2)
        topic_id = cluster.node(1).image.topics["t"].topic_id
        code = ErrorCode.KAFKA_STORAGE_ERROR
        cluster.inject_error(ApiKey.FETCH, code, count=1, broker=1, partition=("t", 1))
        parts = [
            {"partition": i, "fetch_offset": 0, "partition_max_bytes": 1 << 20} for i in (0, 1)
        ]
        body = {
            "replica_id": -1,
            "max_wait_ms": 5000,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic_id": topic_id, "partitions": parts}],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        start = trio.current_time()
        answer = await call_broker(cluster, 1, ApiKey.FETCH, FETCH_BY_ID_VERSION, body, 10.0)
        # an errored partition answers at once, as a real partition error does
        assert trio.current_time() - start < 0.01
        assert _codes(answer, "responses", "partitions", "partition_index") == {
            0: ErrorCode.NONE,
            1: code,
        }
        assert [t["topic_id"] for t in answer["responses"]] == [topic_id]


def test_the_sync_cluster_returns_handles():
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic("t")
        handle = cluster.inject_error(ApiKey.PRODUCE, ErrorCode.NOT_ENOUGH_REPLICAS, count=3)
        assert (handle.fired, handle.active) == (0, True)
        handle.remove()
        assert not handle.active
        cut = cluster.isolate(1)
        assert cut.active
        cut.remove()
        assert not cut.active
