"""KIP-848 groups on the wire: ConsumerGroupHeartbeat and ConsumerGroupDescribe, member epochs
in OffsetCommit and OffsetFetch, and the group admin APIs on a consumer group."""

from __future__ import annotations

import pytest
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster

GROUP = "wire-group"


@pytest.fixture(scope="module")
def cluster():
    """One broker (so it coordinates every group) and topic t of three partitions."""
    with MockCluster(brokers=1) as running:
        running.create_topic("t", partitions=3)
        yield running


@pytest.fixture
def client(cluster):
    with WireClient(cluster.bootstrap_servers) as connection:
        yield connection


def _join(client: WireClient, member: str, group: str = GROUP) -> dict:
    return client.call(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        1,
        {
            "group_id": group,
            "member_id": member,
            "member_epoch": 0,
            "rebalance_timeout_ms": 5000,
            "subscribed_topic_names": ["t"],
            "topic_partitions": [],
        },
    )


def _leave(client: WireClient, member: str, group: str = GROUP) -> dict:
    return client.call(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        1,
        {"group_id": group, "member_id": member, "member_epoch": -1},
    )


def _commit(client: WireClient, member: str, epoch: int, group: str = GROUP) -> int:
    response = client.call(
        ApiKey.OFFSET_COMMIT,
        9,
        {
            "group_id": group,
            "generation_id_or_member_epoch": epoch,
            "member_id": member,
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 42}]}
            ],
        },
    )
    return response["topics"][0]["partitions"][0]["error_code"]


def test_join_describe_commit_and_leave(client):
    joined = _join(client, "m1")
    assert (joined["error_code"], joined["member_id"], joined["member_epoch"]) == (
        ErrorCode.NONE,
        "m1",
        1,
    )
    assert sorted(joined["assignment"]["topic_partitions"][0]["partitions"]) == [0, 1, 2]

    described = client.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [GROUP, "nope"]})
    group, missing = described["groups"]
    assert (group["group_state"], group["group_epoch"], group["assignor_name"]) == (
        "Stable",
        1,
        "uniform",
    )
    member = group["members"][0]
    assert (member["member_id"], member["member_type"], member["client_id"]) == ("m1", 1, "test")
    assert member["assignment"]["topic_partitions"][0]["topic_name"] == "t"
    assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    # Kafka 4.4's message, which kafka-consumer-groups --describe prints for an unknown group
    assert missing["error_message"] == "Group nope not found."

    assert _commit(client, "m1", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert _commit(client, "m1", 1) == ErrorCode.NONE
    fetched = client.call(
        ApiKey.OFFSET_FETCH,
        9,
        {"groups": [{"group_id": GROUP, "member_id": "m1", "member_epoch": 1, "topics": None}]},
    )["groups"][0]
    assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 42
    stale = client.call(
        ApiKey.OFFSET_FETCH,
        9,
        {"groups": [{"group_id": GROUP, "member_id": "m1", "member_epoch": 7, "topics": None}]},
    )["groups"][0]
    assert stale["error_code"] == ErrorCode.STALE_MEMBER_EPOCH
    assert _leave(client, "m1")["member_epoch"] == -1


def test_group_admin_sees_consumer_groups(client):
    group = "admin-group"
    _join(client, "m1", group)
    _commit(client, "m1", 1, group)

    listed = client.call(ApiKey.LIST_GROUPS, 5, {"types_filter": ["consumer"]})["groups"]
    assert {"group_id": group, "protocol_type": "consumer", "group_state": "Stable"}.items() <= (
        next(g for g in listed if g["group_id"] == group).items()
    )
    assert all(g["group_type"] == "consumer" for g in listed)
    classic_only = client.call(ApiKey.LIST_GROUPS, 5, {"types_filter": ["classic"]})["groups"]
    assert group not in [g["group_id"] for g in classic_only]

    v6 = client.call(ApiKey.DESCRIBE_GROUPS, 6, {"groups": [group]})["groups"][0]
    assert (v6["error_code"], v6["group_state"]) == (ErrorCode.GROUP_ID_NOT_FOUND, "Dead")
    assert v6["error_message"] == f"Group {group} is not a classic group."
    v5 = client.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group]})["groups"][0]
    assert (v5["error_code"], v5["group_state"]) == (ErrorCode.NONE, "Dead")

    joined_classic = client.call(
        ApiKey.JOIN_GROUP,
        9,
        {
            "group_id": group,
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": "",
            "protocol_type": "connect",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )
    # a classic member may join a consumer group (the migration), but only a consumer's
    assert joined_classic["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL

    delete_offsets = {
        "group_id": group,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}],
    }
    refused = client.call(ApiKey.OFFSET_DELETE, 0, delete_offsets)
    assert (
        refused["topics"][0]["partitions"][0]["error_code"] == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    )
    deleted = client.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})["results"][0]
    assert deleted["error_code"] == ErrorCode.NON_EMPTY_GROUP

    _leave(client, "m1", group)
    assert (
        client.call(ApiKey.OFFSET_DELETE, 0, delete_offsets)["topics"][0]["partitions"][0][
            "error_code"
        ]
        == ErrorCode.NONE
    )
    fetched = client.call(
        ApiKey.OFFSET_FETCH, 9, {"groups": [{"group_id": group, "topics": None}]}
    )["groups"][0]
    assert fetched["topics"] == []
    deleted = client.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})["results"][0]
    assert deleted["error_code"] == ErrorCode.NONE
    missing = client.call(ApiKey.OFFSET_DELETE, 0, delete_offsets)
    assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_offset_delete_on_classic_groups(client):
    group = "simple-group"
    simple = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 3}]}],
    }
    assert (
        client.call(ApiKey.OFFSET_COMMIT, 9, simple)["topics"][0]["partitions"][0]["error_code"]
        == ErrorCode.NONE
    )
    request = {"group_id": group, "topics": [{"name": "t", "partitions": [{"partition_index": 1}]}]}
    result = client.call(ApiKey.OFFSET_DELETE, 0, request)
    assert (result["error_code"], result["topics"][0]["partitions"][0]["error_code"]) == (
        ErrorCode.NONE,
        ErrorCode.NONE,
    )
    fetched = client.call(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}]})
    assert fetched["groups"][0]["topics"] == []
