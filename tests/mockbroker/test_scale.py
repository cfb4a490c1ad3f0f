"""The mock cluster at scale (issue 19), on real time: partitions created in topics of 100 at
replication factor 3 with no broker fenced and no create over 0.5 s, an idle cluster under 5% of
a core, a Metadata request for everything under 2 s, produce and consume still working; and a
saturated data plane that fences no broker.

A create's 0.5 s is taken on this process's CPU clock (the cluster runs in it): on a shared
machine with a load average several times its cores, wall time measures the machine's scheduler
(and a full garbage collection that CPU time counts once); wall time is bounded at 2 s too.
KIPWIRE_SCALE_PARTITIONS sets the partitions (default 300; `make test-deep` runs 10,000).
"""

from __future__ import annotations

import os
import resource
import time

import pytest
import trio
from trio_client import AcksAllProducer, call_broker, read_partition

from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker.cluster import Cluster, open_cluster
from kipwire.mockbroker.handlers import fetch as fetch_handler

PARTITIONS = int(os.environ.get("KIPWIRE_SCALE_PARTITIONS", "300"))
TOPIC_PARTITIONS = 100
SETTLE, IDLE = 2.0, 5.0
METADATA_VERSION, PRODUCE_VERSION = 12, 9


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _fenced(cluster: Cluster) -> list[int]:
    """Brokers the controller ever fenced: a fencing change in its metadata log."""
    fenced = []
    for entry in cluster.controller.log:
        if entry.name == "FenceBrokerRecord":
            fenced.append(entry.record["id"])
        elif entry.name == "BrokerRegistrationChangeRecord" and entry.record["fenced"] == 1:
            fenced.append(entry.record["broker_id"])
    return fenced


@pytest.mark.trio
async def test_partitions_at_scale_cost_nothing_idle():
    async with open_cluster(brokers=3) as cluster:
        slowest_cpu = slowest_wall = 0.0
        for n in range(max(PARTITIONS // TOPIC_PARTITIONS, 1)):
            start, cpu = time.perf_counter(), _cpu_seconds()
            await cluster.create_topic(f"s{n:04d}", TOPIC_PARTITIONS, replication_factor=3)
            slowest_cpu = max(slowest_cpu, _cpu_seconds() - cpu)
            slowest_wall = max(slowest_wall, time.perf_counter() - start)
        assert _fenced(cluster) == []
        assert slowest_cpu < 0.5 and slowest_wall < 2.0, (slowest_cpu, slowest_wall)
        await trio.sleep(SETTLE)
        before = _cpu_seconds()
        await trio.sleep(IDLE)
        assert (_cpu_seconds() - before) / IDLE < 0.05
        start = time.perf_counter()
        body = {"topics": None, "allow_auto_topic_creation": False}
        answer = await call_broker(cluster, 1, ApiKey.METADATA, METADATA_VERSION, body, 10.0)
        assert time.perf_counter() - start < 2.0
        total = sum(len(t["partitions"]) for t in answer["topics"])
        assert total == max(PARTITIONS // TOPIC_PARTITIONS, 1) * TOPIC_PARTITIONS
        producer = AcksAllProducer(cluster, "s0000", partition=7)
        await producer.init(1)
        for i in range(20):
            assert await producer.send(b"v%d" % i)
        leader = cluster.partition("s0000", 7).leader
        hwm, records = await read_partition(cluster, leader, "s0000", 7)
        assert hwm == 20 and [v for _, v in records] == list(producer.acked.values())
        assert _fenced(cluster) == []


@pytest.mark.trio
async def test_a_saturated_data_plane_fences_no_broker():
    async with open_cluster(brokers=3) as cluster:
        await cluster.create_topic("busy", 30, replication_factor=3)
        session_s = int(cluster.config["broker.session.timeout.ms"]) / 1000
        produced = 0
        batch = build_batch([{"key": None, "value": b"x" * 100, "headers": []}] * 50)

        async def hammer(broker_id: int, until: float) -> None:
            nonlocal produced
            led = [
                p.partition_id
                for p in cluster.controller.state.partitions()
                if p.topic == "busy" and p.leader == broker_id
            ]
            body = {
                "transactional_id": None,
                "acks": -1,
                "timeout_ms": 5000,
                "topic_data": [
                    {
                        "name": "busy",
                        "partition_data": [{"index": i, "records": batch} for i in led],
                    }
                ],
            }
            for _ in range(100_000):
                if trio.current_time() >= until:
                    return
                await call_broker(cluster, broker_id, ApiKey.PRODUCE, PRODUCE_VERSION, body, 10.0)
                produced += len(led)

        # the data plane busy for twice the session timeout, four producers per broker
        until = trio.current_time() + 2 * session_s
        async with trio.open_nursery() as nursery:
            for broker_id in cluster.nodes:
                for _ in range(4):
                    nursery.start_soon(hammer, broker_id, until)
        assert produced > 30  # every partition took batches
        assert _fenced(cluster) == []
        assert all(not cluster.controller.broker(b).fenced for b in cluster.nodes)


@pytest.mark.trio
async def test_a_sessionless_fetch_lists_every_partition_and_waits_on_its_own(monkeypatch):
    """A consumer's sessionless fetch over many partitions answers every one of them (as Kafka's
    SessionlessFetchContext does); while it waits, appends elsewhere on its broker cost it a
    look at its partitions' marks, not a read of each, and an append to one of them answers it."""
    reads = []
    original = fetch_handler._read

    def counted(*args: object) -> object:
        reads.append(1)
        return original(*args)

    monkeypatch.setattr(fetch_handler, "_read", counted)
    async with open_cluster(brokers=1) as cluster:
        await cluster.create_topic("wide", TOPIC_PARTITIONS)
        await cluster.create_topic("other", 1)
        batch = build_batch([{"key": None, "value": b"x" * 100, "headers": []}])

        async def produce(topic: str, index: int) -> None:
            body = {
                "transactional_id": None,
                "acks": 1,
                "timeout_ms": 5000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": index, "records": batch}]}
                ],
            }
            answer = await call_broker(cluster, 1, ApiKey.PRODUCE, PRODUCE_VERSION, body, 10.0)
            assert answer["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE

        fetch = {
            "replica_id": -1,
            "max_wait_ms": 20_000,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": "wide",
                    "partitions": [
                        {"partition": i, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        for i in range(TOPIC_PARTITIONS)
                    ],
                }
            ],
        }
        answers = []

        async def consume() -> None:
            answers.append(await call_broker(cluster, 1, ApiKey.FETCH, 12, fetch, 30.0))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            for _ in range(200):
                if reads:
                    break
                await trio.sleep(0.01)
            for _ in range(5):
                await produce("other", 0)
            assert not answers and len(reads) == 1
            await produce("wide", 42)
        (answer,) = answers
        (topic,) = answer["responses"]
        assert [p["partition_index"] for p in topic["partitions"]] == list(range(TOPIC_PARTITIONS))
        with_records = [p["partition_index"] for p in topic["partitions"] if p["records"]]
        assert with_records == [42] and len(reads) == 2
