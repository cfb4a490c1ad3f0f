"""Process mode: committed offsets follow a group to its new coordinator (`processes/offsets.py`).

Each broker process coordinates the groups that hash to it; when that broker stops, the group's
new coordinator (another process) serves the offsets the old one acknowledged, as Kafka's new
coordinator loads them from `__consumer_offsets`. A real consumer group resumes there, reading
each record after its last commit exactly once.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from process_clients import DEADLINE, produce, values

from kipwire.mockbroker import MockCluster

TOPIC = "resumed"
PARTITIONS = 3
RECORDS = 30


def _consumer(bootstrap: str, group: str, protocol: str = "classic") -> Consumer:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    consumer = Consumer(config)
    consumer.subscribe([TOPIC])
    return consumer


def _read_and_commit(
    bootstrap: str, group: str, at_least: int, protocol: str = "classic"
) -> list[bytes]:
    """Read at least `at_least` records (a few at a time), commit what was read, leave."""
    consumer = _consumer(bootstrap, group, protocol)
    read: list[bytes] = []
    deadline = time.monotonic() + DEADLINE
    while len(read) < at_least and time.monotonic() < deadline:
        read += [m.value() for m in consumer.consume(5, 1.0) if m.error() is None]
    consumer.commit(asynchronous=False)
    consumer.close()
    return read


def _coordinator(bootstrap: str, group: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(DEADLINE).coordinator.id


def _committed(bootstrap: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    asked = [TopicPartition(TOPIC, i) for i in range(PARTITIONS)]
    offsets = consumer.committed(asked, DEADLINE)
    consumer.close()
    return sum(max(tp.offset, 0) for tp in offsets)


def _fill(cluster: MockCluster) -> None:
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    assert produce(cluster.bootstrap_servers, TOPIC, RECORDS) == []


@pytest.mark.parametrize("protocol", ["classic", "consumer"])  # consumer: KIP-848
def test_a_group_resumes_from_its_commits_when_its_coordinators_broker_stops(protocol):
    with MockCluster(brokers=3, processes=True) as cluster:
        bootstrap = cluster.bootstrap_servers
        _fill(cluster)
        first = _read_and_commit(bootstrap, "moving", RECORDS // 2, protocol)
        assert RECORDS // 2 <= len(first) < RECORDS
        old = _coordinator(bootstrap, "moving")
        cluster.stop_broker(old, clean=False)
        assert _coordinator(bootstrap, "moving") != old
        # OffsetFetch on the new coordinator: every acknowledged commit
        assert _committed(bootstrap, "moving") == len(first)
        rest = _read_and_commit(bootstrap, "moving", RECORDS - len(first), protocol)
        assert sorted(first + rest) == values(RECORDS)  # none read twice, none skipped


def test_log_dirs_keep_the_last_coordinators_commits(tmp_path):
    config = {"log.dirs": str(tmp_path)}
    with MockCluster(brokers=3, processes=True, config=config) as cluster:
        bootstrap = cluster.bootstrap_servers
        _fill(cluster)
        first = _read_and_commit(bootstrap, "kept", RECORDS // 2)
        cluster.stop_broker(_coordinator(bootstrap, "kept"), clean=False)
        rest = _read_and_commit(bootstrap, "kept", RECORDS - len(first))
    assert sorted(first + rest) == values(RECORDS)
    # the first coordinator is back with the others: it serves the commits its successor took
    with MockCluster(brokers=3, processes=True, config=config) as cluster:
        assert _committed(cluster.bootstrap_servers, "kept") == RECORDS
    assert [p.name for p in tmp_path.glob("group-offsets*")] == ["group-offsets.json"]
