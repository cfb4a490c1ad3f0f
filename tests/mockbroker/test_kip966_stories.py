"""KIP-966's stories end to end against a replicating mock cluster, brokers stopped and restarted,
the data checked afterwards. The last-replica-standing stories run a confluent-kafka idempotent
producer (acks=all) on real time; the stories whose timing is the point (the 4-broker
walkthrough, the network-cut telling fenced by the session timeout) run inside the cluster's
trio loop on trio's MockClock, with the codec-built producer and reader, so each is one
deterministic sequence."""

from __future__ import annotations

import time

import trio
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from trio.testing import MockClock
from trio_client import AcksAllProducer, read_partition

from kipwire.mockbroker import MockCluster, open_cluster
from kipwire.mockbroker.cluster import Cluster

DEADLINE = 30.0
TOPIC = "story"


def _producer(cluster: MockCluster, timeout_ms: int = 20000) -> Producer:
    return Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 1,
            "message.timeout.ms": timeout_ms,
        }
    )


def _produce(cluster: MockCluster, values: list[bytes], timeout_ms: int = 20000) -> list[bytes]:
    """Produce `values`; return those the cluster acknowledged."""
    acked: list[bytes] = []
    producer = _producer(cluster, timeout_ms)
    for value in values:
        producer.produce(
            TOPIC,
            value,
            partition=0,
            on_delivery=lambda e, m: e is None and acked.append(m.value()),
        )
    assert producer.flush(DEADLINE) == 0
    return acked


def _consume_all(cluster: MockCluster, expected: int) -> list[bytes]:
    """Read partition 0 from the start until `expected` records or the deadline."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    seen: list[bytes] = []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(seen) < expected and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    seen.append(message.value())
                elif message.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(message.error())
    finally:
        consumer.close()
    return seen


def _high_watermark(cluster: MockCluster) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "hwm"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1]
    finally:
        consumer.close()


def _values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(count)]


def _roles(cluster: MockCluster) -> tuple[int, int, int]:
    p = cluster.partition(TOPIC, 0)
    leader = p.leader
    first, second = [r for r in p.replicas if r != leader]
    return leader, first, second


def _wait(cluster: MockCluster, predicate) -> None:
    cluster.wait_until(predicate, timeout=DEADLINE)


def _last_replica_standing(cluster: MockCluster) -> tuple[list[bytes], int, int, int]:
    """T0-T2 of the story: both followers lost, then the leader (last ISR member) uncleanly.

    Returns the acknowledged values and (leader, first follower, second follower).
    """
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    leader, first, second = _roles(cluster)
    _wait(cluster, lambda: len(cluster.partition(TOPIC, 0).isr) == 3)
    acked = _produce(cluster, _values("t0", 40))
    assert len(acked) == 40
    # T0: the first follower is lost
    cluster.stop_broker(first, clean=False)
    _wait(cluster, lambda: cluster.partition(TOPIC, 0).isr == [leader, second])
    acked += _produce(cluster, _values("t1", 40))
    assert len(acked) == 80
    # T1: the second follower is stopped cleanly: ISR = [leader] is below min ISR 2
    cluster.stop_broker(second, clean=True)
    _wait(cluster, lambda: cluster.partition(TOPIC, 0).isr == [leader])
    refused = _produce(cluster, _values("refused", 5), timeout_ms=1500)
    assert refused == []  # NOT_ENOUGH_REPLICAS until the message timeout
    # T2: the leader, last ISR member, shuts down uncleanly and loses its unflushed log
    cluster.stop_broker(leader, clean=False)
    _wait(cluster, lambda: cluster.partition(TOPIC, 0).leader == -1)
    assert cluster.cluster.nodes[leader].logs[TOPIC, 0].end_offset == 0
    return acked, leader, first, second


def test_last_replica_standing_with_elr_keeps_every_acknowledged_record():
    with MockCluster(brokers=3, config={"min.insync.replicas": "2"}) as cluster:
        acked, leader, first, second = _last_replica_standing(cluster)
        # a fenced leader stays in the ELR until it re-registers as uncleanly shut down (D.17)
        assert sorted(cluster.partition(TOPIC, 0).elr) == sorted([leader, second])
        # T3: the ELR member comes back and is elected
        cluster.start_broker(second)
        _wait(cluster, lambda: cluster.partition(TOPIC, 0).leader == second)
        # T4: the old leader restarts as a follower and rejoins the ISR
        cluster.start_broker(leader)
        assert cluster.partition(TOPIC, 0).elr == []  # its unclean restart took it out (D.18)
        _wait(cluster, lambda: sorted(cluster.partition(TOPIC, 0).isr) == sorted([leader, second]))
        seen = _consume_all(cluster, len(acked))
        assert seen == acked
        # the old leader truncated nothing it should keep: it holds the new leader's log
        _wait(cluster, lambda: cluster.cluster.nodes[leader].logs[TOPIC, 0].end_offset == 80)


def test_last_replica_standing_without_elr_loses_acknowledged_records():
    with MockCluster(
        brokers=3,
        config={"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
        features={"eligible.leader.replicas.version": 0},
    ) as cluster:
        acked, leader, first, second = _last_replica_standing(cluster)
        # without ELR the emptied leader stays the last ISR member
        assert cluster.partition(TOPIC, 0).isr == [leader]
        # its unfence (done before start_broker returns) elects nobody: no unclean election
        cluster.start_broker(second)
        assert cluster.partition(TOPIC, 0).leader == -1
        cluster.start_broker(leader)
        _wait(cluster, lambda: cluster.partition(TOPIC, 0).leader == leader)
        # the second follower truncates to the emptied leader's log and joins the ISR
        _wait(cluster, lambda: sorted(cluster.partition(TOPIC, 0).isr) == sorted([leader, second]))
        _wait(cluster, lambda: cluster.cluster.nodes[second].logs[TOPIC, 0].end_offset == 0)
        lost = len(acked) - _high_watermark(cluster)
        assert lost == len(acked) == 80


async def _trio_produce(
    cluster: Cluster, values: list[bytes], timeout: float = 20.0
) -> list[bytes]:
    """Produce `values` with a new idempotent acks=all producer; return those acknowledged."""
    producer = AcksAllProducer(cluster, TOPIC, timeout=timeout)
    await producer.init(cluster.live_nodes()[0].node_id)
    return [value for value in values if await producer.send(value)]


async def four_brokers_min_isr_three_walkthrough() -> None:
    """The KIP's 4-broker, min ISR 3 example (T0-T7), on trio's clock. Lagging is a network cut
    from the leader; T2 heals every cut, so b4 catches up there already (T4 has nothing left to
    do). The controller handles one lost broker at a time, so at T3 only the loss that takes the
    ISR below min ISR puts its broker in the ELR: b3 goes first (uncleanly), then b2 (a clean
    stop, so its return at T6 is clean, as the KIP's "after partitioning")."""
    async with open_cluster(brokers=4, config={"min.insync.replicas": "3"}) as cluster:

        async def wait(predicate) -> None:
            await cluster.wait_until(predicate, timeout=DEADLINE)

        await cluster.create_topic(TOPIC, partitions=1, replication_factor=4)
        p = cluster.partition(TOPIC, 0)
        b1, b2, b3, b4 = p.replicas
        assert p.leader == b1
        await wait(lambda: len(cluster.partition(TOPIC, 0).isr) == 4)
        # T1: b3 and b4 lag behind new records; b1 shrinks the ISR to {b1, b2}
        cluster.partition_network(b1, b3)
        cluster.partition_network(b1, b4)
        # written, never acknowledged: the HWM cannot pass them while b3 and b4 lag
        assert await _trio_produce(cluster, _values("unacked", 3), timeout=1.5) == []
        await wait(lambda: sorted(cluster.partition(TOPIC, 0).isr) == sorted([b1, b2]))
        # b1 drops them in one AlterPartition or two (then only the second is in the ELR)
        elr = cluster.partition(TOPIC, 0).elr
        assert elr and set(elr) <= {b3, b4}
        # T2: they catch up; b1 proposes the full ISR and the ELR is cleaned
        cluster.heal()
        await wait(lambda: len(cluster.partition(TOPIC, 0).isr) == 4)
        assert cluster.partition(TOPIC, 0).elr == []
        acked = await _trio_produce(cluster, _values("t2", 30))
        assert len(acked) == 30
        # T3: b3 then b2 go offline: out of the ISR; b2's loss puts it in the ELR
        await cluster.stop_broker(b3, clean=False)
        assert cluster.partition(TOPIC, 0).elr == []  # ISR {b1, b2, b4} still meets min ISR
        await cluster.stop_broker(b2, clean=True)
        p = cluster.partition(TOPIC, 0)
        assert sorted(p.isr) == sorted([b1, b4]) and p.elr == [b2]
        # T5: b1 and b4 go offline into the ELR; b3 returns from its unclean shutdown, outside it
        await cluster.stop_broker(b1, clean=False)
        await cluster.stop_broker(b4, clean=False)
        p = cluster.partition(TOPIC, 0)
        assert p.leader == -1 and p.isr == [] and sorted(p.elr) == sorted([b1, b2, b4])
        await cluster.start_broker(b3)
        assert sorted(cluster.partition(TOPIC, 0).elr) == sorted([b1, b2, b4])
        # T6: b1 returns uncleanly and leaves the ELR; b2 returns and is elected from the ELR
        await cluster.start_broker(b1)
        assert sorted(cluster.partition(TOPIC, 0).elr) == sorted([b2, b4])
        assert cluster.partition(TOPIC, 0).leader == -1
        await cluster.start_broker(b2)
        await wait(lambda: cluster.partition(TOPIC, 0).leader == b2)
        # b1 and b3 may catch up (and clean the ELR) before a look at the state: read the
        # election's own record instead
        (election,) = [
            e.record
            for e in cluster.controller.log
            if e.name == "PartitionChangeRecord" and e.record.leader == b2
        ]
        assert list(election.eligible_leader_replicas) == [b4]
        # T7: b1 and b3 catch up; b2 proposes ISR {b2, b1, b3}; the ELR is cleaned
        await wait(lambda: sorted(cluster.partition(TOPIC, 0).isr) == sorted([b1, b2, b3]))
        assert cluster.partition(TOPIC, 0).elr == []
        _, records = await read_partition(cluster, b2, TOPIC, 0)
        seen = [value for _, value in records]
        assert [v for v in seen if v.startswith(b"t2")] == acked


def test_four_brokers_min_isr_three_walkthrough():
    trio.run(four_brokers_min_isr_three_walkthrough, clock=MockClock(autojump_threshold=0))


async def last_replica_standing_with_network_cuts() -> None:
    """The KIP's telling, on trio's clock (the session timeout is the point): T0/T1 the
    followers are cut off by the network (fenced by the session timeout), T2 the leader shuts
    down uncleanly, T3 the network heals and the ELR member is elected, T4 the old leader restarts
    as a follower."""
    async with open_cluster(brokers=3, config={"min.insync.replicas": "2"}) as cluster:

        async def wait(predicate) -> None:
            await cluster.wait_until(predicate, timeout=DEADLINE)

        await cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        leader, first, second = _roles(cluster)
        await wait(lambda: len(cluster.partition(TOPIC, 0).isr) == 3)
        acked = await _trio_produce(cluster, _values("t0", 40))
        cluster.isolate(first)
        await wait(lambda: cluster.partition(TOPIC, 0).isr == [leader, second])
        acked += await _trio_produce(cluster, _values("t1", 40))
        assert len(acked) == 80
        cluster.isolate(second)
        await wait(lambda: cluster.partition(TOPIC, 0).isr == [leader])
        assert cluster.partition(TOPIC, 0).elr == [second]
        await cluster.stop_broker(leader, clean=False)
        await wait(lambda: cluster.partition(TOPIC, 0).leader == -1)
        cluster.heal()
        await wait(lambda: cluster.partition(TOPIC, 0).leader == second)
        await cluster.start_broker(leader)
        await wait(lambda: len(cluster.partition(TOPIC, 0).isr) == 3)
        _, records = await read_partition(cluster, second, TOPIC, 0)
        assert [value for _, value in records] == acked


def test_last_replica_standing_with_network_cuts():
    trio.run(last_replica_standing_with_network_cuts, clock=MockClock(autojump_threshold=0))
