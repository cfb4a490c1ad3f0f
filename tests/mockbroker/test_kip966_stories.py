"""KIP-966's stories end to end: a confluent-kafka idempotent producer (acks=all) against a
replicating mock cluster, brokers stopped and restarted, the data checked afterwards."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kipwire.mockbroker import MockCluster

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
