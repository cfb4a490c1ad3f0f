"""Real clients (confluent-kafka) for the process-mode tests: produce and consume with bounded
waits, optionally with a secured client's settings."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer

#: Every feature test runs in both modes where a cluster start is cheap enough.
MODES = [pytest.param(False, id="in-process"), pytest.param(True, id="processes")]
DEADLINE = 60.0


def produce(bootstrap: str, topic: str, count: int, extra: dict | None = None) -> list:
    """Produce `count` records `value-<i>` with acks=all; the error codes of failed deliveries."""
    config = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}
    producer = Producer({**config, "message.timeout.ms": 20000, **(extra or {})})
    failures: list = []
    for i in range(count):
        producer.produce(
            topic,
            b"value-%d" % i,
            key=b"%d" % i,
            on_delivery=lambda error, _: error and failures.append(error.code()),
        )
    assert producer.flush(30) == 0
    return failures


def consume(bootstrap: str, topic: str, count: int, extra: dict | None = None) -> list[bytes]:
    """Up to `count` values from the start of `topic`, read by a new group."""
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": f"g-{topic}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    consumer = Consumer({**config, **(extra or {})})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + DEADLINE
    while len(values) < count and time.monotonic() < deadline:
        for message in consumer.consume(100, 1.0):
            if message.error() is None:
                values.append(message.value())
    consumer.close()
    return values


def values(count: int) -> list[bytes]:
    """What `produce` writes, sorted."""
    return sorted(b"value-%d" % i for i in range(count))


def produce_in_transaction(bootstrap: str, topic: str, count: int) -> None:
    """Produce `count` records `value-<i>` over every partition in one committed transaction."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, b"value-%d" % i, key=b"%d" % i)
    producer.commit_transaction(30)
