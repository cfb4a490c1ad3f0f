"""Client telemetry (KIP-714) on a running mock: a subscription set as client-metrics configs
(IncrementalAlterConfigs), listed and described as Kafka 4.4.0 lists and describes it, and a
real librdkafka producer pushing metrics that `cluster.metrics()` then shows."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from kipwire.client import Connection
from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ConfigSource, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.metrics import prometheus_text

CM = ConfigResourceType.CLIENT_METRICS


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as running:
        running.create_topic("telemetry-t", partitions=1, replication_factor=1)
        yield running


def _set(address: str, name: str, **configs: str) -> tuple[int, str | None]:
    body = {
        "resources": [
            {
                "resource_type": CM,
                "resource_name": name,
                "configs": [
                    {"name": k.replace("_", "."), "config_operation": AlterConfigOp.SET, "value": v}
                    for k, v in configs.items()
                ],
            }
        ],
        "validate_only": False,
    }
    with Connection(address) as conn:
        (answer,) = conn.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
    return answer.error_code, answer.error_message


def test_subscription_configs_are_checked_listed_and_described(cluster: MockCluster) -> None:
    address = cluster.bootstrap_servers
    assert _set(address, "listed", metrics="org.apache.kafka.producer.", interval_ms="1000") == (
        ErrorCode.NONE,
        None,
    )
    assert _set(address, "bad", interval_ms="50")[0] == ErrorCode.INVALID_REQUEST
    assert _set(address, "bad", match="nonsense=1")[0] == ErrorCode.INVALID_CONFIG
    assert _set(address, "bad", bogus="1") == (
        ErrorCode.INVALID_REQUEST,
        "Unknown client metrics configuration: bogus",
    )
    assert _set(address, "", metrics="*")[0] == ErrorCode.INVALID_REQUEST
    with Connection(address) as conn:
        v0 = conn.call(ApiKey.LIST_CONFIG_RESOURCES, 0, {})
        v1 = conn.call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [CM]})
        unknown = conn.call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [1]})
        every = conn.call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": []})
        described = conn.call(
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {"resource_type": CM, "resource_name": n, "configuration_keys": None}
                    for n in ("listed", "never-set")
                ],
                "include_synonyms": False,
                "include_documentation": True,
            },
        )
    assert "listed" in [r.resource_name for r in v0.config_resources]
    assert "bad" not in [r.resource_name for r in v0.config_resources]
    assert [(r.resource_name, r.resource_type) for r in v1.config_resources] == [("listed", CM)]
    assert unknown.error_code == ErrorCode.UNSUPPORTED_VERSION
    kinds = {(r.resource_type, r.resource_name) for r in every.config_resources}
    assert {(ConfigResourceType.TOPIC, "telemetry-t"), (ConfigResourceType.BROKER, "1")} <= kinds
    listed, never = described.results
    assert [(c.name, c.value, c.config_source) for c in listed.configs] == [
        ("interval.ms", "1000", ConfigSource.CLIENT_METRICS_CONFIG),
        ("match", "", ConfigSource.DEFAULT_CONFIG),
        ("metrics", "org.apache.kafka.producer.", ConfigSource.CLIENT_METRICS_CONFIG),
    ]
    assert [(c.name, c.value) for c in never.configs] == [
        ("interval.ms", "300000"),
        ("match", ""),
        ("metrics", ""),
    ]


def test_a_client_matching_nothing_gets_an_empty_subscription() -> None:
    with (
        MockCluster(brokers=1) as fresh,
        Connection(fresh.bootstrap_servers, client_id="matches-nothing") as conn,
    ):
        _set(fresh.bootstrap_servers, "only-for-app", metrics="*", match="client_id=app-only")
        got = conn.call(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.UUID(int=0)}
        )
    assert got.error_code == ErrorCode.NONE
    assert got.requested_metrics == [] and got.push_interval_ms == 300_000


def test_a_real_client_pushes_metrics_that_cluster_metrics_shows(cluster: MockCluster) -> None:
    assert _set(cluster.bootstrap_servers, "everything", metrics="*", interval_ms="500")[0] == 0
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "client.id": "pushing-producer",
            "enable.metrics.push": True,
        }
    )
    pushed: dict = {}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not pushed:
        producer.produce("telemetry-t", b"v")
        producer.poll(0.2)
        pushed = {
            k: v
            for k, v in cluster.metrics()["client_telemetry"].items()
            if v["client_id"] == "pushing-producer"
        }
    assert producer.flush(10) == 0
    (seen,) = pushed.values()
    assert seen["client_software_name"] == "confluent-kafka-python"
    assert any(name.startswith("org.apache.kafka.producer.") for name in seen["metrics"])
    text = prometheus_text(cluster.metrics())
    assert "kipwire_client_org_apache_kafka_producer_" in text
    assert 'client_id="pushing-producer"' in text
