"""confluent-kafka (librdkafka) with `group.protocol=consumer` (KIP-848) against the mock: a
three-member group shares a topic, every record is read once, and a member's partitions move
when it leaves."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, libversion
from confluent_kafka.admin import AdminClient

DEADLINE = 30.0
PARTITIONS = 6

pytestmark = pytest.mark.skipif(
    libversion()[1] < 0x020C0000, reason="librdkafka 2.12+ speaks KIP-848 (group.protocol)"
)


def _consumer(bootstrap: str, group: str, **config) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            **config,
        }
    )


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % PARTITIONS)
    assert producer.flush(DEADLINE) == 0


def _poll_until(consumers: list[Consumer], done, seen: dict[int, list[bytes]]) -> None:
    """Poll every consumer in turn, keeping what each reads, until `done()` or the deadline."""
    deadline = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < deadline, "the group did not get there in time"
        for number, consumer in enumerate(consumers):
            for message in consumer.consume(100, 0.05):
                if message.error() is None:
                    seen.setdefault(number, []).append(message.value())
                else:
                    assert message.error().code() == KafkaError._PARTITION_EOF, message.error()


def _partitions(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def test_three_members_share_a_topic_and_a_leaving_member_hands_over(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=PARTITIONS, replication_factor=3)
    group = f"g-{topic_name}"
    consumers = [_consumer(cluster.bootstrap_servers, group) for _ in range(3)]
    for consumer in consumers:
        consumer.subscribe([topic_name])
    seen: dict[int, list[bytes]] = {}
    try:
        # the uniform assignor gives each of three members two of the six partitions
        _poll_until(consumers, lambda: all(len(_partitions(c)) == 2 for c in consumers), seen)
        owned = [_partitions(c) for c in consumers]
        assert set().union(*owned) == set(range(PARTITIONS))

        described = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        result = described.describe_consumer_groups([group])[group].result(DEADLINE)
        assert len(result.members) == 3
        assert str(result.type).endswith("CONSUMER")

        first = [b"first-%d" % i for i in range(600)]
        _produce(cluster.bootstrap_servers, topic_name, first)
        _poll_until(consumers, lambda: sum(map(len, seen.values())) >= len(first), seen)
        assert sorted(v for values in seen.values() for v in values) == sorted(first)
        assert all(len(seen.get(n, [])) == 200 for n in range(3))  # 2 partitions x 100 each

        consumers.pop().close()  # leaves the group (member epoch -1), committing first
        survivors = consumers
        _poll_until(
            survivors,
            lambda: _partitions(survivors[0]) | _partitions(survivors[1]) == set(range(PARTITIONS)),
            seen,
        )
        assert not _partitions(survivors[0]) & _partitions(survivors[1])
        seen.clear()
        second = [b"second-%d" % i for i in range(300)]
        _produce(cluster.bootstrap_servers, topic_name, second)
        _poll_until(survivors, lambda: sum(map(len, seen.values())) >= len(second), seen)
        # the leaver's committed offsets hold: nothing of the first batch is read again
        assert sorted(v for values in seen.values() for v in values) == sorted(second)
    finally:
        for consumer in consumers:
            consumer.close()


def test_a_regex_subscription_picks_up_a_new_topic(cluster, topic_name):
    cluster.create_topic(f"{topic_name}-a", partitions=2)
    cluster.create_topic(f"other-{topic_name}", partitions=1)
    consumer = _consumer(cluster.bootstrap_servers, f"g-{topic_name}")
    # librdkafka sends a subscription starting with ^ as SubscribedTopicRegex, resolved by the
    # coordinator against every topic
    consumer.subscribe([f"^{topic_name}-.*"])
    try:
        topics = lambda: {(tp.topic, tp.partition) for tp in consumer.assignment()}  # noqa: E731
        _poll_until([consumer], lambda: len(topics()) == 2, {})
        assert topics() == {(f"{topic_name}-a", 0), (f"{topic_name}-a", 1)}
        cluster.create_topic(f"{topic_name}-b", partitions=1)
        _poll_until([consumer], lambda: len(topics()) == 3, {})
        assert (f"{topic_name}-b", 0) in topics()
    finally:
        consumer.close()
