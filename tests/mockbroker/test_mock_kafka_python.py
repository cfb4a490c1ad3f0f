"""kafka-python 3.0.12 with default settings (no api_version pin) against the mock cluster."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import (
    KafkaAdminClient,
    KafkaConsumer,
    KafkaProducer,
    OffsetAndMetadata,
    TopicPartition,
)
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError

DEADLINE = 30.0


def _subscribed(cluster, topic: str, **settings) -> KafkaConsumer:
    """A consumer that has the topic's metadata before it joins its group.

    kafka-python 3.0.12's group leader can stall after assigning a topic it had no metadata
    for yet (then rejoining); knowing the partitions first avoids that client-side race.
    """
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, **settings)
    deadline = time.monotonic() + DEADLINE
    while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
        time.sleep(0.05)
    consumer.subscribe([topic])
    return consumer


def _read(consumer: KafkaConsumer, count: int) -> list:
    seen = []
    deadline = time.monotonic() + DEADLINE
    while len(seen) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            seen.extend(records)
    return seen


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_every_compression(cluster, topic_name, compression):
    cluster.create_topic(topic_name, partitions=2, replication_factor=3)
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, compression_type=compression
    )
    values = [b"value-%d" % i * 3 for i in range(200)]
    for value in values:
        producer.send(topic_name, value, key=value[-3:])
    producer.flush(DEADLINE)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
    )
    consumer.assign([TopicPartition(topic_name, p) for p in range(2)])
    try:
        seen = _read(consumer, len(values))
    finally:
        consumer.close()
    assert sorted(r.value for r in seen) == sorted(values)


def test_committed_offsets_survive_a_consumer_restart(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    for i in range(10):
        producer.send(topic_name, b"%d" % i)
    producer.flush(DEADLINE)
    producer.close()
    group = f"restart-{topic_name}"
    first = _subscribed(
        cluster,
        topic_name,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=4,
    )
    got = _read(first, 4)[:4]
    first.commit({TopicPartition(topic_name, 0): OffsetAndMetadata(got[-1].offset + 1, "", -1)})
    first.close()
    second = _subscribed(cluster, topic_name, group_id=group, auto_offset_reset="earliest")
    try:
        rest = _read(second, 6)
    finally:
        second.close()
    assert [r.value for r in got] == [b"0", b"1", b"2", b"3"]
    assert [r.value for r in rest] == [b"%d" % i for i in range(4, 10)]


def test_three_member_group_rebalances_when_one_leaves(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=6, replication_factor=3)
    group = f"three-{topic_name}"
    consumers = [_subscribed(cluster, topic_name, group_id=group) for _ in range(3)]
    stop = threading.Event()
    leaving = threading.Event()

    def poll(consumer: KafkaConsumer, index: int) -> None:
        while not stop.is_set():
            if index == 0 and leaving.is_set():
                consumer.close()
                return
            consumer.poll(timeout_ms=50)

    threads = [threading.Thread(target=poll, args=(c, i)) for i, c in enumerate(consumers)]
    for thread in threads:
        thread.start()
    try:

        def assigned(members: list[KafkaConsumer]) -> list[set]:
            return [set(c.assignment()) for c in members]

        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            parts = assigned(consumers)
            if all(len(p) == 2 for p in parts) and len(set().union(*parts)) == 6:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"3 members never shared 6 partitions: {assigned(consumers)}")
        leaving.set()
        threads[0].join(DEADLINE)
        rest = consumers[1:]
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            parts = assigned(rest)
            if all(len(p) == 3 for p in parts) and len(set().union(*parts)) == 6:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"2 members never took over 6 partitions: {assigned(rest)}")
    finally:
        stop.set()
        for thread in threads:
            thread.join(DEADLINE)
        for consumer in consumers[1:]:
            consumer.close()


def test_admin_create_describe_configs_and_delete(cluster, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics(
            [NewTopic(topic_name, 3, 3, topic_configs={"cleanup.policy": "compact"})]
        )
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(topic_name, 1, 1)])
        assert topic_name in admin.list_topics()
        (described,) = admin.describe_topics([topic_name])
        assert len(described["partitions"]) == 3
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name)])
        assert configs["topic"][topic_name]["cleanup.policy"]["value"] == "compact"
        admin.delete_topics([topic_name])
        assert topic_name not in admin.list_topics()
    finally:
        admin.close()
