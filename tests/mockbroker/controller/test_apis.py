"""The admin and feature APIs: CreateTopics, DeleteTopics, CreatePartitions, configs,
UpdateFeatures, ApiVersions, UnregisterBroker; every answer encodes at its version."""

from __future__ import annotations

import pytest
from controller_kit import (
    ELR,
    call,
    heartbeat,
    names,
    register,
    replay_cluster,
)

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ErrorCode, message
from kipwire.mockbroker.controller import Controller, Semantics

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER


def live_cluster(n: int = 3, semantics: Semantics = Semantics.KAFKA_4_1) -> Controller:
    """A controller with n registered, unfenced brokers, built through the APIs."""
    ctl = Controller(semantics=semantics)
    for b in range(1, n + 1):
        register(ctl, b)
        heartbeat(ctl, b)
    return ctl


def create(
    ctl: Controller,
    name: str = "t",
    partitions: int = 3,
    rf: int = 3,
    version: int = 7,
    configs=(),
    assignments=(),
):
    return call(
        ctl,
        ApiKey.CREATE_TOPICS,
        version,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": rf,
                    "assignments": list(assignments),
                    "configs": [{"name": k, "value": v} for k, v in configs],
                }
            ]
        },
    ).topics[0]


def test_create_topics_records_and_striped_placement() -> None:
    ctl = live_cluster()
    start = ctl.end_offset
    result = create(ctl, configs=[("min.insync.replicas", "2")])
    assert result.error_code == ErrorCode.NONE and result.num_partitions == 3
    assert names(ctl, start) == ["TopicRecord", "ConfigRecord"] + ["PartitionRecord"] * 3
    assert [ctl.partition("t", i).replicas for i in range(3)] == [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
    assert [ctl.partition("t", i).leader for i in range(3)] == [1, 2, 3]
    assert ctl.partition("t", 0).topic_id == result.topic_id
    assert ctl.min_isr("t") == 2


def test_create_topics_skips_fenced_brokers_and_refuses_too_large_rf() -> None:
    ctl = live_cluster()
    ctl.fence(3)
    assert create(ctl, rf=3).error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert create(ctl, rf=2, partitions=2).error_code == ErrorCode.NONE
    assert all(3 not in ctl.partition("t", i).replicas for i in range(2))


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"name": "bad name!"}, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ({"partitions": 0}, ErrorCode.INVALID_PARTITIONS),
        ({"rf": 0}, ErrorCode.INVALID_REPLICATION_FACTOR),
        ({"configs": [("min.insync.replicas", "zero")]}, ErrorCode.INVALID_CONFIG),
        ({"configs": [("no.such.config", "1")]}, ErrorCode.INVALID_CONFIG),
        (
            {
                "partitions": -1,
                "rf": -1,
                "assignments": [{"partition_index": 0, "broker_ids": [1, 9]}],
            },
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ),
    ],
)
def test_create_topics_refusals_write_nothing(kwargs: dict, code: int) -> None:
    ctl = live_cluster()
    start = ctl.end_offset
    assert create(ctl, **kwargs).error_code == code
    assert ctl.end_offset == start


def test_create_topics_manual_assignment_and_duplicates() -> None:
    ctl = live_cluster()
    result = create(
        ctl,
        partitions=-1,
        rf=-1,
        assignments=[
            {"partition_index": 0, "broker_ids": [3, 1]},
            {"partition_index": 1, "broker_ids": [2]},
        ],
    )
    assert result.error_code == ErrorCode.NONE
    assert ctl.partition("t", 0).replicas == [3, 1] and ctl.partition("t", 0).leader == 3
    assert create(ctl).error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    resp = call(
        ctl,
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [
                {"name": "d", "num_partitions": 1, "replication_factor": 1},
                {"name": "d", "num_partitions": 1, "replication_factor": 1},
            ]
        },
    )
    assert [t.error_code for t in resp.topics] == [ErrorCode.INVALID_REQUEST] * 2


def test_create_topics_validate_only() -> None:
    ctl = live_cluster()
    start = ctl.end_offset
    resp = call(
        ctl,
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [{"name": "v", "num_partitions": 1, "replication_factor": 1}],
            "validate_only": True,
        },
    )
    assert resp.topics[0].error_code == ErrorCode.NONE and ctl.end_offset == start


def test_delete_topics_by_name_and_id() -> None:
    ctl = live_cluster()
    create(ctl, "a", configs=[("min.insync.replicas", "2")])
    b = create(ctl, "b")
    resp = call(ctl, ApiKey.DELETE_TOPICS, 5, {"topic_names": ["a", "zz"], "timeout_ms": 1000})
    assert [r.error_code for r in resp.responses] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert (
        ctl.state.topic("a") is None and ctl.state.config(TOPIC, "a", "min.insync.replicas") is None
    )
    resp = call(
        ctl,
        ApiKey.DELETE_TOPICS,
        6,
        {"topics": [{"name": None, "topic_id": b.topic_id}], "timeout_ms": 1000},
    )
    assert resp.responses[0].error_code == ErrorCode.NONE and resp.responses[0].name == "b"
    assert ctl.log[-1].name == "RemoveTopicRecord"
    resp = call(
        ctl,
        ApiKey.DELETE_TOPICS,
        6,
        {"topics": [{"name": None, "topic_id": b.topic_id}], "timeout_ms": 1000},
    )
    assert resp.responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_create_partitions() -> None:
    ctl = live_cluster()
    create(ctl, partitions=1)
    resp = call(
        ctl,
        ApiKey.CREATE_PARTITIONS,
        3,
        {
            "topics": [{"name": "t", "count": 3, "assignments": None}],
            "timeout_ms": 1000,
            "validate_only": False,
        },
    )
    assert resp.results[0].error_code == ErrorCode.NONE
    assert ctl.partition("t", 2).replicas == [3, 1, 2]
    resp = call(
        ctl,
        ApiKey.CREATE_PARTITIONS,
        3,
        {
            "topics": [
                {"name": "t", "count": 2, "assignments": None},
                {"name": "x", "count": 2, "assignments": None},
            ],
            "timeout_ms": 1000,
            "validate_only": False,
        },
    )
    assert [r.error_code for r in resp.results] == [
        ErrorCode.INVALID_PARTITIONS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]


@pytest.mark.parametrize("version", [0, 1, 4])
def test_describe_configs_resolves_topic_cluster_default(version: int) -> None:
    ctl = replay_cluster(min_isr=2)
    ctl.append(
        "ConfigRecord",
        {
            "resource_type": ConfigResourceType.BROKER,
            "resource_name": "",
            "name": "unclean.leader.election.enable",
            "value": "true",
        },
    )
    resp = call(
        ctl,
        ApiKey.DESCRIBE_CONFIGS,
        version,
        {
            "resources": [
                {
                    "resource_type": ConfigResourceType.TOPIC,
                    "resource_name": "t",
                    "configuration_keys": None,
                },
                {
                    "resource_type": ConfigResourceType.TOPIC,
                    "resource_name": "nope",
                    "configuration_keys": None,
                },
            ]
        },
    )
    got = {c.name: c.value for c in resp.results[0].configs}
    assert got["min.insync.replicas"] == "2"
    assert got["unclean.leader.election.enable"] == "true"
    assert got["cleanup.policy"] == "delete"
    assert resp.results[1].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_alter_configs_replaces_the_whole_set() -> None:
    ctl = replay_cluster(min_isr=2, elr_enabled=False)
    resp = call(
        ctl,
        ApiKey.ALTER_CONFIGS,
        2,
        {
            "resources": [
                {
                    "resource_type": ConfigResourceType.TOPIC,
                    "resource_name": "t",
                    "configs": [{"name": "retention.ms", "value": "1000"}],
                }
            ],
            "validate_only": False,
        },
    )
    assert resp.responses[0].error_code == ErrorCode.NONE
    assert ctl.state.configs[(TOPIC, "t")] == {"retention.ms": "1000"}


def test_update_features_errors_are_all_or_nothing() -> None:
    ctl = replay_cluster(elr_enabled=False)
    start = ctl.end_offset
    resp = call(
        ctl,
        ApiKey.UPDATE_FEATURES,
        1,
        {
            "feature_updates": [
                {"feature": ELR, "max_version_level": 1, "upgrade_type": 1},
                {"feature": "no.such.feature", "max_version_level": 1, "upgrade_type": 1},
            ]
        },
    )
    assert resp.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert [r.error_code for r in resp.results] == [
        ErrorCode.NONE,
        ErrorCode.INVALID_UPDATE_VERSION,
    ]
    assert ctl.end_offset == start
    resp = call(
        ctl,
        ApiKey.UPDATE_FEATURES,
        1,
        {
            "feature_updates": [
                {"feature": "metadata.version", "max_version_level": 20, "upgrade_type": 1}
            ]
        },
    )
    assert resp.error_code == ErrorCode.INVALID_UPDATE_VERSION  # a downgrade without leave
    low = replay_cluster(elr_enabled=False, metadata_version=20)
    resp = call(
        low,
        ApiKey.UPDATE_FEATURES,
        2,
        {"feature_updates": [{"feature": ELR, "max_version_level": 1, "upgrade_type": 1}]},
    )
    assert resp.error_code == ErrorCode.INVALID_UPDATE_VERSION


def test_api_versions_lists_served_apis_and_finalized_features() -> None:
    ctl = replay_cluster()
    resp = call(
        ctl, ApiKey.API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"}
    )
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[ApiKey.ALTER_PARTITION] == (0, 3)
    assert keys[ApiKey.BROKER_REGISTRATION] == (0, 4)
    assert keys[ApiKey.ELECT_LEADERS] == (0, 2)
    finalized = {f.name: f.max_version_level for f in resp.finalized_features}
    assert finalized == {ELR: 1, "metadata.version": 27}  # replay_cluster runs KAFKA_4_1
    kip = call(Controller(semantics=Semantics.KIP), ApiKey.API_VERSIONS, 0, {})
    assert {k.api_key: k.max_version for k in kip.api_keys}[ApiKey.ELECT_LEADERS] == 3


def test_every_response_encodes_at_its_version() -> None:
    """Answers cross the wire (`call` encodes them at the request's version and decodes them);
    re-encoding what a client reads must work at every version."""
    ctl = live_cluster()
    create(ctl)
    bodies = {
        ApiKey.CREATE_TOPICS: {
            "topics": [{"name": "e", "num_partitions": 1, "replication_factor": 1}]
        },
        ApiKey.DELETE_TOPICS: {"topic_names": ["nope"], "topics": []},
        ApiKey.DESCRIBE_CONFIGS: {
            "resources": [
                {
                    "resource_type": ConfigResourceType.TOPIC,
                    "resource_name": "t",
                    "configuration_keys": None,
                }
            ]
        },
        ApiKey.CREATE_PARTITIONS: {"topics": [{"name": "t", "count": 1, "assignments": None}]},
        ApiKey.API_VERSIONS: {},
    }
    for api_key, body in bodies.items():
        versions = {
            ApiKey.CREATE_TOPICS: 8,
            ApiKey.DELETE_TOPICS: 7,
            ApiKey.DESCRIBE_CONFIGS: 5,
            ApiKey.CREATE_PARTITIONS: 4,
            ApiKey.API_VERSIONS: 5,
        }
        for version in range(0, versions[api_key]):
            fields = dict(body)
            if api_key == ApiKey.DELETE_TOPICS:
                fields.pop("topics" if version < 6 else "topic_names")
            if api_key == ApiKey.CREATE_TOPICS:
                fields = {"topics": [dict(fields["topics"][0], name=f"e{version}")]}
            resp = call(ctl, api_key, version, fields)
            name = api_key.api_name
            codec = message(f"{name}Response", version)
            assert codec.parse(codec.build(resp)) == resp, (name, version)


@pytest.mark.parametrize(
    ("resource", "op", "code"),
    [
        ((TOPIC, "t"), AlterConfigOp.APPEND, ErrorCode.INVALID_CONFIG),  # on a scalar config
        ((TOPIC, "t"), AlterConfigOp.SUBTRACT, ErrorCode.INVALID_CONFIG),  # likewise
        ((TOPIC, "nope"), AlterConfigOp.SET, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ((BROKER, "abc"), AlterConfigOp.SET, ErrorCode.INVALID_REQUEST),
        ((ConfigResourceType.BROKER_LOGGER, "x"), AlterConfigOp.SET, ErrorCode.INVALID_REQUEST),
        ((BROKER, ""), AlterConfigOp.SET, ErrorCode.NONE),
    ],
)
def test_incremental_alter_configs_refusals(resource: tuple, op: int, code: int) -> None:
    ctl = replay_cluster(elr_enabled=False)
    start = ctl.end_offset
    resp = call(
        ctl,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": resource[0],
                    "resource_name": resource[1],
                    "configs": [{"name": "retention.ms", "config_operation": op, "value": "5"}],
                }
            ],
            "validate_only": False,
        },
    )
    assert resp.responses[0].error_code == code
    assert (ctl.end_offset == start) is (code != ErrorCode.NONE)


@pytest.mark.parametrize("semantics", [Semantics.KAFKA_4_4, Semantics.KAFKA_4_1])
def test_topic_configs_are_the_releases(semantics: Semantics) -> None:
    ctl = replay_cluster(semantics)
    resource = {
        "resource_type": ConfigResourceType.TOPIC,
        "resource_name": "t",
        "configuration_keys": None,
    }
    resp = call(ctl, ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [resource]})
    described = {c.name: c.value for c in resp.results[0].configs}
    # what kafka-storage 4.4.0's LogConfig added since 4.1, with its defaults
    added = {
        "errors.deadletterqueue.group.enable": "false",
        "max.decompressed.message.bytes": "2147483639",
        "remote.copy.lag.bytes": "-1",
        "remote.copy.lag.ms": "0",
    }
    if semantics.release == "4.4":
        assert described.items() >= added.items()
    else:
        assert not set(added) & set(described)
    topic = {
        "name": "big",
        "num_partitions": 1,
        "replication_factor": 1,
        "assignments": [],
        "configs": [{"name": "max.decompressed.message.bytes", "value": "0"}],
    }
    created = call(ctl, ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 0})
    # below Kafka 4.4's minimum of 1, or unknown to 4.1: refused either way, with the reason
    (result,) = created.topics
    assert result.error_code == ErrorCode.INVALID_CONFIG
    reason = "must be an integer" if semantics.release == "4.4" else "unknown config"
    assert reason in result.error_message


def test_features_the_mock_leaves_unset_cannot_be_finalized() -> None:
    # Kafka 4.4 takes share.version 2; the mock serves no share-group API, so its controller
    # refuses the level rather than tell clients to use a protocol no broker answers
    ctl = replay_cluster(Semantics.KAFKA_4_4)
    update = {"feature": "share.version", "max_version_level": 2, "upgrade_type": 1}
    resp = call(ctl, ApiKey.UPDATE_FEATURES, 2, {"feature_updates": [update]})
    assert resp.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "share.version" in resp.error_message
