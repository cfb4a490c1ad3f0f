"""Data-plane scenarios as plain functions of a cluster's bootstrap servers.

Each scenario drives real clients (confluent-kafka, kafka-python) or kipwire.codec over a
socket and returns what the client saw, so the same function runs against real Kafka now and
against kipwire's MockCluster later; the tests compare the results with what real Kafka gave.
The mistakes and real Kafka's answer to each are in `mistake_scenarios`; the helpers both use
are in `scenario_kit`.

Every loop here is bounded by a deadline.
"""

from __future__ import annotations

import time
from typing import Any

from realkafka_wire import WireConnection
from scenario_kit import (
    POLL_TIMEOUT_S,
    admin_client,
    bounded,
    create_topic,
    deadline_loop,
    error_name,
    first_port,
    leader_port,
    unique,
)

from kipwire.codec import ApiKey, ConfigResourceType, ErrorCode
from kipwire.codec.records import Compression, build_batch, iter_batches

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


# -------------------------------------------------------------------------------------- admin


def admin_calls(bootstrap: str) -> dict[str, Any]:
    """Create, describe, alter, grow and delete a topic; what each admin call answered."""
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        ResourceType,
    )

    admin = admin_client(bootstrap)
    name = create_topic(bootstrap, unique("admin"), partitions=2, config={"retention.ms": "60000"})
    res = ConfigResource(ResourceType.TOPIC, name)
    described = admin.describe_configs([res])[res].result(timeout=30)
    change = ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET)
    res_alter = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[change])
    admin.incremental_alter_configs([res_alter])[res_alter].result(timeout=30)
    # a KRaft broker answers DescribeConfigs from its metadata image, which applies the
    # controller's ConfigRecord a moment after the alter returns: read until it shows
    altered = admin.describe_configs([res])[res].result(timeout=30)
    loop = deadline_loop(POLL_TIMEOUT_S)
    while altered["retention.ms"].value != "120000" and loop():
        time.sleep(0.1)
        altered = admin.describe_configs([res])[res].result(timeout=30)
    admin.create_partitions([NewPartitions(name, 4)])[name].result(timeout=30)
    loop = deadline_loop(POLL_TIMEOUT_S)
    partitions = 0
    while loop():
        partitions = len(admin.list_topics(topic=name, timeout=5).topics[name].partitions)
        if partitions == 4:
            break
        time.sleep(0.1)
    cluster = admin.describe_cluster().result(timeout=30)
    admin.delete_topics([name], operation_timeout=30)[name].result(timeout=30)
    loop = deadline_loop(POLL_TIMEOUT_S)
    still_listed = True
    while loop() and still_listed:
        still_listed = name in admin.list_topics(timeout=5).topics
        if still_listed:
            time.sleep(0.1)
    return {
        "retention_before": described["retention.ms"].value,
        "retention_after": altered["retention.ms"].value,
        "partitions_after_grow": partitions,
        "cluster_nodes": len(cluster.nodes),
        "cluster_id_set": bool(cluster.cluster_id),
        "listed_after_delete": still_listed,
    }


def topic_config_defaults(bootstrap: str) -> dict[str, str]:
    """DescribeConfigs v4 of a new topic created without configs: every config and its value."""
    name = create_topic(bootstrap, unique("defaults"))
    resource = {
        "resource_type": ConfigResourceType.TOPIC,
        "resource_name": name,
        "configuration_keys": None,
    }
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [resource]}).body
    result = body.results[0]
    if result.error_code:
        raise RuntimeError(f"DescribeConfigs {name}: {error_name(result.error_code)}")
    return {c.name: c.value for c in result.configs}


# ---------------------------------------------------------------------------- produce/consume


def payloads(n: int, tag: str) -> list[tuple[bytes, bytes]]:
    """n (key, value) pairs, compressible enough that every codec really compresses."""
    return [(f"k{i}".encode(), f"{tag}-{i:06d}-".encode() * 8) for i in range(n)]


def confluent_produce(
    bootstrap: str, topic: str, records: list[tuple[bytes, bytes]], **conf: Any
) -> list[str]:
    """Produce with confluent-kafka and flush; the delivery errors' names (empty if none)."""
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 0, **conf})

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err.name())

    for key, value in records:
        producer.produce(topic, value=value, key=key, partition=0, on_delivery=delivered)
    left = producer.flush(POLL_TIMEOUT_S)
    if left:
        raise TimeoutError(f"{left} records not delivered to {topic}")
    return errors


def confluent_consume(
    bootstrap: str, topic: str, count: int, *, isolation: str = "read_uncommitted"
) -> list[tuple[bytes, bytes]]:
    """Read partition 0 from the start with confluent-kafka until `count` records or timeout."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("reader"),
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "log_level": 0,
        }
    )
    got: list[tuple[bytes, bytes]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        loop = deadline_loop(POLL_TIMEOUT_S)
        while len(got) < count and loop():
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                if msg.error() is None:
                    got.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return got


def kafka_python_produce(
    bootstrap: str, topic: str, records: list[tuple[bytes, bytes]], compression: str
) -> None:
    """Produce with kafka-python (None for 'none' compression) and wait for every ack."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if compression == "none" else compression,
        linger_ms=5,
    )
    try:
        futures = [producer.send(topic, value=v, key=k, partition=0) for k, v in records]
        for f in futures:
            f.get(timeout=POLL_TIMEOUT_S)
    finally:
        producer.close(timeout=10)


def kafka_python_consume(bootstrap: str, topic: str, count: int) -> list[tuple[bytes, bytes]]:
    """Read partition 0 from the start with kafka-python until `count` records or timeout."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    got: list[tuple[bytes, bytes]] = []
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        loop = deadline_loop(POLL_TIMEOUT_S)
        while len(got) < count and loop():
            for msgs in consumer.poll(timeout_ms=500).values():
                got += [(m.key, m.value) for m in msgs]
    finally:
        consumer.close()
    return got


def fetch_partition0(bootstrap: str, topic: str) -> Any:
    """Fetch v12 of partition 0 from offset 0 with kipwire.codec; the partition's response."""
    request = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 8 << 20,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 8 << 20}],
            }
        ],
    }
    with WireConnection("127.0.0.1", leader_port(bootstrap, topic)) as conn:
        body = conn.call(ApiKey.FETCH, 12, request).body
    part = body.responses[0].partitions[0]
    if part.error_code:
        raise RuntimeError(f"fetch {topic}: {ErrorCode(part.error_code).name}")
    return part


def whole_batches(bootstrap: str, topic: str) -> list[Any]:
    """The complete record batches of partition 0, decoded by kipwire.codec.records."""
    return [
        b
        for b in iter_batches(fetch_partition0(bootstrap, topic).records or b"")
        if not b.truncated
    ]


def fetched_batches(bootstrap: str, topic: str) -> list[tuple[str, int]]:
    """(compression, record count) of each batch of partition 0, as kipwire.codec reads them."""
    return [
        (Compression(b.compression).name.lower(), len(b.records))
        for b in whole_batches(bootstrap, topic)
    ]


def compression_roundtrip(
    bootstrap: str, compression: str, producer: str, n: int = 300
) -> dict[str, Any]:
    """Produce n records with one client and `compression`, read them back with the other."""
    topic = create_topic(bootstrap, unique(f"cmp-{compression}-{producer}"))
    sent = payloads(n, compression)
    if producer == "confluent":
        errors = confluent_produce(bootstrap, topic, sent, **{"compression.type": compression})
        if errors:
            raise RuntimeError(f"confluent-kafka delivery errors: {errors[:3]}")
        received = kafka_python_consume(bootstrap, topic, n)
    else:
        kafka_python_produce(bootstrap, topic, sent, compression)
        received = confluent_consume(bootstrap, topic, n)
    return {"sent": sent, "received": received, "batches": fetched_batches(bootstrap, topic)}


# ------------------------------------------------------------------------------------- groups


class _Member:
    """A group member of either client: `poll()` drives it, `partitions` is its assignment."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str) -> None:
        self.client = client
        self.partitions: set[int] = set()
        if client == "confluent":
            from confluent_kafka import Consumer

            self._consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": group,
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 500,
                    "log_level": 0,
                }
            )
            self._consumer.subscribe(
                [topic],
                on_assign=lambda _c, tps: self._assigned(tps),
                on_revoke=lambda _c, _tps: self._assigned([]),
            )
        else:
            from kafka import ConsumerRebalanceListener, KafkaConsumer

            member = self

            class Listener(ConsumerRebalanceListener):
                def on_partitions_revoked(self, revoked: Any) -> None:
                    member._assigned([])

                def on_partitions_assigned(self, assigned: Any) -> None:
                    member._assigned(assigned)

            self._consumer = KafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=group,
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
                enable_auto_commit=False,
            )
            self._consumer.subscribe(topics=[topic], listener=Listener())

    def _assigned(self, tps: Any) -> None:
        self.partitions = {tp.partition for tp in tps}

    def poll(self) -> None:
        """One short poll: heartbeats, rebalance callbacks, fetches."""
        if self.client == "confluent":
            self._consumer.poll(0.1)
        else:
            self._consumer.poll(timeout_ms=100)

    def close(self) -> None:
        """Leave the group."""
        self._consumer.close()


def group_rebalance(bootstrap: str, partitions: int = 4, joiner: str = "confluent") -> dict:
    """A confluent-kafka consumer takes every partition; a second one (`joiner`: confluent or
    kafka-python) joins the group and the two split them."""
    topic = create_topic(bootstrap, unique("group"), partitions=partitions)
    group = unique("grp")
    a = _Member("confluent", bootstrap, group, topic)
    b = None
    try:
        loop = deadline_loop(POLL_TIMEOUT_S)
        while len(a.partitions) < partitions and loop():
            a.poll()
        alone = set(a.partitions)
        b = _Member(joiner, bootstrap, group, topic)
        loop = deadline_loop(POLL_TIMEOUT_S)
        while not (a.partitions and b.partitions) and loop():
            a.poll()
            b.poll()
        return {"alone": alone, "a": set(a.partitions), "b": set(b.partitions)}
    finally:
        a.close()
        if b is not None:
            b.close()


# ---------------------------------------------------------------------------------- producers


def idempotent_produce(bootstrap: str, n: int = 500) -> dict[str, Any]:
    """An idempotent producer's records arrive once each, in order, in batches with a PID."""
    topic = create_topic(bootstrap, unique("idem"))
    sent = payloads(n, "idem")
    errors = confluent_produce(
        bootstrap, topic, sent, **{"enable.idempotence": True, "acks": "all"}
    )
    received = confluent_consume(bootstrap, topic, n)
    batches = whole_batches(bootstrap, topic)
    return {
        "errors": errors,
        "sent": sent,
        "received": received,
        "producer_ids": {b.producer_id for b in batches},
        "sequences": [(b.base_sequence, b.record_count) for b in batches],
    }


def transactions(bootstrap: str) -> dict[str, Any]:
    """Commit one transaction, abort another; what each isolation level reads back."""
    from confluent_kafka import Producer

    topic = create_topic(bootstrap, unique("txn"))
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": unique("txid"),
            "log_level": 0,
        }
    )
    producer.init_transactions(POLL_TIMEOUT_S)
    for outcome in ("commit", "abort", "commit2"):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(
                topic, key=f"{outcome}-{i}".encode(), value=outcome.encode(), partition=0
            )
        if outcome == "abort":
            # abort_transaction purges what is still queued: flush so the records reach the log
            producer.flush(POLL_TIMEOUT_S)
            producer.abort_transaction(POLL_TIMEOUT_S)
        else:
            producer.commit_transaction(POLL_TIMEOUT_S)
    committed = confluent_consume(bootstrap, topic, 10, isolation="read_committed")
    everything = confluent_consume(bootstrap, topic, 15, isolation="read_uncommitted")
    return {
        "read_committed": [v for _k, v in committed],
        "read_uncommitted": [v for _k, v in everything],
    }


def kafka_python_consume_values(
    bootstrap: str, topic: str, count: int, isolation: str
) -> list[bytes]:
    """Values of partition 0 read from the start by kafka-python at an isolation level."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        isolation_level=isolation,
    )
    got: list[bytes] = []
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        loop = deadline_loop(POLL_TIMEOUT_S)
        while len(got) < count and loop():
            for msgs in consumer.poll(timeout_ms=500).values():
                got += [m.value for m in msgs]
    finally:
        consumer.close()
    return got


def kafka_python_transactions(bootstrap: str) -> dict[str, Any]:
    """kafka-python's transactional (so idempotent) producer: commit, abort, commit."""
    from kafka import KafkaProducer

    topic = create_topic(bootstrap, unique("kptxn"))
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("kptxid"))
    try:
        producer.init_transactions()
        for outcome in ("commit", "abort", "commit2"):
            producer.begin_transaction()
            for i in range(5):
                producer.send(
                    topic, key=f"{outcome}-{i}".encode(), value=outcome.encode(), partition=0
                )
            producer.flush(timeout=POLL_TIMEOUT_S)
            end = producer.abort_transaction if outcome == "abort" else producer.commit_transaction
            bounded(end, POLL_TIMEOUT_S, f"kafka-python {outcome} transaction")
    finally:
        producer.close(timeout=10)
    return {
        "read_committed": kafka_python_consume_values(bootstrap, topic, 10, "read_committed"),
        "read_uncommitted": kafka_python_consume_values(bootstrap, topic, 15, "read_uncommitted"),
        "producer_ids": {b.producer_id for b in whole_batches(bootstrap, topic)},
    }


def keyless_to_compacted(bootstrap: str) -> tuple[str, str]:
    """Produce v9 of a keyed and a keyless record to a compacted topic: (error, message)."""
    topic = create_topic(bootstrap, unique("compacted"), config={"cleanup.policy": "compact"})
    batch = build_batch([{"key": b"k", "value": b"1"}, {"key": None, "value": b"2"}])
    body = {
        "acks": -1,
        "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    loop = deadline_loop(POLL_TIMEOUT_S)
    while True:
        with WireConnection("127.0.0.1", leader_port(bootstrap, topic)) as conn:
            (part,) = conn.call(ApiKey.PRODUCE, 9, body).body.responses[0].partition_responses
        error = error_name(part.error_code)
        if error not in ("NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION") or not loop():
            return error, (part.error_message or "").replace(topic, "TOPIC")
        time.sleep(0.1)
