"""aiokafka (asyncio) with default settings against the mock cluster (run in its thread)."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

DEADLINE = 30.0


async def _produce_and_consume(bootstrap: str, topic: str, values: list[bytes]) -> list[bytes]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for value in values:
            await producer.send(topic, value)
        await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(3)])
        seen: list[bytes] = []
        async with asyncio.timeout(DEADLINE):
            while len(seen) < len(values):
                batches = await consumer.getmany(timeout_ms=200)
                seen += [r.value for records in batches.values() for r in records]
        return seen
    finally:
        await consumer.stop()


async def _group_commit(bootstrap: str, topic: str) -> int | None:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"a-{topic}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        async with asyncio.timeout(DEADLINE):
            records = []
            while not records:
                batches = await consumer.getmany(timeout_ms=200)
                records = [r for rs in batches.values() for r in rs]
            await consumer.commit()
            return await consumer.committed(TopicPartition(topic, records[0].partition))
    finally:
        await consumer.stop()


def test_aiokafka_produces_and_consumes(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=3, replication_factor=3)
    values = [b"aio-%d" % i for i in range(150)]
    seen = asyncio.run(_produce_and_consume(cluster.bootstrap_servers, topic_name, values))
    assert sorted(seen) == sorted(values)


def test_aiokafka_group_commits_offsets(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=1, replication_factor=3)
    asyncio.run(_produce_and_consume_one(cluster.bootstrap_servers, topic_name))
    committed = asyncio.run(_group_commit(cluster.bootstrap_servers, topic_name))
    assert committed == 5


async def _produce_and_consume_one(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(5):
            await producer.send_and_wait(topic, b"%d" % i)
    finally:
        await producer.stop()
