"""Data-plane scenarios as plain functions of a cluster's bootstrap servers.

Each scenario drives real clients (confluent-kafka, kafka-python) or kipwire.codec over a
socket and returns what the client saw, so the same function runs against real Kafka now and
against kipwire's MockCluster later; the tests compare the results with what real Kafka gave.
`EXPECTED_ERRORS` is real Kafka 4.1's answer to each mistake: the mock must give the same.

Every loop here is bounded by a deadline.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from realkafka_wire import WireConnection

from kipwire.codec import ErrorCode, decode_response, encode_request
from kipwire.codec.records import Compression, build_batch, iter_batches

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
POLL_TIMEOUT_S = 30.0

PRODUCE, FETCH, METADATA, LEADER_AND_ISR, API_VERSIONS, CREATE_TOPICS = 0, 1, 3, 4, 18, 19
INCREMENTAL_ALTER_CONFIGS, BROKER_HEARTBEAT = 44, 63
LIST_OFFSETS, OFFSET_COMMIT, FIND_COORDINATOR, DELETE_TOPICS, DESCRIBE_CONFIGS = 2, 8, 10, 20, 32
INIT_PRODUCER_ID, CREATE_PARTITIONS = 22, 37
GROUP_KEY, TRANSACTION_KEY = 0, 1
TOPIC_RESOURCE, OP_SET = 2, 0
CONNECTION_CLOSED = "CONNECTION_CLOSED"

# Real Kafka 4.1's answer to each mistake (test_realkafka_data_plane): the mock must match it.
EXPECTED_ERRORS = {
    # with auto.create.topics.enable=false, as kafka_harness configures every node
    "metadata_unknown_topic": "UNKNOWN_TOPIC_OR_PARTITION",
    "produce_unknown_topic": "UNKNOWN_TOPIC_OR_PARTITION",
    "produce_wrong_partition": "UNKNOWN_TOPIC_OR_PARTITION",
    "produce_too_large": "MESSAGE_TOO_LARGE",
    "create_topic_bad_config_value": "INVALID_CONFIG",
    "create_topic_bad_min_isr": "INVALID_CONFIG",
    "create_topic_bad_max_message_bytes": "INVALID_CONFIG",
    "create_topic_bad_retention_ms": "INVALID_CONFIG",
    "create_topic_bad_unclean_election": "INVALID_CONFIG",
    "create_topic_bad_compression_type": "INVALID_CONFIG",
    "alter_config_bad_value": "INVALID_CONFIG",
    "create_topic_unknown_config": "INVALID_CONFIG",
    "create_topic_zero_partitions": "INVALID_PARTITIONS",
    "create_topic_too_many_replicas": "INVALID_REPLICATION_FACTOR",
    "create_topic_exists": "TOPIC_ALREADY_EXISTS",
    "api_versions_unsupported": "UNSUPPORTED_VERSION",
    "delete_unknown_topic": "UNKNOWN_TOPIC_OR_PARTITION",
    "create_partitions_fewer": "INVALID_PARTITIONS",
    "describe_configs_unknown_topic": "UNKNOWN_TOPIC_OR_PARTITION",
    "list_offsets_wrong_partition": "UNKNOWN_TOPIC_OR_PARTITION",
    "fetch_offset_out_of_range": "OFFSET_OUT_OF_RANGE",
    "offset_commit_unknown_member": "ILLEGAL_GENERATION",
    "init_producer_id_timeout_too_long": "INVALID_TRANSACTION_TIMEOUT",
    # a version or API the broker does not serve: no answer, that one connection is closed
    "fetch_removed_version": CONNECTION_CLOSED,
    "api_not_served_by_brokers": CONNECTION_CLOSED,
    "fetch_above_max_version": CONNECTION_CLOSED,
    # Produce is advertised from v0 (KAFKA-18659: for old librdkafka) but served from v3
    "produce_removed_version": CONNECTION_CLOSED,
    "controller_api_on_broker_listener": CONNECTION_CLOSED,
    "unknown_api_key": CONNECTION_CLOSED,
    "confluent_too_large": "MSG_SIZE_TOO_LARGE",
    "confluent_bad_config": "INVALID_CONFIG",
}


def unique(prefix: str) -> str:
    """A topic or group name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def first_port(bootstrap: str) -> int:
    """The port of the first bootstrap server."""
    return int(bootstrap.split(",")[0].rsplit(":", 1)[1])


def bounded(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """fn() in a daemon thread; TimeoutError if it has not returned within `timeout`.

    For client calls that take no timeout of their own (kafka-python's commit/abort wait for
    the broker without bound): a broker that never answers fails the test instead of hanging it.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as e:  # handed to the caller's thread below
            outcome["error"] = e

    thread = threading.Thread(target=run, daemon=True, name=what)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"{what}: no result within {timeout:.0f} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _deadline_loop(timeout: float) -> Callable[[], bool]:
    deadline = time.monotonic() + timeout
    return lambda: time.monotonic() < deadline


# ------------------------------------------------------------------------------------ admin


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    replication: int = 1,
    config: dict[str, str] | None = None,
) -> str:
    """Create a topic with confluent-kafka's AdminClient and wait until it has leaders."""
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)
    topic = NewTopic(name, partitions, replication, config=config or {})
    admin.create_topics([topic], operation_timeout=30)[name].result(timeout=30)

    def led() -> bool:
        md = admin.list_topics(topic=name, timeout=5).topics.get(name)
        return bool(
            md is not None
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        )

    loop = _deadline_loop(POLL_TIMEOUT_S)
    while loop():
        if led():
            return name
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} has no leader for every partition")


def admin_calls(bootstrap: str) -> dict[str, Any]:
    """Create, describe, alter, grow and delete a topic; what each admin call answered."""
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        ResourceType,
    )

    admin = _admin(bootstrap)
    name = create_topic(bootstrap, unique("admin"), partitions=2, config={"retention.ms": "60000"})
    res = ConfigResource(ResourceType.TOPIC, name)
    described = admin.describe_configs([res])[res].result(timeout=30)
    change = ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET)
    res_alter = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[change])
    admin.incremental_alter_configs([res_alter])[res_alter].result(timeout=30)
    altered = admin.describe_configs([res])[res].result(timeout=30)
    admin.create_partitions([NewPartitions(name, 4)])[name].result(timeout=30)
    loop = _deadline_loop(POLL_TIMEOUT_S)
    partitions = 0
    while loop():
        partitions = len(admin.list_topics(topic=name, timeout=5).topics[name].partitions)
        if partitions == 4:
            break
        time.sleep(0.1)
    cluster = admin.describe_cluster().result(timeout=30)
    admin.delete_topics([name], operation_timeout=30)[name].result(timeout=30)
    loop = _deadline_loop(POLL_TIMEOUT_S)
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
    resource = {"resource_type": TOPIC_RESOURCE, "resource_name": name, "configuration_keys": None}
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(DESCRIBE_CONFIGS, 4, {"resources": [resource]}).body
    result = body.results[0]
    if result.error_code:
        raise RuntimeError(f"DescribeConfigs {name}: {_error_name(result.error_code)}")
    return {c.name: c.value for c in result.configs}


# ------------------------------------------------------------------------------ produce/consume


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
        loop = _deadline_loop(POLL_TIMEOUT_S)
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
        loop = _deadline_loop(POLL_TIMEOUT_S)
        while len(got) < count and loop():
            for msgs in consumer.poll(timeout_ms=500).values():
                got += [(m.key, m.value) for m in msgs]
    finally:
        consumer.close()
    return got


def leader_port(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The port of the partition's leader; the first bootstrap server's when it has none.

    Raw requests go to the leader, as a client sends them: on a cluster of several brokers a
    follower would answer NOT_LEADER_OR_FOLLOWER.
    """
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(
            METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        ).body
    ports = {b.node_id: b.port for b in body.brokers}
    for part in body.topics[0].partitions:
        if part.partition_index == partition and part.leader_id in ports:
            return ports[part.leader_id]
    return first_port(bootstrap)


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
        body = conn.call(FETCH, 12, request).body
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


# ------------------------------------------------------------------------------ groups


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
        loop = _deadline_loop(POLL_TIMEOUT_S)
        while len(a.partitions) < partitions and loop():
            a.poll()
        alone = set(a.partitions)
        b = _Member(joiner, bootstrap, group, topic)
        loop = _deadline_loop(POLL_TIMEOUT_S)
        while not (a.partitions and b.partitions) and loop():
            a.poll()
            b.poll()
        return {"alone": alone, "a": set(a.partitions), "b": set(b.partitions)}
    finally:
        a.close()
        if b is not None:
            b.close()


# ------------------------------------------------------------------------------ producers


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
        loop = _deadline_loop(POLL_TIMEOUT_S)
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


# ------------------------------------------------------------------------------ mistakes


def _error_name(code: int) -> str:
    return ErrorCode(code).name


#: Kafka may answer these for a moment after a topic is created, though Metadata shows the
#: leader: the broker has not applied its leadership yet. Clients retry them; so do the mistakes.
_NOT_READY = {"NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "UNKNOWN_LEADER_EPOCH"}


def _once_ready(ask: Callable[[], str]) -> str:
    """ask() again while it answers that the partition's leader is not ready (bounded)."""
    loop = _deadline_loop(POLL_TIMEOUT_S)
    answer = ask()
    while answer in _NOT_READY and loop():
        time.sleep(0.1)
        answer = ask()
    return answer


def metadata_unknown_topic(bootstrap: str) -> str:
    """Metadata v12 for a topic that does not exist (auto-creation off)."""
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(
            METADATA,
            12,
            {"topics": [{"name": unique("nosuch")}], "allow_auto_topic_creation": True},
        ).body
    return _error_name(body.topics[0].error_code)


def _produce_error(bootstrap: str, topic: str, partition: int, value: bytes) -> str:
    return _once_ready(lambda: _produce_once(bootstrap, topic, partition, value))


def _produce_once(bootstrap: str, topic: str, partition: int, value: bytes) -> str:
    batch = build_batch([{"key": b"k", "value": value}])
    with WireConnection("127.0.0.1", leader_port(bootstrap, topic, partition)) as conn:
        body = conn.call(
            PRODUCE,
            9,
            {
                "acks": -1,
                "timeout_ms": 10000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
                ],
            },
        ).body
    return _error_name(body.responses[0].partition_responses[0].error_code)


def produce_unknown_topic(bootstrap: str) -> str:
    """Produce v9 to a topic that does not exist."""
    return _produce_error(bootstrap, unique("nosuch"), 0, b"v")


def produce_wrong_partition(bootstrap: str) -> str:
    """Produce v9 to partition 7 of a one-partition topic."""
    return _produce_error(bootstrap, create_topic(bootstrap, unique("onepart")), 7, b"v")


def produce_too_large(bootstrap: str) -> str:
    """Produce v9 of a 4000-byte record to a topic whose max.message.bytes is 1024."""
    topic = create_topic(bootstrap, unique("small"), config={"max.message.bytes": "1024"})
    return _produce_error(bootstrap, topic, 0, b"x" * 4000)


def _create_topic_error(bootstrap: str, topic: dict[str, Any]) -> str:
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(
            CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 10000, "validate_only": False}
        ).body
    return _error_name(body.topics[0].error_code)


def _new_topic(**fields: Any) -> dict[str, Any]:
    topic = {"name": unique("bad"), "num_partitions": 1, "replication_factor": 1}
    topic.update(fields)
    return topic


def create_topic_bad_config_value(bootstrap: str) -> str:
    """CreateTopics v7 with cleanup.policy=bogus."""
    configs = [{"name": "cleanup.policy", "value": "bogus"}]
    return _create_topic_error(bootstrap, _new_topic(configs=configs))


def create_topic_with_config(key: str, value: str) -> Callable[[str], str]:
    """A scenario: CreateTopics v7 of a new topic with key=value; the error's name (NONE)."""

    def mistake(bootstrap: str) -> str:
        return _create_topic_error(bootstrap, _new_topic(configs=[{"name": key, "value": value}]))

    mistake.__doc__ = f"CreateTopics v7 with {key}={value}."
    return mistake


create_topic_bad_min_isr = create_topic_with_config("min.insync.replicas", "0")
create_topic_bad_max_message_bytes = create_topic_with_config("max.message.bytes", "-5")
create_topic_bad_retention_ms = create_topic_with_config("retention.ms", "forever")
create_topic_bad_unclean_election = create_topic_with_config(
    "unclean.leader.election.enable", "maybe"
)
create_topic_bad_compression_type = create_topic_with_config("compression.type", "bogus")


def alter_config_bad_value(bootstrap: str) -> str:
    """IncrementalAlterConfigs v1 setting an existing topic's cleanup.policy to bogus."""
    name = create_topic(bootstrap, unique("alter"))
    change = {"name": "cleanup.policy", "config_operation": OP_SET, "value": "bogus"}
    resource = {"resource_type": TOPIC_RESOURCE, "resource_name": name, "configs": [change]}
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(
            INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource], "validate_only": False}
        ).body
    return _error_name(body.responses[0].error_code)


def create_topic_unknown_config(bootstrap: str) -> str:
    """CreateTopics v7 with a config key Kafka does not know."""
    configs = [{"name": "no.such.config", "value": "1"}]
    return _create_topic_error(bootstrap, _new_topic(configs=configs))


def create_topic_zero_partitions(bootstrap: str) -> str:
    """CreateTopics v7 with 0 partitions."""
    return _create_topic_error(bootstrap, _new_topic(num_partitions=0))


def create_topic_too_many_replicas(bootstrap: str) -> str:
    """CreateTopics v7 with a replication factor above the broker count."""
    return _create_topic_error(bootstrap, _new_topic(replication_factor=9))


def create_topic_exists(bootstrap: str) -> str:
    """CreateTopics v7 for a name that is taken."""
    name = create_topic(bootstrap, unique("taken"))
    return _create_topic_error(bootstrap, _new_topic(name=name))


def api_versions_unsupported_reply(bootstrap: str, version: int = 127) -> dict[str, Any]:
    """ApiVersions at a version the broker lacks: the reply's version, error and ranges."""
    body = {"client_software_name": "kipwire", "client_software_version": "0"}
    frame = bytearray(encode_request(API_VERSIONS, 3, body, correlation_id=1, client_id="kw"))
    frame[2:4] = version.to_bytes(2, "big")  # the header's request_api_version
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        data = conn.exchange(bytes(frame))
    response = decode_response(data, API_VERSIONS, version)
    return {
        "version": response.api_version,
        "error": _error_name(response.body.error_code),
        "ranges": [(k.api_key, k.min_version, k.max_version) for k in response.body.api_keys],
    }


def api_versions_unsupported(bootstrap: str) -> str:
    """ApiVersions at a version no broker has (v127): answered in v0 with the error (KIP-511)."""
    return api_versions_unsupported_reply(bootstrap)["error"]


def delete_unknown_topic(bootstrap: str) -> str:
    """DeleteTopics v6 of a topic that does not exist."""
    request = {"topics": [{"name": unique("nosuch")}], "timeout_ms": 10000}
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(DELETE_TOPICS, 6, request).body
    return _error_name(body.responses[0].error_code)


def create_partitions_fewer(bootstrap: str) -> str:
    """CreatePartitions v3 asking a 2-partition topic for 1 partition."""
    name = create_topic(bootstrap, unique("shrink"), partitions=2)
    request = {
        "topics": [{"name": name, "count": 1, "assignments": None}],
        "timeout_ms": 10000,
        "validate_only": False,
    }
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(CREATE_PARTITIONS, 3, request).body
    return _error_name(body.results[0].error_code)


def describe_configs_unknown_topic(bootstrap: str) -> str:
    """DescribeConfigs v4 of a topic that does not exist."""
    resource = {
        "resource_type": TOPIC_RESOURCE,
        "resource_name": unique("nosuch"),
        "configuration_keys": None,
    }
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(DESCRIBE_CONFIGS, 4, {"resources": [resource]}).body
    return _error_name(body.results[0].error_code)


def list_offsets_wrong_partition(bootstrap: str) -> str:
    """ListOffsets v7 (latest) of partition 7 of a one-partition topic."""
    name = create_topic(bootstrap, unique("onepart"))
    request = {
        "replica_id": -1,
        "topics": [{"name": name, "partitions": [{"partition_index": 7, "timestamp": -1}]}],
    }

    def ask() -> str:
        with WireConnection("127.0.0.1", leader_port(bootstrap, name)) as conn:
            body = conn.call(LIST_OFFSETS, 7, request).body
        return _error_name(body.topics[0].partitions[0].error_code)

    return _once_ready(ask)


def fetch_offset_out_of_range(bootstrap: str) -> str:
    """Fetch v12 of an empty partition at offset 1000."""
    name = create_topic(bootstrap, unique("empty"))
    request = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "topics": [{"topic": name, "partitions": [{"partition": 0, "fetch_offset": 1000}]}],
    }

    def ask() -> str:
        with WireConnection("127.0.0.1", leader_port(bootstrap, name)) as conn:
            body = conn.call(FETCH, 12, request).body
        return _error_name(body.responses[0].partitions[0].error_code)

    return _once_ready(ask)


def coordinator_port(bootstrap: str, key: str, key_type: int) -> int:
    """The port of the group (key_type 0) or transaction (1) coordinator of `key`."""
    request = {"key_type": key_type, "coordinator_keys": [key]}
    loop = _deadline_loop(POLL_TIMEOUT_S)
    while loop():
        with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
            found = conn.call(FIND_COORDINATOR, 4, request).body.coordinators[0]
        if found.error_code == 0:
            return found.port
        # the coordinator's internal topic is still being created: ask again
        time.sleep(0.2)
    raise TimeoutError(f"no coordinator for {key}")


def offset_commit_unknown_member(bootstrap: str) -> str:
    """OffsetCommit v8 for a group that has no members, from a member id it never gave out."""
    name = create_topic(bootstrap, unique("commit"))
    group = unique("nogroup")
    request = {
        "group_id": group,
        "generation_id_or_member_epoch": 3,
        "member_id": "no-such-member",
        "topics": [{"name": name, "partitions": [{"partition_index": 0, "committed_offset": 0}]}],
    }
    with WireConnection("127.0.0.1", coordinator_port(bootstrap, group, GROUP_KEY)) as conn:
        body = conn.call(OFFSET_COMMIT, 8, request).body
    return _error_name(body.topics[0].partitions[0].error_code)


def init_producer_id_timeout_too_long(bootstrap: str) -> str:
    """InitProducerId v4 asking a transaction timeout above transaction.max.timeout.ms."""
    txid = unique("txid")
    request = {"transactional_id": txid, "transaction_timeout_ms": 2**31 - 1}
    with WireConnection("127.0.0.1", coordinator_port(bootstrap, txid, TRANSACTION_KEY)) as conn:
        body = conn.call(INIT_PRODUCER_ID, 4, request).body
    return _error_name(body.error_code)


def _unanswered(bootstrap: str, api_key: int, api_version: int, body: dict) -> str:
    """CONNECTION_CLOSED if the broker closes without answering, else the answer's error."""
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        try:
            answer = conn.call(api_key, api_version, body).body
        except ConnectionError:
            return CONNECTION_CLOSED
    return _error_name(answer.get("error_code", 0))


def _unanswered_as(
    bootstrap: str, api_key: int, api_version: int, body: dict, header: tuple
) -> str:
    """A request encoded at a version the codec knows, sent with the header's (key, version)
    replaced by `header`: CONNECTION_CLOSED if the broker closes without answering."""
    frame = bytearray(encode_request(api_key, api_version, body, correlation_id=1, client_id="kw"))
    frame[0:4] = header[0].to_bytes(2, "big") + header[1].to_bytes(2, "big")
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        try:
            conn.exchange(bytes(frame))
        except ConnectionError:
            return CONNECTION_CLOSED
    return "ANSWERED"


def fetch_removed_version(bootstrap: str) -> str:
    """Fetch v3, one of the versions Kafka 4.0 removed (KIP-896)."""
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "topics": []}
    return _unanswered(bootstrap, FETCH, 3, body)


def api_not_served_by_brokers(bootstrap: str) -> str:
    """LeaderAndIsr v0, a ZooKeeper-era API no KRaft broker serves."""
    return _unanswered(bootstrap, LEADER_AND_ISR, 0, {})


_EMPTY_FETCH = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "topics": []}


def fetch_above_max_version(bootstrap: str) -> str:
    """Fetch v99: a v12 body under a header claiming a version above every broker's maximum."""
    return _unanswered_as(bootstrap, FETCH, 12, _EMPTY_FETCH, (FETCH, 99))


def produce_removed_version(bootstrap: str) -> str:
    """Produce v2: Kafka 4.1 advertises Produce from v0 (for old librdkafka) but serves v3+."""
    return _unanswered(bootstrap, PRODUCE, 2, {"acks": 1, "timeout_ms": 1000, "topic_data": []})


def controller_api_on_broker_listener(bootstrap: str) -> str:
    """BrokerHeartbeat v1, which only a controller listener serves."""
    return _unanswered(bootstrap, BROKER_HEARTBEAT, 1, {"broker_id": 99, "broker_epoch": 1})


def unknown_api_key(bootstrap: str) -> str:
    """API key 1000, which no Kafka has: an ApiVersions v3 body under that key."""
    body = {"client_software_name": "kipwire", "client_software_version": "0"}
    return _unanswered_as(bootstrap, API_VERSIONS, 3, body, (1000, 0))


def confluent_too_large(bootstrap: str) -> str:
    """confluent-kafka producing a 4000-byte record to a topic with max.message.bytes 1024."""
    topic = create_topic(bootstrap, unique("small"), config={"max.message.bytes": "1024"})
    errors = confluent_produce(bootstrap, topic, [(b"k", b"x" * 4000)])
    return errors[0] if errors else "NO_ERROR"


def confluent_bad_config(bootstrap: str) -> str:
    """confluent-kafka's AdminClient creating a topic with cleanup.policy=bogus."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    name = unique("bad")
    admin = _admin(bootstrap)  # kept referenced: a collected client fails its futures
    futures = admin.create_topics(
        [NewTopic(name, 1, 1, config={"cleanup.policy": "bogus"})], operation_timeout=30
    )
    try:
        futures[name].result(timeout=30)
    except KafkaException as e:
        return e.args[0].name()
    return "NO_ERROR"


MISTAKES: dict[str, Callable[[str], str]] = {
    "metadata_unknown_topic": metadata_unknown_topic,
    "produce_unknown_topic": produce_unknown_topic,
    "produce_wrong_partition": produce_wrong_partition,
    "produce_too_large": produce_too_large,
    "create_topic_bad_config_value": create_topic_bad_config_value,
    "create_topic_bad_min_isr": create_topic_bad_min_isr,
    "create_topic_bad_max_message_bytes": create_topic_bad_max_message_bytes,
    "create_topic_bad_retention_ms": create_topic_bad_retention_ms,
    "create_topic_bad_unclean_election": create_topic_bad_unclean_election,
    "create_topic_bad_compression_type": create_topic_bad_compression_type,
    "alter_config_bad_value": alter_config_bad_value,
    "create_topic_unknown_config": create_topic_unknown_config,
    "create_topic_zero_partitions": create_topic_zero_partitions,
    "create_topic_too_many_replicas": create_topic_too_many_replicas,
    "create_topic_exists": create_topic_exists,
    "api_versions_unsupported": api_versions_unsupported,
    "delete_unknown_topic": delete_unknown_topic,
    "create_partitions_fewer": create_partitions_fewer,
    "describe_configs_unknown_topic": describe_configs_unknown_topic,
    "list_offsets_wrong_partition": list_offsets_wrong_partition,
    "fetch_offset_out_of_range": fetch_offset_out_of_range,
    "offset_commit_unknown_member": offset_commit_unknown_member,
    "init_producer_id_timeout_too_long": init_producer_id_timeout_too_long,
    "fetch_removed_version": fetch_removed_version,
    "api_not_served_by_brokers": api_not_served_by_brokers,
    "fetch_above_max_version": fetch_above_max_version,
    "produce_removed_version": produce_removed_version,
    "controller_api_on_broker_listener": controller_api_on_broker_listener,
    "unknown_api_key": unknown_api_key,
    "confluent_too_large": confluent_too_large,
    "confluent_bad_config": confluent_bad_config,
}
