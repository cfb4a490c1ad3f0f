"""ListOffsets by time, as a plain function of a cluster's bootstrap servers: records with known
timestamps produced in one batch or several (CreateTime), or stamped by the broker
(LogAppendTime), then asked for by time through librdkafka and kafka-python, and for
MAX_TIMESTAMP through librdkafka's list_offsets. The same function runs against real Kafka and
against kipwire's MockCluster (tests/realkafka/test_differential_timestamps.py).

Every loop here is bounded by a deadline.
"""

from __future__ import annotations

import time
from typing import Any

from scenario_kit import admin_client, create_topic, unique

BASE = 1_700_000_000_000
#: seconds after BASE, out of order: the largest timestamp is not the last record's
SECONDS = (0, 1, 2, 3, 4, 5, 6, 9, 7, 8)
#: the times asked for, as offsets from BASE in ms (before, at, between, after the records)
QUERIES = (-1, 0, 4500, 5000, 7000, 9000, 10_000)
TIMEOUT_S = 30.0


def _produce(bootstrap: str, topic: str, timestamps: list[int | None], batches: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000, "log_level": 0})
    per_batch = -(-len(timestamps) // batches)
    for start in range(0, len(timestamps), per_batch):
        for ts in timestamps[start : start + per_batch]:
            producer.produce(topic, b"v", timestamp=ts or 0)
        assert producer.flush(TIMEOUT_S) == 0


def _by_time(bootstrap: str, topic: str, ts: int) -> tuple[int, int | None]:
    """(librdkafka's offset, kafka-python's offset) for a time; kafka-python says None past
    the end, librdkafka -1."""
    from confluent_kafka import Consumer, TopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as PyTopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ts", "log_level": 0})
    try:
        (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=TIMEOUT_S)
    finally:
        consumer.close()
    other = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        answer = other.offsets_for_times({PyTopicPartition(topic, 0): ts})[
            PyTopicPartition(topic, 0)
        ]
    finally:
        other.close()
    return found.offset, None if answer is None else answer.offset


def _answer_time(bootstrap: str, topic: str, ts: int) -> int:
    """The timestamp kafka-python's offsets_for_times answers with (-1 past the end)."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as PyTopicPartition

    other = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        answer = other.offsets_for_times({PyTopicPartition(topic, 0): ts})[
            PyTopicPartition(topic, 0)
        ]
    finally:
        other.close()
    return -1 if answer is None else answer.timestamp


def _max_timestamp(bootstrap: str, topic: str) -> tuple[int, int]:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    tp = TopicPartition(topic, 0)
    admin = admin_client(bootstrap)  # held until the answer is in: the future needs its client
    answer = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(TIMEOUT_S)
    return answer.offset, answer.timestamp


def create_time_offsets(bootstrap: str, batches: int) -> dict[str, Any]:
    """Ten CreateTime records over `batches` batches; each query's offsets and timestamp, and
    MAX_TIMESTAMP's offset and timestamp (relative to BASE)."""
    topic = create_topic(bootstrap, unique("ts-create"))
    _produce(bootstrap, topic, [BASE + s * 1000 for s in SECONDS], batches)
    by_time = {}
    for query in QUERIES:
        offsets = _by_time(bootstrap, topic, BASE + query)
        found = _answer_time(bootstrap, topic, BASE + query)
        by_time[query] = (*offsets, found - BASE if found >= 0 else -1)
    offset, ts = _max_timestamp(bootstrap, topic)
    return {"by_time": by_time, "max_timestamp": (offset, ts - BASE)}


def log_append_time_offsets(bootstrap: str) -> dict[str, Any]:
    """Two batches of four records stamped by the broker: what each asked time finds, relative
    to the batches' append times."""
    topic = create_topic(
        bootstrap, unique("ts-append"), config={"message.timestamp.type": "LogAppendTime"}
    )
    before = int(time.time() * 1000)
    _produce(bootstrap, topic, [BASE + i for i in range(4)], 1)
    first = _answer_time(bootstrap, topic, before)
    deadline = time.monotonic() + 1.0
    while int(time.time() * 1000) <= first and time.monotonic() < deadline:
        pass  # the next batch is stamped a later millisecond
    _produce(bootstrap, topic, [BASE + i for i in range(4, 8)], 1)
    second = _answer_time(bootstrap, topic, first + 1)
    offset, ts = _max_timestamp(bootstrap, topic)
    return {
        "first_batch": _by_time(bootstrap, topic, before),
        "producers_time": _by_time(bootstrap, topic, BASE),
        "after_first": _by_time(bootstrap, topic, first + 1),
        "second_later": second > first >= before,
        "max_timestamp": (offset, ts == second),
    }
