"""confluent-kafka's ShareConsumer (librdkafka's KIP-932 preview) against the mock: explicit
acknowledgements (a RELEASE comes back with delivery count 2, a REJECT never does) and two
consumers of one share group splitting a partition's records with none delivered twice."""

from __future__ import annotations

import time

import pytest

from kipwire.mockbroker import MockCluster

confluent_kafka = pytest.importorskip("confluent_kafka")
if not hasattr(confluent_kafka, "ShareConsumer"):
    pytest.skip("this confluent-kafka release has no ShareConsumer", allow_module_level=True)

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

DEADLINE_S = 30


@pytest.fixture(scope="module")
def cluster():
    with MockCluster(brokers=3, config={"group.share.heartbeat.interval.ms": "1000"}) as running:
        yield running


def _earliest(cluster: MockCluster, group: str, **more: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    configs = {"share.auto.offset.reset": "earliest", **more}
    entries = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()
    ]
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(timeout=10)


def _produce(cluster: MockCluster, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value, partition=0)
        assert producer.flush(10) == 0  # one batch per record


def _consumer(cluster: MockCluster, group: str, mode: str, max_records: int = 500) -> ShareConsumer:
    return ShareConsumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "share.acknowledgement.mode": mode,
            "max.poll.records": max_records,
        }
    )


def test_release_comes_back_reject_does_not(cluster):
    cluster.create_topic("ck-acks", partitions=1, replication_factor=2)
    _earliest(cluster, "ck-acks-group")
    _produce(cluster, "ck-acks", [b"keep", b"again", b"drop"])
    consumer = _consumer(cluster, "ck-acks-group", "explicit")
    consumer.subscribe(["ck-acks"])
    seen: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + DEADLINE_S
    while (b"again", 2) not in seen and time.monotonic() < deadline:
        for message in consumer.poll(0.5) or []:
            assert message.error() is None
            seen.append((message.value(), message.delivery_count()))
            if message.value() == b"again" and message.delivery_count() == 1:
                consumer.acknowledge(message, AcknowledgeType.RELEASE)
            elif message.value() == b"drop":
                consumer.acknowledge(message, AcknowledgeType.REJECT)
            else:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        consumer.commit_sync()
    for message in consumer.poll(1.5) or []:
        seen.append((message.value(), message.delivery_count()))
        consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    consumer.close()
    assert sorted(seen) == [(b"again", 1), (b"again", 2), (b"drop", 1), (b"keep", 1)]


def test_two_consumers_split_a_partition(cluster):
    cluster.create_topic("ck-two", partitions=1, replication_factor=2)
    _earliest(cluster, "ck-two-group")
    values = [f"r{i}".encode() for i in range(20)]
    _produce(cluster, "ck-two", values)
    # a few records per fetch, so that the first consumer leaves records for the second
    consumers = [_consumer(cluster, "ck-two-group", "implicit", max_records=3) for _ in range(2)]
    for consumer in consumers:
        consumer.subscribe(["ck-two"])
    delivered: list[tuple[int, bytes, int]] = []
    deadline = time.monotonic() + DEADLINE_S
    turn = 0
    while len({v for _, v, _ in delivered}) < len(values) and time.monotonic() < deadline:
        who = turn % 2
        for message in consumers[who].poll(0.3) or []:
            assert message.error() is None
            delivered.append((who, message.value(), message.delivery_count()))
        turn += 1
    for consumer in consumers:
        consumer.close()
    assert sorted(v for _, v, _ in delivered) == sorted(values)  # every record, once
    assert {count for _, _, count in delivered} == {1}
    assert {who for who, _, _ in delivered} == {0, 1}  # both consumers got records


def test_read_committed_never_delivers_an_aborted_transaction(cluster):
    cluster.create_topic("ck-txn", partitions=1, replication_factor=2)
    _earliest(cluster, "ck-txn-group", **{"share.isolation.level": "read_committed"})
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "ck-txn-producer"}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("ck-txn", b"aborted", partition=0)
    producer.flush(10)
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce("ck-txn", b"committed", partition=0)
    producer.commit_transaction(10)
    consumer = _consumer(cluster, "ck-txn-group", "implicit")
    consumer.subscribe(["ck-txn"])
    seen: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while b"committed" not in seen and time.monotonic() < deadline:
        seen.extend(m.value() for m in consumer.poll(0.5) or [] if m.error() is None)
    seen.extend(m.value() for m in consumer.poll(1.0) or [] if m.error() is None)
    consumer.close()
    assert seen == [b"committed"]
