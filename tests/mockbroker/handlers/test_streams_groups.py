"""Streams groups on the wire (KIP-1071, KIP-1331): a member registers the word count's topology,
the coordinator creates its internal topics and assigns tasks, asks for and keeps the topology
description, commits are checked against member epochs, and group admin sees the group."""

from __future__ import annotations

import uuid

import pytest
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.handlers.streams_groups import DESCRIPTION_STORE

JOIN = {"process_id": "p1", "rebalance_timeout_ms": 30000}
JOIN_TASKS = {"active_tasks": [], "standby_tasks": [], "warmup_tasks": []}

HEARTBEAT_V = 1


@pytest.fixture(scope="module")
def cluster():
    """One broker that keeps topology descriptions (the mock's stand-in for Kafka's plugin)."""
    with MockCluster(brokers=1, config={DESCRIPTION_STORE: "true"}) as running:
        yield running


@pytest.fixture
def client(cluster):
    with WireClient(cluster.bootstrap_servers) as wire:
        yield wire


def _info(name: str) -> dict:
    return {"name": name, "partitions": 0, "replication_factor": 0, "topic_configs": []}


def _topology(app: str, source: str) -> dict:
    return {
        "epoch": 1,
        "subtopologies": [
            {
                "subtopology_id": "0",
                "source_topics": [source],
                "repartition_sink_topics": [f"{app}-counts-repartition"],
            },
            {
                "subtopology_id": "1",
                "repartition_source_topics": [_info(f"{app}-counts-repartition")],
                "state_changelog_topics": [_info(f"{app}-counts-changelog")],
            },
        ],
    }


def _heartbeat(client: WireClient, app: str, member: str, epoch: int, **fields) -> dict:
    body = {
        "group_id": app,
        "member_id": member,
        "member_epoch": epoch,
        "endpoint_information_epoch": 0,
        **fields,
    }
    return client.call(ApiKey.STREAMS_GROUP_HEARTBEAT, HEARTBEAT_V, body)


def _partitions(client: WireClient, topic: str) -> int:
    body = {
        "topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    (found,) = client.call(ApiKey.METADATA, 12, body)["topics"]
    return len(found["partitions"]) if found["error_code"] == ErrorCode.NONE else -1


def test_join_creates_internal_topics_and_assigns_tasks(cluster, client, topic_name):
    app = f"app-{topic_name}"
    missing = _heartbeat(
        client, app, "m1", 0, topology=_topology(app, topic_name), **JOIN, **JOIN_TASKS
    )
    assert missing["error_code"] == ErrorCode.NONE
    assert [s["status_code"] for s in missing["status"]] == [1]  # MISSING_SOURCE_TOPICS
    assert missing["active_tasks"] == []
    cluster.create_topic(topic_name, partitions=2)
    joined = _heartbeat(client, app, "m1", missing["member_epoch"])
    assert joined["status"] == []
    assert joined["active_tasks"] == [
        {"subtopology_id": "0", "partitions": [0, 1]},
        {"subtopology_id": "1", "partitions": [0, 1]},
    ]
    assert _partitions(client, f"{app}-counts-repartition") == 2
    assert _partitions(client, f"{app}-counts-changelog") == 2
    assert joined["topology_description_required"] is True
    update = {
        "group_id": app,
        "member_id": "m1",
        "topology_epoch": 1,
        "topology_description": {
            "subtopologies": [{"subtopology_id": "0", "nodes": []}],
            "global_stores": [],
        },
    }
    stale = client.call(
        ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, {**update, "topology_epoch": 9}
    )
    assert stale["error_code"] == ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH
    ok = client.call(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, update)
    assert ok["error_code"] == ErrorCode.NONE
    again = _heartbeat(client, app, "m1", joined["member_epoch"])
    assert again["topology_description_required"] is False and again["active_tasks"] is None

    body = {"group_ids": [app], "include_authorized_operations": False}
    (group,) = client.call(
        ApiKey.STREAMS_GROUP_DESCRIBE, 1, {**body, "include_topology_description": True}
    )["groups"]
    assert (group["error_code"], group["group_state"]) == (ErrorCode.NONE, "Stable")
    assert group["topology"]["epoch"] == 1
    assert group["topology_description"]["subtopologies"][0]["subtopology_id"] == "0"
    (member,) = group["members"]
    assert member["process_id"] == "p1" and member["member_epoch"] == joined["member_epoch"]

    listed = client.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["streams"]})
    assert {(g["group_id"], g["group_type"]) for g in listed["groups"]} >= {(app, "streams")}


def test_commits_are_checked_against_member_epochs(cluster, client, topic_name):
    app = f"app-{topic_name}"
    cluster.create_topic(topic_name, partitions=1)
    joined = _heartbeat(
        client, app, "m1", 0, topology=_topology(app, topic_name), **JOIN, **JOIN_TASKS
    )

    def commit(epoch: int) -> int:
        body = {
            "group_id": app,
            "generation_id_or_member_epoch": epoch,
            "member_id": "m1",
            "topics": [
                {"name": topic_name, "partitions": [{"partition_index": 0, "committed_offset": 5}]}
            ],
        }
        reply = client.call(ApiKey.OFFSET_COMMIT, 9, body)
        return reply["topics"][0]["partitions"][0]["error_code"]

    assert commit(joined["member_epoch"] + 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(joined["member_epoch"]) == ErrorCode.NONE
    fetched = client.call(
        ApiKey.OFFSET_FETCH,
        9,
        {"groups": [{"group_id": app, "topics": None}], "require_stable": False},
    )
    (topic,) = fetched["groups"][0]["topics"]
    assert topic["partitions"][0]["committed_offset"] == 5
    delete = {"groups_names": [app]}
    assert client.call(ApiKey.DELETE_GROUPS, 2, delete)["results"][0]["error_code"] == (
        ErrorCode.NON_EMPTY_GROUP
    )
    assert _heartbeat(client, app, "m1", -1)["member_epoch"] == -1
    assert client.call(ApiKey.DELETE_GROUPS, 2, delete)["results"][0]["error_code"] == (
        ErrorCode.NONE
    )


def test_join_checks_and_answers_as_kafka_4_4(client, topic_name):
    app = f"app-{topic_name}"
    topology = _topology(app, topic_name)
    no_tasks = _heartbeat(client, app, "m1", 0, topology=topology, **JOIN)
    assert no_tasks["error_message"] == "ActiveTasks must be empty when (re-)joining."
    # an error answer has every field at its default: no member id, epoch 0, status []
    assert (no_tasks["member_id"], no_tasks["member_epoch"], no_tasks["status"]) == ("", 0, [])
    no_timeout = _heartbeat(client, app, "m1", 0, topology=topology, process_id="p", **JOIN_TASKS)
    assert no_timeout["error_message"] == "RebalanceTimeoutMs must be provided in first request."
    no_topology = _heartbeat(client, app, "m1", 0, **JOIN, **JOIN_TASKS)
    assert no_topology["error_message"] == "Topology must be non-null when (re-)joining."
    unknown = _heartbeat(client, app, "m9", 4)
    assert unknown["error_message"] == f"Member m9 is not a member of group {app}."


def test_without_a_description_store_kafka_4_4_keeps_no_descriptions(topic_name):
    """Kafka 4.4.0 has no built-in topology description store (KIP-1331 leaves it to a plugin):
    heartbeats never ask for one, an update is UNSUPPORTED_VERSION, describe says NOT_STORED."""
    with MockCluster(brokers=1) as plain, WireClient(plain.bootstrap_servers) as client:
        plain.create_topic(topic_name, partitions=1)
        app = f"plain-{topic_name}"
        topology = _topology(app, topic_name)
        joined = _heartbeat(client, app, "m1", 0, topology=topology, **JOIN, **JOIN_TASKS)
        assert joined["topology_description_required"] is False
        update = {
            "group_id": app,
            "member_id": "m1",
            "topology_epoch": 1,
            "topology_description": {"subtopologies": [], "global_stores": []},
        }
        refused = client.call(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, update)
        assert refused["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        assert refused["error_message"] == (
            "The broker has no streams group topology description plugin configured."
        )
        body = {
            "group_ids": [app],
            "include_authorized_operations": False,
            "include_topology_description": True,
        }
        (group,) = client.call(ApiKey.STREAMS_GROUP_DESCRIBE, 1, body)["groups"]
        assert (group["topology_description"], group["topology_description_status"]) == (None, 1)
        # the described topology carries the internal topics' partition counts as created
        changelog = group["topology"]["subtopologies"][1]["state_changelog_topics"][0]
        assert (changelog["name"], changelog["partitions"]) == (f"{app}-counts-changelog", 1)


def test_known_difference_tasks_at_once(cluster, client, topic_name):
    """Kafka 4.4.0 answers a first member with ASSIGNMENT_DELAYED (group.streams.initial
    .rebalance.delay.ms, 3 s) and MISSING_INTERNAL_TOPICS while it creates them, and assigns the
    tasks a few heartbeats later (seen on the wire). The mock creates the internal topics before
    it answers and has no initial delay (as its classic groups by default): tasks come at once."""
    cluster.create_topic(topic_name, partitions=1)
    app = f"app-{topic_name}"
    topology = _topology(app, topic_name)
    joined = _heartbeat(client, app, "m1", 0, topology=topology, **JOIN, **JOIN_TASKS)
    assert joined["status"] == []
    assert joined["active_tasks"] == [
        {"subtopology_id": "0", "partitions": [0]},
        {"subtopology_id": "1", "partitions": [0]},
    ]


def test_an_empty_classic_group_becomes_the_streams_group_with_its_offsets(
    cluster, client, topic_name
):
    cluster.create_topic(topic_name, partitions=1)
    app = f"app-{topic_name}"
    simple = {
        "group_id": app,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {"name": topic_name, "partitions": [{"partition_index": 0, "committed_offset": 9}]}
        ],
    }
    (committed,) = client.call(ApiKey.OFFSET_COMMIT, 9, simple)["topics"][0]["partitions"]
    assert committed["error_code"] == ErrorCode.NONE
    topology = _topology(app, topic_name)
    joined = _heartbeat(client, app, "m1", 0, topology=topology, **JOIN, **JOIN_TASKS)
    assert joined["error_code"] == ErrorCode.NONE
    fetched = client.call(
        ApiKey.OFFSET_FETCH,
        9,
        {"groups": [{"group_id": app, "topics": None}], "require_stable": False},
    )
    assert fetched["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 9
    listed = client.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    assert [g["group_type"] for g in listed["groups"] if g["group_id"] == app] == ["streams"]
