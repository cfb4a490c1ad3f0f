"""Produce then consume with each real client library, configured by `cluster.client_config`."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time

from kipwire.mockbroker import MockCluster

DEADLINE = 30.0
KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def with_confluent(cluster: MockCluster, user: str, topic: str, values: list[bytes], **kw) -> list:
    """Values consumed back after producing them with confluent-kafka."""
    from confluent_kafka import Consumer, KafkaError, Producer

    config = cluster.client_config(user, **kw)
    producer = Producer(config)
    failures: list = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda e, m: e and failures.append(e))
    assert producer.flush(DEADLINE) == 0 and failures == []
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: list = []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(seen) < len(values) and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    seen.append(message.value())
                elif message.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(message.error())
    finally:
        consumer.close()
    return seen


def with_kafka_python(
    cluster: MockCluster, user: str, topic: str, values: list[bytes], **kw
) -> list:
    """Values consumed back after producing them with kafka-python."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    config = cluster.client_config(user, library="kafka-python", **kw)
    producer = KafkaProducer(**config)
    for value in values:
        producer.send(topic, value)
    producer.flush(DEADLINE)
    producer.close()
    consumer = KafkaConsumer(**config, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0)])
    seen: list = []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(seen) < len(values) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                seen += [r.value for r in records]
    finally:
        consumer.close()
    return seen


def with_aiokafka(cluster: MockCluster, user: str, topic: str, values: list[bytes], **kw) -> list:
    """Values consumed back after producing them with aiokafka."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    config = cluster.client_config(user, library="aiokafka", **kw)

    async def run() -> list:
        producer = AIOKafkaProducer(**config)
        await producer.start()
        try:
            for value in values:
                await producer.send(topic, value)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**config, auto_offset_reset="earliest")
        await consumer.start()
        seen: list = []
        try:
            consumer.assign([TopicPartition(topic, 0)])
            async with asyncio.timeout(DEADLINE):
                while len(seen) < len(values):
                    batches = await consumer.getmany(timeout_ms=200)
                    seen += [r.value for records in batches.values() for r in records]
        finally:
            await consumer.stop()
        return seen

    return asyncio.run(run())


def with_kcat(cluster: MockCluster, user: str, topic: str, values: list[bytes], **kw) -> list:
    """Values consumed back after producing them with kcat (`-X` settings)."""
    assert KCAT is not None
    config = cluster.client_config(user, **kw)
    settings = [
        a for k, v in config.items() if k != "bootstrap.servers" for a in ("-X", f"{k}={v}")
    ]
    base = [KCAT, "-b", config["bootstrap.servers"], *settings, "-t", topic]
    text = "\n".join(v.decode() for v in values) + "\n"
    subprocess.run(
        [*base, "-P"], input=text, text=True, check=True, timeout=DEADLINE, capture_output=True
    )
    done = subprocess.run(
        [*base, "-C", "-o", "beginning", "-e", "-q"],
        capture_output=True,
        text=True,
        check=True,
        timeout=DEADLINE,
    )
    return [line.encode() for line in done.stdout.split()]


LIBRARIES = {
    "confluent-kafka": with_confluent,
    "kafka-python": with_kafka_python,
    "aiokafka": with_aiokafka,
    "kcat": with_kcat,
}
