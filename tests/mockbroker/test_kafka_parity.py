"""Where the mock was made to answer as Kafka 4.1 does (the differences tests/realkafka found):
auto-creation off, max.message.bytes, config values, unserved APIs and versions, advertised
version ranges. tests/realkafka/test_differential_* runs the same mistakes against real Kafka."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_wire import WireClient

from kipwire.codec import (
    ApiKey,
    ConfigResourceType,
    ErrorCode,
    api_versions,
    decode_response,
    encode_request,
)
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster, Semantics
from kipwire.mockbroker.controller.configs import validate
from kipwire.mockbroker.handlers import HANDLERS
from kipwire.mockbroker.handlers.releases import (
    CLIENT_TELEMETRY,
    HELD_BACK,
    KAFKA_4_1_BROKER_VERSIONS,
)

RECORDED = Path(__file__).parents[1] / "realkafka" / "data" / "api_versions_kafka_4_1.json"
_EMPTY_FETCH = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "topics": []}


@pytest.fixture(scope="module")
def strict() -> Iterator[MockCluster]:
    """Three brokers configured as the real-Kafka harness configures its nodes, presenting
    Kafka 4.1 (the release these differences were found against; test_kafka_4_4 has 4.4's)."""
    with MockCluster(
        brokers=3, semantics=Semantics.KAFKA_4_1, config={"auto.create.topics.enable": "false"}
    ) as running:
        yield running


def _first(cluster: MockCluster) -> str:
    return cluster.bootstrap_servers.split(",")[0]


def _leader(cluster: MockCluster, topic: str) -> str:
    with WireClient(_first(cluster)) as client:
        body = client.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}]})
    ports = {b["node_id"]: b["port"] for b in body["brokers"]}
    return f"127.0.0.1:{ports[body['topics'][0]['partitions'][0]['leader_id']]}"


def _produce(cluster: MockCluster, topic: str, value: bytes) -> int:
    batch = build_batch([{"key": b"k", "value": value}])
    request = {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    with WireClient(_leader(cluster, topic)) as client:
        body = client.call(ApiKey.PRODUCE, 9, request)
    return body["responses"][0]["partition_responses"][0]["error_code"]


def _create(cluster: MockCluster, name: str, configs: dict[str, str]) -> int:
    topic = {
        "name": name,
        "num_partitions": 1,
        "replication_factor": 1,
        "configs": [{"name": k, "value": v} for k, v in configs.items()],
    }
    with WireClient(_first(cluster)) as client:
        body = client.call(ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 5000})
    return body["topics"][0]["error_code"]


def _closed_unanswered(cluster: MockCluster, frame: bytes) -> bool:
    with WireClient(_first(cluster)) as client:
        client.send_raw(struct.pack(">i", len(frame)) + frame)
        return client.receive_frame() == b""


def _request(
    api_key: int, version: int, body: dict, header: tuple[int, int] | None = None
) -> bytes:
    """A request frame, its header's (key, version) replaced by `header` when given."""
    frame = bytearray(encode_request(api_key, version, body, correlation_id=5, client_id="t"))
    if header is not None:
        frame[0:4] = struct.pack(">hh", *header)
    return bytes(frame)


# ---------------------------------------------------------------- auto.create.topics.enable


def test_metadata_does_not_create_topics_when_auto_creation_is_off(strict, topic_name):
    with WireClient(_first(strict)) as client:
        body = client.call(
            ApiKey.METADATA,
            12,
            {"topics": [{"name": topic_name}], "allow_auto_topic_creation": True},
        )
    assert body["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert strict.controller.state.topic(topic_name) is None


# ---------------------------------------------------------------- max.message.bytes


def test_a_batch_over_max_message_bytes_is_message_too_large(strict, topic_name):
    strict.create_topic(topic_name, partitions=1, config={"max.message.bytes": "1024"})
    assert _produce(strict, topic_name, b"x" * 4000) == ErrorCode.MESSAGE_TOO_LARGE
    assert _produce(strict, topic_name, b"x" * 100) == ErrorCode.NONE


def test_the_cluster_wide_message_max_bytes_applies_without_a_topic_config(topic_name):
    with MockCluster(brokers=1, config={"message.max.bytes": "2048"}) as small:
        small.create_topic(topic_name, partitions=1)
        assert _produce(small, topic_name, b"y" * 3000) == ErrorCode.MESSAGE_TOO_LARGE
        assert _produce(small, topic_name, b"y" * 1000) == ErrorCode.NONE


# ---------------------------------------------------------------- config values


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cleanup.policy", "bogus"),
        ("cleanup.policy", "compact,bogus"),
        ("min.insync.replicas", "0"),
        ("min.insync.replicas", "2147483648"),
        ("max.message.bytes", "-5"),
        ("max.message.bytes", "1e3"),
        ("retention.ms", "forever"),
        ("retention.ms", "-2"),
        ("unclean.leader.election.enable", "maybe"),
        ("compression.type", "bogus"),
        ("message.timestamp.type", "Now"),
        ("segment.bytes", "1000"),
        ("compression.gzip.level", "0"),
        ("compression.lz4.level", "18"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.cleanable.dirty.ratio", "nan"),
        ("leader.replication.throttled.replicas", "bogus"),
        ("remote.storage.enable", "true"),
        ("segment.ms", "0"),
    ],
)
def test_kafka_refuses_these_config_values(key, value):
    assert validate(key, value) is not None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cleanup.policy", "compact,delete"),
        ("cleanup.policy", "compact"),
        ("min.insync.replicas", " 2 "),
        ("retention.ms", "-1"),
        ("retention.ms", "9223372036854775807"),
        ("unclean.leader.election.enable", "TRUE"),
        ("compression.type", "zstd"),
        ("compression.type", "uncompressed"),
        ("segment.bytes", "1048576"),
        ("compression.gzip.level", "-1"),
        ("compression.zstd.level", "-131072"),
        ("min.cleanable.dirty.ratio", "0.9"),
        ("leader.replication.throttled.replicas", "*"),
        ("follower.replication.throttled.replicas", "0:1, 1:2"),
        ("local.retention.ms", "-2"),
        ("remote.storage.enable", "false"),
    ],
)
def test_kafka_accepts_these_config_values(key, value):
    assert validate(key, value) is None


def test_create_topics_with_a_bad_value_is_invalid_config(strict, topic_name):
    assert _create(strict, topic_name, {"cleanup.policy": "bogus"}) == ErrorCode.INVALID_CONFIG
    assert strict.controller.state.topic(topic_name) is None


def test_alter_configs_with_a_bad_value_is_invalid_config(strict, topic_name):
    strict.create_topic(topic_name, partitions=1)
    change = {"name": "compression.type", "config_operation": 0, "value": "bogus"}
    resource = {
        "resource_type": ConfigResourceType.TOPIC,
        "resource_name": topic_name,
        "configs": [change],
    }
    with WireClient(_first(strict)) as client:
        body = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource]})
    assert body["responses"][0]["error_code"] == ErrorCode.INVALID_CONFIG


# ---------------------------------------------------------------- unserved APIs and versions


@pytest.mark.parametrize(
    "frame",
    [
        _request(ApiKey.FETCH, 3, _EMPTY_FETCH),  # removed in Kafka 4.0 (KIP-896)
        _request(ApiKey.FETCH, 12, _EMPTY_FETCH, header=(ApiKey.FETCH, 99)),  # above the maximum
        _request(ApiKey.PRODUCE, 2, {"acks": 1, "timeout_ms": 1000, "topic_data": []}),
        _request(ApiKey.LEADER_AND_ISR, 0, {}),  # a ZooKeeper-era API
        _request(
            ApiKey.BROKER_HEARTBEAT, 1, {"broker_id": 9, "broker_epoch": 1}
        ),  # controller only
        _request(ApiKey.API_VERSIONS, 3, {}, header=(1000, 0)),  # no such API
    ],
    ids=["fetch-v3", "fetch-v99", "produce-v2", "leader-and-isr", "broker-heartbeat", "key-1000"],
)
def test_unserved_requests_close_the_connection_unanswered(strict, frame):
    assert _closed_unanswered(strict, frame)


def test_api_versions_above_its_maximum_gets_the_kip_511_v0_reply(strict):
    frame = _request(ApiKey.API_VERSIONS, 3, {}, header=(ApiKey.API_VERSIONS, 5))
    with WireClient(_first(strict)) as client:
        client.send_raw(struct.pack(">i", len(frame)) + frame)
        response = decode_response(client.receive_frame(), ApiKey.API_VERSIONS, 5)
    assert response.api_version == 0 and response.correlation_id == 5
    assert response.body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    # Kafka 4.1 lists ApiVersions' own range alone, the one the client must retry within
    listed = [(k["api_key"], k["min_version"], k["max_version"]) for k in response.body["api_keys"]]
    assert listed == [(ApiKey.API_VERSIONS, 0, 4)]


# ---------------------------------------------------------------- advertised ranges


def test_the_kafka_4_1_table_is_the_recorded_broker_listener():
    recorded = json.loads(RECORDED.read_text())["broker_listener"]
    assert {int(k): tuple(v) for k, v in recorded.items()} == KAFKA_4_1_BROKER_VERSIONS


def test_advertised_ranges_are_kafkas_within_the_codecs(strict):
    with WireClient(_first(strict)) as client:
        body = client.call(
            ApiKey.API_VERSIONS, 4, {"client_software_name": "t", "client_software_version": "1"}
        )
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    codec = {a["api_key"]: (a["min_version"], a["max_version"]) for a in api_versions("broker")}
    # Kafka lists KIP-714's telemetry APIs once a telemetry receiver is configured (the mock
    # always has one)
    kafka = {**KAFKA_4_1_BROKER_VERSIONS, **CLIENT_TELEMETRY}
    for key, (low, high) in ranges.items():
        kafka_low, kafka_high = kafka[key]
        held = HELD_BACK["4.1"].get(key, (kafka_high, ""))[0]  # EndTxn v5 under 4.1
        expected = (max(kafka_low, codec[key][0]), min(kafka_high, codec[key][1], held))
        assert (low, high) == expected, key
    # the ones that were off before: capped at Kafka's maximum, raised to Kafka's minimum
    assert ranges[2] == (1, 10) and ranges[8] == (2, 9) and ranges[9] == (1, 9)
    assert ranges[19] == (2, 7) and ranges[20] == (1, 6)


def test_produce_is_listed_from_v0_and_served_from_v3(strict, topic_name):
    handler = HANDLERS[ApiKey.PRODUCE]
    assert (handler.advertised_min, handler.min_version) == (0, 3)
    strict.create_topic(topic_name, partitions=1)
    assert _produce(strict, topic_name, b"v") == ErrorCode.NONE


# ---------------------------------------------------------------- forwarded to the controller


def test_elect_leaders_is_forwarded_to_the_controller(strict, topic_name):
    strict.create_topic(topic_name, partitions=1, replication_factor=3)
    request = {
        "election_type": 0,  # preferred
        "topic_partitions": [{"topic": topic_name, "partitions": [0]}],
        "timeout_ms": 5000,
    }
    with WireClient(_first(strict)) as client:
        body = client.call(ApiKey.ELECT_LEADERS, 2, request)
    (result,) = body["replica_election_results"]
    assert result["topic"] == topic_name
    # the preferred replica leads already: Kafka answers ELECTION_NOT_NEEDED
    assert result["partition_result"][0]["error_code"] == ErrorCode.ELECTION_NOT_NEEDED


def test_list_partition_reassignments_is_forwarded_to_the_controller(strict):
    with WireClient(_first(strict)) as client:
        body = client.call(
            ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 5000, "topics": None}
        )
    assert body["error_code"] == ErrorCode.NONE and body["topics"] == []


def test_metadata_version_is_finalized_as_kafka_always_does(strict):
    with WireClient(_first(strict)) as client:
        body = client.call(
            ApiKey.API_VERSIONS, 4, {"client_software_name": "t", "client_software_version": "1"}
        )
    finalized = {f["name"]: f["max_version_level"] for f in body["finalized_features"]}
    assert finalized["metadata.version"] == 27  # 4.1-IV1, the level the controller works at
    assert finalized["eligible.leader.replicas.version"] == 1


# ---------------------------------------------------------------- group and transaction coordinator


def _coordinator(cluster: MockCluster, key: str, key_type: int) -> str:
    with WireClient(_first(cluster)) as client:
        body = client.call(ApiKey.FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})
    assert body["error_code"] == ErrorCode.NONE
    return f"127.0.0.1:{body['port']}"


def test_a_generation_commit_to_a_group_that_does_not_exist_is_illegal_generation(
    strict, topic_name
):
    strict.create_topic(topic_name, partitions=1, replication_factor=1)
    partitions = [{"partition_index": 0, "committed_offset": 0}]

    def commit(generation: int, member_id: str) -> int:
        request = {
            "group_id": f"{topic_name}-group",
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "topics": [{"name": topic_name, "partitions": partitions}],
        }
        with WireClient(_coordinator(strict, f"{topic_name}-group", 0)) as client:
            body = client.call(ApiKey.OFFSET_COMMIT, 8, request)
        return body["topics"][0]["partitions"][0]["error_code"]

    assert commit(3, "no-such-member") == ErrorCode.ILLEGAL_GENERATION
    assert commit(-1, "") == ErrorCode.NONE  # a simple commit creates the group
    assert commit(3, "no-such-member") == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize(
    ("timeout_ms", "expected"),
    [
        (2**31 - 1, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
        (0, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
        (900_000, ErrorCode.NONE),
    ],
)
def test_a_transaction_timeout_is_bounded_by_transaction_max_timeout_ms(
    strict, topic_name, timeout_ms, expected
):
    request = {"transactional_id": topic_name, "transaction_timeout_ms": timeout_ms}
    with WireClient(_coordinator(strict, topic_name, 1)) as client:
        body = client.call(ApiKey.INIT_PRODUCER_ID, 4, request)
    assert body["error_code"] == expected
