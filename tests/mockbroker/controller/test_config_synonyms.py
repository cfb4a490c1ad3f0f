"""Config synonyms (controller/config_synonyms.py): DescribeConfigs with IncludeSynonyms lists
where a config's value could come from, in Kafka's order, and the cluster default broker
resource lists only the configs set there dynamically, as Kafka 4.4 does."""

from __future__ import annotations

from kafka_wire import WireClient

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ConfigSource, ErrorCode
from kipwire.mockbroker import MockCluster

LONG_MAX = str(2**63 - 1)


def _set(client: WireClient, resource_type: int, name: str, config: str, value: str) -> None:
    op = {"name": config, "config_operation": AlterConfigOp.SET, "value": value}
    resource = {"resource_type": resource_type, "resource_name": name, "configs": [op]}
    body = {"resources": [resource], "validate_only": False}
    response = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert response["responses"][0]["error_code"] == ErrorCode.NONE, response


def _describe(
    client: WireClient, resource_type: int, name: str, keys: list[str] | None, synonyms: bool
) -> dict[str, tuple[str, int, list[tuple[str, str, int]]]]:
    """name -> (value, source, synonyms as (name, value, source))."""
    resource = {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}
    body = {"resources": [resource], "include_synonyms": synonyms, "include_documentation": False}
    (result,) = client.call(ApiKey.DESCRIBE_CONFIGS, 4, body)["results"]
    return {
        c["name"]: (
            c["value"],
            c["config_source"],
            [(s["name"], s["value"], s["source"]) for s in c["synonyms"]],
        )
        for c in result["configs"]
    }


def test_a_topic_config_lists_its_topic_dynamic_static_and_default_synonyms():
    config = {"log.segment.bytes": "2097152"}
    with (
        MockCluster(brokers=1, config=config) as cluster,
        WireClient(cluster.bootstrap_servers) as c,
    ):
        cluster.create_topic("t", config={"retention.ms": "100000"})
        _set(c, ConfigResourceType.BROKER, "", "log.retention.ms", "3600000")
        described = _describe(
            c, ConfigResourceType.TOPIC, "t", ["retention.ms", "segment.bytes"], True
        )
        assert described["retention.ms"] == (
            "100000",
            ConfigSource.DYNAMIC_TOPIC_CONFIG,
            [
                ("retention.ms", "100000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
                ("log.retention.ms", "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            ],
        )
        # the cluster's own config is Kafka's server.properties: a static broker config
        assert described["segment.bytes"] == (
            "2097152",
            ConfigSource.STATIC_BROKER_CONFIG,
            [
                ("log.segment.bytes", "2097152", ConfigSource.STATIC_BROKER_CONFIG),
                ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
            ],
        )
        # without IncludeSynonyms the same sources, no synonyms
        plain = _describe(c, ConfigResourceType.TOPIC, "t", ["retention.ms"], False)
        assert plain == {"retention.ms": ("100000", ConfigSource.DYNAMIC_TOPIC_CONFIG, [])}


def test_a_broker_config_lists_the_brokers_value_then_kafkas_default():
    with MockCluster(brokers=1) as cluster, WireClient(cluster.bootstrap_servers) as c:
        _set(c, ConfigResourceType.BROKER, "1", "message.max.bytes", "2000000")
        described = _describe(c, ConfigResourceType.BROKER, "1", ["message.max.bytes"], True)
        assert described == {
            "message.max.bytes": (
                "2000000",
                ConfigSource.DYNAMIC_BROKER_CONFIG,
                [
                    ("message.max.bytes", "2000000", ConfigSource.DYNAMIC_BROKER_CONFIG),
                    ("message.max.bytes", "1048588", ConfigSource.DEFAULT_CONFIG),
                ],
            )
        }


def test_the_cluster_default_lists_only_its_dynamic_configs_under_broker_names():
    config = {"num.partitions": 2}
    with (
        MockCluster(brokers=1, config=config) as cluster,
        WireClient(cluster.bootstrap_servers) as c,
    ):
        # the min.insync.replicas Kafka's format writes with ELR on (KIP-966), then no static
        # config (num.partitions)
        elr = _describe(c, ConfigResourceType.BROKER, "", None, True)
        _set(c, ConfigResourceType.BROKER, "", "log.retention.ms", "3600000")
        _set(c, ConfigResourceType.BROKER, "", "log.flush.interval.messages", LONG_MAX)
        described = _describe(c, ConfigResourceType.BROKER, "", None, True)
    dynamic = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    min_isr = {"min.insync.replicas": ("1", dynamic, [("min.insync.replicas", "1", dynamic)])}
    assert elr == min_isr
    assert described == {
        **min_isr,
        "log.retention.ms": ("3600000", dynamic, [("log.retention.ms", "3600000", dynamic)]),
        "log.flush.interval.messages": (
            LONG_MAX,
            dynamic,
            [("log.flush.interval.messages", LONG_MAX, dynamic)],
        ),
    }


def test_a_group_config_lists_the_groups_value_then_the_default():
    with MockCluster(brokers=1) as cluster, WireClient(cluster.bootstrap_servers) as c:
        _set(c, ConfigResourceType.GROUP, "g", "share.auto.offset.reset", "earliest")
        described = _describe(c, ConfigResourceType.GROUP, "g", ["share.auto.offset.reset"], True)
    assert described == {
        "share.auto.offset.reset": (
            "earliest",
            ConfigSource.GROUP_CONFIG,
            [
                ("share.auto.offset.reset", "earliest", ConfigSource.GROUP_CONFIG),
                ("share.auto.offset.reset", "latest", ConfigSource.DEFAULT_CONFIG),
            ],
        )
    }
