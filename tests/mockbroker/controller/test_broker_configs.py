"""Broker configs (controller/broker_configs.py): a cluster refuses an unknown one or a bad
value with Kafka's message and the closest name, stores Kafka's log.* synonyms under the topic
config they default, and lets IncrementalAlterConfigs change only the dynamic ones."""

from __future__ import annotations

import pytest
from kafka_wire import WireClient, alter_cluster_default

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ConfigSource, ErrorCode
from kipwire.mockbroker import ConfigError, MockCluster
from kipwire.mockbroker.controller.broker_configs import (
    BROKER,
    check_cluster_config,
    dynamic_problem,
)
from kipwire.mockbroker.controller.configs import validate


def test_a_misspelt_config_names_the_one_meant():
    with pytest.raises(ConfigError, match=r"Did you mean 'min\.insync\.replicas'\?") as err:
        MockCluster(brokers=1, config={"min.insync.replica": "2"})  # refused before it starts
    assert "'min.insync.replica' was supplied but isn't a known config" in str(err.value)
    assert isinstance(err.value, ValueError)
    unlike_any = pytest.raises(ConfigError, check_cluster_config, {"zz": 1}).value
    assert "isn't a known config." in str(unlike_any) and "Did you mean" not in str(unlike_any)
    problem = validate("retention.msec", "1")
    assert problem == "Unknown topic config name: retention.msec. Did you mean 'retention.ms'?"


@pytest.mark.parametrize(
    ("name", "value"),
    [("num.partitions", "abc"), ("num.partitions", "0"), ("auto.create.topics.enable", "yes")],
)
def test_a_bad_value_is_refused_with_kafkas_message(name, value):
    with pytest.raises(ConfigError, match=rf"^Invalid value {value} for configuration {name}: "):
        check_cluster_config({name: value})


def test_log_synonyms_are_stored_as_the_topic_configs_they_default():
    config = check_cluster_config(
        {"log.retention.hours": 2, "log.segment.bytes": "2097152", "num.partitions": 4}
    )
    assert config == {"retention.ms": "7200000", "segment.bytes": "2097152", "num.partitions": "4"}
    assert check_cluster_config({"log.retention.minutes": "-1"}) == {"retention.ms": "-1"}


def test_which_broker_configs_may_change_while_running():
    assert dynamic_problem("num.partitions") is None
    assert dynamic_problem("min.insync.replicas") is None  # a topic config's cluster default
    assert dynamic_problem("log.dirs") == "Cannot update these configs dynamically: Set(log.dirs)"
    assert not BROKER["offsets.topic.replication.factor"].dynamic


def test_kafka_configs_add_config_num_partitions_applies_to_the_next_topic():
    with MockCluster(brokers=1) as cluster, WireClient(cluster.bootstrap_servers) as client:
        result = alter_cluster_default(client, "num.partitions", "4")
        assert result["error_code"] == ErrorCode.NONE
        metadata = client.call(ApiKey.METADATA, 12, {"topics": [{"name": "auto4"}]})
        assert len(metadata["topics"][0]["partitions"]) == 4  # auto-created with the new default
        cluster.create_topic("made", partitions=-1)
        assert cluster.describe_partition("made", 3)["leader"] == 1

        refused = alter_cluster_default(client, "log.dirs", "/tmp/x")
        assert refused["error_code"] == ErrorCode.INVALID_CONFIG
        assert refused["error_message"] == "Cannot update these configs dynamically: Set(log.dirs)"
        typo = alter_cluster_default(client, "num.partition", "4")
        assert typo["error_code"] == ErrorCode.INVALID_CONFIG
        assert "Did you mean 'num.partitions'?" in typo["error_message"]

        hours = alter_cluster_default(client, "log.retention.hours", "1")
        assert hours["error_code"] == ErrorCode.NONE
        described = client.call(
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {
                        "resource_type": ConfigResourceType.TOPIC,
                        "resource_name": "made",
                        "configuration_keys": ["retention.ms"],
                    }
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
        (entry,) = described["results"][0]["configs"]
        assert (entry["value"], entry["config_source"]) == (
            "3600000",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        )


#: what kafka-reassign-partitions --verify deletes on every broker once a move is done
THROTTLE_RATES = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)


def test_the_replication_throttles_are_dynamic_broker_configs():
    with MockCluster(brokers=1) as cluster, WireClient(cluster.bootstrap_servers) as client:
        response = client.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": ConfigResourceType.BROKER,
                        "resource_name": "1",
                        "configs": [
                            {"name": name, "config_operation": AlterConfigOp.DELETE, "value": None}
                            for name in THROTTLE_RATES
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
        assert response["responses"][0]["error_code"] == ErrorCode.NONE
        set_rate = alter_cluster_default(client, THROTTLE_RATES[0], "1048576")
        assert set_rate["error_code"] == ErrorCode.NONE
        negative = alter_cluster_default(client, THROTTLE_RATES[1], "-5")
        assert negative["error_code"] == ErrorCode.INVALID_CONFIG


def test_common_server_properties_settings_are_known_configs():
    common = {
        "log.cleaner.threads": "2",
        "log.cleaner.enable": "true",
        "background.threads": "4",
        "num.replica.fetchers": "2",
        "auto.leader.rebalance.enable": "false",
        "offsets.retention.minutes": "60",
    }
    assert check_cluster_config(common) == common
    with pytest.raises(ConfigError, match=r"^Invalid value -1 for configuration log\.cleaner"):
        check_cluster_config({"log.cleaner.threads": "-1"})
    # Kafka changes its log cleaner's threads while running; not whether it has one
    assert dynamic_problem("log.cleaner.threads") is None
    assert dynamic_problem("log.cleaner.enable") == (
        "Cannot update these configs dynamically: Set(log.cleaner.enable)"
    )
