"""confluent-kafka (librdkafka), unmodified defaults, against the mock cluster."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

DEADLINE = 30.0


def _consume(bootstrap: str, topic: str, count: int, **config) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            **config,
        }
    )
    consumer.subscribe([topic])
    seen = []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(seen) < count and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    seen.append(message)
                elif message.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(message.error())
    finally:
        consumer.close()
    return seen


def _produce(producer: Producer, topic: str, values: list[bytes], **kwargs) -> None:
    failures = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda e, m: e and failures.append(e), **kwargs)
    assert producer.flush(DEADLINE) == 0
    assert failures == []


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_every_compression(cluster, topic_name, compression):
    cluster.create_topic(topic_name, partitions=3, replication_factor=3)
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "compression.type": compression}
    )
    values = [b"%s-%d" % (compression.encode(), i) * 5 for i in range(300)]
    _produce(producer, topic_name, values)
    seen = _consume(cluster.bootstrap_servers, topic_name, len(values))
    assert sorted(m.value() for m in seen) == sorted(values)
    # per partition, offsets are dense from 0 and values keep their production order
    by_partition: dict[int, list] = {}
    for m in seen:
        by_partition.setdefault(m.partition(), []).append(m.offset())
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))


def test_auto_created_topic_on_produce(cluster, topic_name):
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    _produce(producer, topic_name, [b"auto"])
    assert cluster.partition(topic_name, 0).leader in (1, 2, 3)


def test_idempotent_producer_writes_each_record_once(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=2, replication_factor=3)
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True}
    )
    values = [b"i%d" % i for i in range(1000)]
    _produce(producer, topic_name, values)
    seen = _consume(cluster.bootstrap_servers, topic_name, len(values))
    assert sorted(m.value() for m in seen) == sorted(values)


def test_transactions_with_read_committed_never_show_an_aborted_record(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=2, replication_factor=3)
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": f"tx-{topic_name}"}
    )
    producer.init_transactions(DEADLINE)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic_name, f"{outcome}-{i}".encode())
        # flushed first: abort_transaction would otherwise purge records never sent
        assert producer.flush(DEADLINE) == 0
        if outcome == "commit":
            producer.commit_transaction(DEADLINE)
        else:
            producer.abort_transaction(DEADLINE)
    committed = _consume(
        cluster.bootstrap_servers, topic_name, 20, **{"isolation.level": "read_committed"}
    )
    values = [m.value() for m in committed]
    assert len(values) == 20
    assert all(v.startswith(b"commit-") for v in values)
    # read_uncommitted sees the aborted records too (the markers are never returned)
    everything = _consume(
        cluster.bootstrap_servers,
        topic_name,
        30,
        **{"isolation.level": "read_uncommitted", "group.id": f"u-{topic_name}"},
    )
    assert sum(m.value().startswith(b"abort-") for m in everything) == 10


def test_admin_create_describe_alter_and_delete(cluster, topic_name):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    created = admin.create_topics([NewTopic(topic_name, 4, 3, config={"retention.ms": "1000"})])
    created[topic_name].result(DEADLINE)
    assert cluster.partition(topic_name, 3).replicas != []
    duplicate = admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name]
    with pytest.raises(Exception) as err:
        duplicate.result(DEADLINE)
    assert err.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic_name,
        incremental_configs=[
            ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(DEADLINE)
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name)])
    configs = next(iter(described.values())).result(DEADLINE)
    assert configs["min.insync.replicas"].value == "2"
    assert configs["retention.ms"].value == "1000"
    topics = admin.describe_topics(TopicCollection([topic_name]))[topic_name].result(DEADLINE)
    assert len(topics.partitions) == 4
    assert {p.leader.id for p in topics.partitions} <= {1, 2, 3}
    admin.delete_topics([topic_name])[topic_name].result(DEADLINE)
    assert topic_name not in admin.list_topics(timeout=DEADLINE).topics


def test_list_offsets_and_committed_offsets(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    _produce(producer, topic_name, [b"x"] * 7)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": topic_name})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic_name, 0), DEADLINE)
        assert (low, high) == (0, 7)
        consumer.commit(offsets=[TopicPartition(topic_name, 0, 5)], asynchronous=False)
        (committed,) = consumer.committed([TopicPartition(topic_name, 0)], DEADLINE)
        assert committed.offset == 5
    finally:
        consumer.close()


def test_admin_partitions_records_cluster_and_groups(cluster, topic_name):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(DEADLINE)
    assert cluster.partition(topic_name, 2).leader in (1, 2, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    _produce(producer, topic_name, [b"d"] * 5, partition=0)
    deleted = admin.delete_records([TopicPartition(topic_name, 0, 3)])
    assert next(iter(deleted.values())).result(DEADLINE).low_watermark == 3
    described = admin.describe_cluster().result(DEADLINE)
    assert sorted(n.id for n in described.nodes) == [1, 2, 3]
    group = f"admin-{topic_name}"
    seen = _consume(cluster.bootstrap_servers, topic_name, 2, **{"group.id": group})
    assert [m.offset() for m in seen] == [3, 4]
    listed = admin.list_consumer_groups().result(DEADLINE)
    assert group in {g.group_id for g in listed.valid}
    info = admin.describe_consumer_groups([group])[group].result(DEADLINE)
    assert info.group_id == group and info.members == []
    admin.delete_consumer_groups([group])[group].result(DEADLINE)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(DEADLINE).valid}
