"""The replay tests' story and read-back, with confluent-kafka (`conftest.py` records it once).

The story: admin calls (CreateTopics, DescribeConfigs), an idempotent producer, a transactional
producer, and a consumer group that commits what it reads. `held` reads back every committed
record of some topics, per partition, as a cluster holds them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import confluent_kafka as ck
from confluent_kafka import admin as admin_mod

TOPIC, AUDIT = "orders", "audit"
#: the story's topics and their partition counts
TOPICS = ((TOPIC, 2), (AUDIT, 1))
RECORDS = 20
TIMEOUT = 30.0


def story(bootstrap: str) -> int:
    """Run the story's clients; returns how many records the consumer read."""
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap, "client.id": "app-admin"})
    for future in admin.create_topics([admin_mod.NewTopic(AUDIT, 1, 1)]).values():
        future.result(TIMEOUT)
    resource = admin_mod.ConfigResource("topic", TOPIC)
    admin.describe_configs([resource])[resource].result(TIMEOUT)
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "app-producer",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    for i in range(RECORDS):
        producer.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, headers=[("seq", b"%d" % i)])
        if i % 5 == 4:  # several Produce requests per partition, acknowledged one by one
            assert producer.flush(TIMEOUT) == 0
    txn = ck.Producer(
        {"bootstrap.servers": bootstrap, "client.id": "app-txn", "transactional.id": "txn-1"}
    )
    txn.init_transactions(TIMEOUT)
    txn.begin_transaction()
    for i in range(5):
        txn.produce(AUDIT, key=b"t%d" % i, value=b"tv%d" % i)
    txn.commit_transaction(TIMEOUT)
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "app-reader",
            "group.id": "app-1",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    read, deadline = 0, time.monotonic() + TIMEOUT
    try:
        while read < RECORDS and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            read += 1
            consumer.commit(msg, asynchronous=False)
    finally:
        consumer.close()
    return read


def held(
    bootstrap: str, topics: Iterable[tuple[str, int]] = TOPICS
) -> dict[tuple[str, int], list[tuple]]:
    """Every committed record of the story's topics, per partition, as the cluster holds it."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "replay-check",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    held: dict[tuple[str, int], list[tuple]] = {}
    try:
        for topic, partitions in topics:
            for p in range(partitions):
                low, high = consumer.get_watermark_offsets(
                    ck.TopicPartition(topic, p), timeout=TIMEOUT
                )
                got: list[tuple] = []
                if high > low:
                    consumer.assign([ck.TopicPartition(topic, p, low)])
                    deadline = time.monotonic() + TIMEOUT
                    while time.monotonic() < deadline and (not got or got[-1][0] < high - 1):
                        msg = consumer.poll(0.2)
                        if msg is not None and not msg.error():
                            got.append((msg.offset(), msg.key(), msg.value(), msg.headers()))
                        elif got and msg is None:
                            break  # a transaction marker ends the partition
                held[(topic, p)] = [g[1:] for g in got]
    finally:
        consumer.close()
    return held
