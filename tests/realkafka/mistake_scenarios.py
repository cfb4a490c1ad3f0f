"""Mistakes a client can make, as plain functions of a cluster's bootstrap servers, and real
Kafka 4.1's answer to each.

Each mistake sends one wrong request (with kipwire.codec over a socket, or a real client) and
returns the error's name, so the same function runs against real Kafka and kipwire's
MockCluster. `EXPECTED_ERRORS` is real Kafka 4.1's answer to each mistake: the mock must give
the same.

Every loop here is bounded by a deadline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from data_plane_scenarios import confluent_produce
from realkafka_wire import WireConnection
from scenario_kit import (
    admin_client,
    coordinator_port,
    create_topic,
    error_name,
    first_port,
    leader_port,
    once_ready,
    unique,
)

from kipwire.codec import (
    AlterConfigOp,
    ApiKey,
    ConfigResourceType,
    CoordinatorType,
    ErrorCode,
    OffsetSpec,
    decode_response,
    encode_request,
)
from kipwire.codec.records import build_batch

CONNECTION_CLOSED = "CONNECTION_CLOSED"
NO_SUCH_API_KEY = 1000  # far above every key Kafka defines

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


def metadata_unknown_topic(bootstrap: str) -> str:
    """Metadata v12 for a topic that does not exist (auto-creation off)."""
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(
            ApiKey.METADATA,
            12,
            {"topics": [{"name": unique("nosuch")}], "allow_auto_topic_creation": True},
        ).body
    return error_name(body.topics[0].error_code)


def _produce_error(bootstrap: str, topic: str, partition: int, value: bytes) -> str:
    return once_ready(lambda: _produce_once(bootstrap, topic, partition, value))


def _produce_once(bootstrap: str, topic: str, partition: int, value: bytes) -> str:
    batch = build_batch([{"key": b"k", "value": value}])
    with WireConnection("127.0.0.1", leader_port(bootstrap, topic, partition)) as conn:
        body = conn.call(
            ApiKey.PRODUCE,
            9,
            {
                "acks": -1,
                "timeout_ms": 10000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
                ],
            },
        ).body
    return error_name(body.responses[0].partition_responses[0].error_code)


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
            ApiKey.CREATE_TOPICS,
            7,
            {"topics": [topic], "timeout_ms": 10000, "validate_only": False},
        ).body
    return error_name(body.topics[0].error_code)


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
    change = {"name": "cleanup.policy", "config_operation": AlterConfigOp.SET, "value": "bogus"}
    resource = {
        "resource_type": ConfigResourceType.TOPIC,
        "resource_name": name,
        "configs": [change],
    }
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource], "validate_only": False}
        ).body
    return error_name(body.responses[0].error_code)


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
    frame = bytearray(
        encode_request(ApiKey.API_VERSIONS, 3, body, correlation_id=1, client_id="kw")
    )
    frame[2:4] = version.to_bytes(2, "big")  # the header's request_api_version
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        data = conn.exchange(bytes(frame))
    response = decode_response(data, ApiKey.API_VERSIONS, version)
    return {
        "version": response.api_version,
        "error": error_name(response.body.error_code),
        "ranges": [(k.api_key, k.min_version, k.max_version) for k in response.body.api_keys],
    }


def api_versions_unsupported(bootstrap: str) -> str:
    """ApiVersions at a version no broker has (v127): answered in v0 with the error (KIP-511)."""
    return api_versions_unsupported_reply(bootstrap)["error"]


def delete_unknown_topic(bootstrap: str) -> str:
    """DeleteTopics v6 of a topic that does not exist."""
    request = {"topics": [{"name": unique("nosuch")}], "timeout_ms": 10000}
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(ApiKey.DELETE_TOPICS, 6, request).body
    return error_name(body.responses[0].error_code)


def create_partitions_fewer(bootstrap: str) -> str:
    """CreatePartitions v3 asking a 2-partition topic for 1 partition."""
    name = create_topic(bootstrap, unique("shrink"), partitions=2)
    request = {
        "topics": [{"name": name, "count": 1, "assignments": None}],
        "timeout_ms": 10000,
        "validate_only": False,
    }
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(ApiKey.CREATE_PARTITIONS, 3, request).body
    return error_name(body.results[0].error_code)


def describe_configs_unknown_topic(bootstrap: str) -> str:
    """DescribeConfigs v4 of a topic that does not exist."""
    resource = {
        "resource_type": ConfigResourceType.TOPIC,
        "resource_name": unique("nosuch"),
        "configuration_keys": None,
    }
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [resource]}).body
    return error_name(body.results[0].error_code)


def list_offsets_wrong_partition(bootstrap: str) -> str:
    """ListOffsets v7 (latest) of partition 7 of a one-partition topic."""
    name = create_topic(bootstrap, unique("onepart"))
    request = {
        "replica_id": -1,
        "topics": [
            {"name": name, "partitions": [{"partition_index": 7, "timestamp": OffsetSpec.LATEST}]}
        ],
    }

    def ask() -> str:
        with WireConnection("127.0.0.1", leader_port(bootstrap, name)) as conn:
            body = conn.call(ApiKey.LIST_OFFSETS, 7, request).body
        return error_name(body.topics[0].partitions[0].error_code)

    return once_ready(ask)


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
            body = conn.call(ApiKey.FETCH, 12, request).body
        return error_name(body.responses[0].partitions[0].error_code)

    return once_ready(ask)


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
    with WireConnection(
        "127.0.0.1", coordinator_port(bootstrap, group, CoordinatorType.GROUP)
    ) as conn:
        body = conn.call(ApiKey.OFFSET_COMMIT, 8, request).body
    return error_name(body.topics[0].partitions[0].error_code)


def init_producer_id_timeout_too_long(bootstrap: str) -> str:
    """InitProducerId v4 asking a transaction timeout above transaction.max.timeout.ms."""
    txid = unique("txid")
    request = {"transactional_id": txid, "transaction_timeout_ms": 2**31 - 1}
    with WireConnection(
        "127.0.0.1", coordinator_port(bootstrap, txid, CoordinatorType.TRANSACTION)
    ) as conn:
        body = conn.call(ApiKey.INIT_PRODUCER_ID, 4, request).body
    return error_name(body.error_code)


def _unanswered(bootstrap: str, api_key: int, api_version: int, body: dict) -> str:
    """CONNECTION_CLOSED if the broker closes without answering, else the answer's error."""
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        try:
            answer = conn.call(api_key, api_version, body).body
        except ConnectionError:
            return CONNECTION_CLOSED
    return error_name(answer.get("error_code", ErrorCode.NONE))


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
    return _unanswered(bootstrap, ApiKey.FETCH, 3, body)


def api_not_served_by_brokers(bootstrap: str) -> str:
    """LeaderAndIsr v0, a ZooKeeper-era API no KRaft broker serves."""
    return _unanswered(bootstrap, ApiKey.LEADER_AND_ISR, 0, {})


_EMPTY_FETCH = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "topics": []}


def fetch_above_max_version(bootstrap: str) -> str:
    """Fetch v99: a v12 body under a header claiming a version above every broker's maximum."""
    return _unanswered_as(bootstrap, ApiKey.FETCH, 12, _EMPTY_FETCH, (ApiKey.FETCH, 99))


def produce_removed_version(bootstrap: str) -> str:
    """Produce v2: Kafka 4.1 advertises Produce from v0 (for old librdkafka) but serves v3+."""
    return _unanswered(
        bootstrap, ApiKey.PRODUCE, 2, {"acks": 1, "timeout_ms": 1000, "topic_data": []}
    )


def controller_api_on_broker_listener(bootstrap: str) -> str:
    """BrokerHeartbeat v1, which only a controller listener serves."""
    return _unanswered(bootstrap, ApiKey.BROKER_HEARTBEAT, 1, {"broker_id": 99, "broker_epoch": 1})


def unknown_api_key(bootstrap: str) -> str:
    """API key 1000, which no Kafka has: an ApiVersions v3 body under that key."""
    body = {"client_software_name": "kipwire", "client_software_version": "0"}
    return _unanswered_as(bootstrap, ApiKey.API_VERSIONS, 3, body, (NO_SUCH_API_KEY, 0))


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
    admin = admin_client(bootstrap)  # kept referenced: a collected client fails its futures
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
