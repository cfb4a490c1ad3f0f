"""ListOffsets by time is exact, as Kafka's: the first record at or after the time and, for
MAX_TIMESTAMP, the first record with the largest timestamp, record by record, whether the records
share one batch or spread over several, with CreateTime or LogAppendTime. Real clients ask
(librdkafka's offsets_for_times and list_offsets, kafka-python's offsets_for_times)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPythonTopicPartition

from kipwire.mockbroker import MockCluster

DEADLINE = 30.0
BASE = 1_700_000_000_000  # ms: ten records at BASE + 0 s .. BASE + 9 s


def _produce(cluster: MockCluster, topic: str, timestamps: list[int], batches: int) -> None:
    """One record per timestamp, in `batches` batches (a flush ends a batch)."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 1000})
    per_batch = -(-len(timestamps) // batches)
    for start in range(0, len(timestamps), per_batch):
        for ts in timestamps[start : start + per_batch]:
            producer.produce(topic, b"v%d" % ts, timestamp=ts)
        assert producer.flush(DEADLINE) == 0


def _batch_count(cluster: MockCluster, topic: str) -> int:
    return cluster._in_trio(lambda: len(cluster.cluster.logs[(topic, 0)].batches))


def _offset_for(cluster: MockCluster, topic: str, ts: int) -> tuple[int, int]:
    """(offset, timestamp) librdkafka's offsets_for_times and kafka-python's agree on."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "t"})
    try:
        (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=DEADLINE)
    finally:
        consumer.close()
    other = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        answer = other.offsets_for_times({KafkaPythonTopicPartition(topic, 0): ts})
    finally:
        other.close()
    both = answer[KafkaPythonTopicPartition(topic, 0)]
    assert both is None or both.offset == found.offset
    return found.offset, -1 if both is None else both.timestamp


def _max_timestamp(cluster: MockCluster, topic: str) -> tuple[int, int]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    tp = TopicPartition(topic, 0)
    result = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(DEADLINE)
    return result.offset, result.timestamp


@pytest.mark.parametrize("batches", [1, 3, 10])
def test_create_time_offsets_are_exact_over_any_batching(cluster, topic_name, batches):
    cluster.create_topic(topic_name, partitions=1)
    # out of order on purpose: the largest timestamp is not the last record
    timestamps = [BASE + s * 1000 for s in (0, 1, 2, 3, 4, 5, 6, 9, 7, 8)]
    _produce(cluster, topic_name, timestamps, batches)
    assert _batch_count(cluster, topic_name) == batches
    assert _offset_for(cluster, topic_name, BASE + 5000) == (5, BASE + 5000)
    assert _offset_for(cluster, topic_name, BASE + 4500) == (5, BASE + 5000)
    assert _offset_for(cluster, topic_name, BASE) == (0, BASE)
    # 7 s: the first record at or after it is offset 7 (9 s), not the later 7 s record
    assert _offset_for(cluster, topic_name, BASE + 7000) == (7, BASE + 9000)
    assert _offset_for(cluster, topic_name, BASE + 10_000)[0] in (-1, 10)  # none: the end
    assert _max_timestamp(cluster, topic_name) == (7, BASE + 9000)


def test_log_append_time_offsets_follow_the_brokers_clock(cluster, topic_name):
    config = {"message.timestamp.type": "LogAppendTime"}
    cluster.create_topic(topic_name, partitions=1, config=config)
    before = int(time.time() * 1000)
    _produce(cluster, topic_name, [BASE + i for i in range(4)], 1)
    offset, first = _offset_for(cluster, topic_name, before)
    assert offset == 0 and first >= before
    # the second batch must be stamped later than the first: the next millisecond, at most 1 s
    deadline = time.monotonic() + 1.0
    while int(time.time() * 1000) <= first and time.monotonic() < deadline:
        pass
    middle = int(time.time() * 1000)
    assert middle > first
    _produce(cluster, topic_name, [BASE + i for i in range(4, 8)], 1)
    assert _batch_count(cluster, topic_name) == 2
    offset, stamped = _offset_for(cluster, topic_name, middle)
    assert offset == 4 and stamped >= middle  # a batch's records share its append time
    assert _offset_for(cluster, topic_name, BASE)[0] == 0  # the producer's times are ignored
    assert _max_timestamp(cluster, topic_name) == (4, stamped)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": topic_name,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic_name])
    try:
        deadline = time.monotonic() + DEADLINE
        seen = []
        while len(seen) < 8 and time.monotonic() < deadline:
            seen += [m for m in consumer.consume(8, 0.5) if m.error() is None]
    finally:
        consumer.close()
    kinds = {m.timestamp()[0] for m in seen}
    assert len(seen) == 8 and kinds == {2}  # TIMESTAMP_LOG_APPEND_TIME
