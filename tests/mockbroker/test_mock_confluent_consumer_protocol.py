"""confluent-kafka (librdkafka) with `group.protocol=consumer` (KIP-848) against the mock: a
three-member group shares a topic, every record is read once, and a member's partitions move
when it leaves; regex subscriptions; and a rolling migration between the classic protocol and
the consumer protocol, both ways."""

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


def _produce(bootstrap: str, topic: str, values: list[bytes], partitions: int = PARTITIONS) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % partitions)
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


def test_a_rolling_upgrade_from_classic_to_consumer_and_back(cluster, topic_name):
    """Kafka 4's online migration: members restart one by one with the other protocol; the
    group changes kind under them and every record is still read once."""
    cluster.create_topic(topic_name, partitions=4, replication_factor=3)
    group = f"g-{topic_name}"
    groups = cluster.cluster
    seen: dict[int, list[bytes]] = {}
    batches: list[bytes] = []

    def read_a_batch(members: list[Consumer], tag: bytes) -> None:
        batch = [b"%s-%d" % (tag, i) for i in range(100)]
        batches.extend(batch)
        _produce(cluster.bootstrap_servers, topic_name, batch, partitions=4)
        _poll_until(members, lambda: sum(map(len, seen.values())) >= len(batches), seen)

    def settled(members: list[Consumer]) -> bool:
        return all(len(_partitions(m)) == 4 // len(members) for m in members)

    old = [_consumer(cluster.bootstrap_servers, group, **{"group.protocol": "classic"})]
    old.append(_consumer(cluster.bootstrap_servers, group, **{"group.protocol": "classic"}))
    for member in old:
        member.subscribe([topic_name])
    _poll_until(old, lambda: settled(old), seen)
    read_a_batch(old, b"classic")

    old.pop(0).close()
    new = [_consumer(cluster.bootstrap_servers, group)]
    new[0].subscribe([topic_name])
    # the consumer-protocol member turned the classic group into a consumer group
    _poll_until(new + old, lambda: settled(new + old), seen)
    assert groups.consumer_groups.group(group) is not None and groups.groups.group(group) is None
    read_a_batch(new + old, b"mixed")

    old.pop().close()
    new.append(_consumer(cluster.bootstrap_servers, group))
    new[1].subscribe([topic_name])
    _poll_until(new, lambda: settled(new), seen)
    read_a_batch(new, b"upgraded")

    # and back: a classic member joins, the consumer-protocol members leave
    old.append(_consumer(cluster.bootstrap_servers, group, **{"group.protocol": "classic"}))
    old[0].subscribe([topic_name])
    _poll_until(new + old, lambda: len(_partitions(old[0])) > 0, seen)
    for member in new:
        member.close()
    _poll_until(old, lambda: settled(old), seen)
    assert groups.groups.group(group) is not None and groups.consumer_groups.group(group) is None
    read_a_batch(old, b"downgraded")
    old[0].close()
    assert sorted(v for values in seen.values() for v in values) == sorted(batches)
