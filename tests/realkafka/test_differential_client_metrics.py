"""Client-metrics subscriptions (KIP-714) against real Kafka 4.4.0: the same
IncrementalAlterConfigs get the same answers (Kafka's errors and messages), and the
subscriptions are described and listed (ListConfigResources) alike (names sorted: Kafka lists
them from a hash map)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka_harness import KafkaCluster
from realkafka_wire import call

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType
from kipwire.mockbroker import MockCluster

CM = ConfigResourceType.CLIENT_METRICS
#: (subscription, configs to set): this module's own names, removed from the real cluster after.
CHANGES: list[tuple[str, dict[str, str]]] = [
    ("diff-sub1", {"metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator"}),
    ("diff-sub1", {"interval.ms": "1000"}),
    ("diff-sub2", {"metrics": "*", "match": "client_id=abc.*,client_software_name=librdkafka"}),
    ("diff-empty-metrics", {"metrics": ""}),
    ("", {"metrics": "*"}),
    ("diff-bad", {"interval.ms": "50"}),
    ("diff-bad", {"interval.ms": "3600001"}),
    ("diff-bad", {"interval.ms": "abc"}),
    ("diff-bad", {"bogus": "1"}),
    ("diff-bad", {"match": "nonsense=1"}),
    ("diff-bad", {"match": "client_id=["}),
]
NAMES = ["diff-sub1", "diff-sub2", "diff-empty-metrics", "diff-never-set"]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as running:
        yield running


def _alter(port: int, name: str, configs: dict[str, str | None]) -> tuple[int, str | None]:
    ops = [
        {
            "name": k,
            "config_operation": AlterConfigOp.SET if v is not None else AlterConfigOp.DELETE,
            "value": v,
        }
        for k, v in configs.items()
    ]
    body = {
        "resources": [{"resource_type": CM, "resource_name": name, "configs": ops}],
        "validate_only": False,
    }
    (answer,) = call(port, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
    return answer.error_code, answer.error_message


def _answers(port: int) -> dict[str, Any]:
    altered = [_alter(port, name, configs) for name, configs in CHANGES]
    described = call(
        port,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": CM, "resource_name": n, "configuration_keys": None} for n in NAMES
            ],
            "include_synonyms": True,
            "include_documentation": True,
        },
    )
    listed = call(port, ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [CM]})
    listed_v0 = call(port, ApiKey.LIST_CONFIG_RESOURCES, 0, {})
    return {
        "alter": altered,
        "describe": [
            (
                r.resource_name,
                r.error_code,
                [
                    (
                        c.name,
                        c.value,
                        c.config_source,
                        c.config_type,
                        c.documentation,
                        [(s.name, s.value, s.source) for s in c.synonyms],
                    )
                    for c in r.configs
                ],
            )
            for r in described.results
        ],
        "list": sorted(
            (r.resource_name, r.resource_type)
            for r in listed.config_resources
            if r.resource_name.startswith("diff-")
        ),
        "list_v0": sorted(
            r.resource_name
            for r in listed_v0.config_resources
            if r.resource_name.startswith("diff-")
        ),
    }


def _undo(port: int) -> None:
    for name in ("diff-sub1", "diff-sub2", "diff-empty-metrics"):
        _alter(port, name, {"metrics": None, "interval.ms": None, "match": None})


def test_client_metrics_configs_alike(kafka_single: KafkaCluster, mock: MockCluster) -> None:
    real_port = kafka_single.nodes[0].broker_port
    try:
        real = _answers(real_port)
    finally:
        _undo(real_port)
    ours = _answers(int(mock.bootstrap_servers.rsplit(":", 1)[1]))
    assert ours["alter"] == real["alter"]
    assert ours["describe"] == real["describe"]
    assert ours["list"] == real["list"] and ours["list_v0"] == real["list_v0"]
    # the cases mean something: some refused, some subscriptions listed
    assert any(code for code, _ in real["alter"]) and real["list"]
