"""Every kind of group side by side on one broker: classic, KIP-848 consumer, KIP-932 share and
KIP-1071 streams groups share one namespace of ids, the group admin APIs cover them all, member
epochs guard the offsets of consumer and streams groups alike, and a consumer group's session
and heartbeat settings are group configs as a share or streams group's are."""

from __future__ import annotations

import pytest
from kafka_wire import WireClient

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ErrorCode
from kipwire.mockbroker import MockCluster

TOPIC = "kinds"


@pytest.fixture(scope="module")
def cluster():
    """One broker (it coordinates every group) and a topic of two partitions."""
    with MockCluster(brokers=1) as running:
        running.create_topic(TOPIC, partitions=2)
        yield running


@pytest.fixture
def client(cluster):
    with WireClient(cluster.bootstrap_servers) as connection:
        yield connection


def _consumer(client: WireClient, group: str, member: str, epoch: int = 0) -> dict:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "rebalance_timeout_ms": 5000,
        "subscribed_topic_names": [TOPIC],
        "topic_partitions": [],
    }
    if epoch == -1:
        body = {"group_id": group, "member_id": member, "member_epoch": -1}
    return client.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)


def _share(client: WireClient, group: str, member: str, epoch: int = 0) -> dict:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "subscribed_topic_names": [TOPIC] if epoch == 0 else None,
    }
    return client.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)


def _streams(client: WireClient, group: str, member: str, epoch: int = 0) -> dict:
    body: dict = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "endpoint_information_epoch": 0,
    }
    if epoch == 0:
        body.update(
            process_id="p1",
            rebalance_timeout_ms=30000,
            active_tasks=[],
            standby_tasks=[],
            warmup_tasks=[],
            topology={
                "epoch": 1,
                "subtopologies": [{"subtopology_id": "0", "source_topics": [TOPIC]}],
            },
        )
    return client.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, body)


def _classic_commit(client: WireClient, group: str) -> None:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }
    (part,) = client.call(ApiKey.OFFSET_COMMIT, 9, body)["topics"][0]["partitions"]
    assert part["error_code"] == ErrorCode.NONE


def test_group_admin_lists_describes_and_deletes_every_kind(client):
    kinds = {"classic": "k-classic", "consumer": "k-consumer", "share": "k-share"}
    kinds["streams"] = "k-streams"
    _classic_commit(client, kinds["classic"])
    assert _consumer(client, kinds["consumer"], "c1")["error_code"] == ErrorCode.NONE
    assert _share(client, kinds["share"], "s1")["error_code"] == ErrorCode.NONE
    assert _streams(client, kinds["streams"], "t1")["error_code"] == ErrorCode.NONE

    listed = client.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    by_id = {g["group_id"]: g for g in listed["groups"]}
    for kind, group in kinds.items():
        assert by_id[group]["group_type"] == kind
        if kind != "classic":
            assert by_id[group]["protocol_type"] == kind
    only = {"states_filter": [], "types_filter": ["Share", "streams"]}
    filtered = client.call(ApiKey.LIST_GROUPS, 5, only)["groups"]
    assert {g["group_id"] for g in filtered} >= {kinds["share"], kinds["streams"]}
    assert {g["group_type"] for g in filtered} == {"share", "streams"}

    asked = [kinds["consumer"], kinds["share"], kinds["streams"], "k-nobody"]
    body = {"groups": asked, "include_authorized_operations": False}
    v6 = client.call(ApiKey.DESCRIBE_GROUPS, 6, body)["groups"]
    assert [(g["error_code"], g["error_message"]) for g in v6] == [
        (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {kinds['consumer']} is not a classic group."),
        (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {kinds['share']} is not a classic group."),
        (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {kinds['streams']} is not a classic group."),
        (ErrorCode.GROUP_ID_NOT_FOUND, "Group k-nobody not found."),
    ]
    v5 = client.call(ApiKey.DESCRIBE_GROUPS, 5, body)["groups"]
    assert [(g["error_code"], g["group_state"]) for g in v5] == [(ErrorCode.NONE, "Dead")] * 4

    names = {"groups_names": list(kinds.values())}
    busy = client.call(ApiKey.DELETE_GROUPS, 2, names)["results"]
    assert [r["error_code"] for r in busy] == [
        ErrorCode.NONE,  # the classic group has no members
        ErrorCode.NON_EMPTY_GROUP,
        ErrorCode.NON_EMPTY_GROUP,
        ErrorCode.NON_EMPTY_GROUP,
    ]
    assert _consumer(client, kinds["consumer"], "c1", -1)["error_code"] == ErrorCode.NONE
    assert _share(client, kinds["share"], "s1", -1)["error_code"] == ErrorCode.NONE
    assert _streams(client, kinds["streams"], "t1", -1)["error_code"] == ErrorCode.NONE
    deleted = client.call(ApiKey.DELETE_GROUPS, 2, names)["results"]
    assert [r["error_code"] for r in deleted] == [
        ErrorCode.GROUP_ID_NOT_FOUND,  # deleted above
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.NONE,
    ]
    listed = client.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    assert not {g["group_id"] for g in listed["groups"]} & set(kinds.values())


def test_a_group_id_belongs_to_one_kind(client):
    assert _consumer(client, "one-consumer", "c1")["error_code"] == ErrorCode.NONE
    assert _share(client, "one-share", "s1")["error_code"] == ErrorCode.NONE
    assert _streams(client, "one-streams", "t1")["error_code"] == ErrorCode.NONE
    refused = [
        (_consumer(client, "one-share", "x"), "consumer"),
        (_consumer(client, "one-streams", "x"), "consumer"),
        (_share(client, "one-consumer", "x"), "share"),
        (_share(client, "one-streams", "x"), "share"),
        (_streams(client, "one-consumer", "x"), "streams"),
        (_streams(client, "one-share", "x"), "streams"),
    ]
    for reply, kind in refused:
        assert reply["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND, kind
        assert reply["error_message"].endswith(f"is not a {kind} group."), reply


def _fetch(client: WireClient, group: str, member: str | None, epoch: int) -> dict:
    request = {"group_id": group, "member_id": member, "member_epoch": epoch, "topics": None}
    body = {"groups": [request], "require_stable": False}
    return client.call(ApiKey.OFFSET_FETCH, 9, body)["groups"][0]


def _commit(client: WireClient, group: str, member: str, epoch: int) -> int:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": epoch,
        "member_id": member,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 1, "committed_offset": 7}]}],
    }
    return client.call(ApiKey.OFFSET_COMMIT, 9, body)["topics"][0]["partitions"][0]["error_code"]


@pytest.mark.parametrize("kind", ["consumer", "streams"])
def test_member_epochs_guard_offsets_of_consumer_and_streams_groups(client, kind):
    group = f"epochs-{kind}"
    join = _consumer if kind == "consumer" else _streams
    epoch = join(client, group, "m1")["member_epoch"]
    assert epoch > 0
    assert _commit(client, group, "m1", epoch + 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert _commit(client, group, "nobody", epoch) == ErrorCode.UNKNOWN_MEMBER_ID
    assert _commit(client, group, "m1", epoch) == ErrorCode.NONE
    assert _fetch(client, group, "m1", epoch + 1)["error_code"] == ErrorCode.STALE_MEMBER_EPOCH
    assert _fetch(client, group, "nobody", epoch)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    for member, at in (("m1", epoch), (None, -1)):  # the member itself, then an admin
        fetched = _fetch(client, group, member, at)
        assert fetched["error_code"] == ErrorCode.NONE
        (topic,) = fetched["topics"]
        assert [p["committed_offset"] for p in topic["partitions"]] == [7]


def test_a_consumer_groups_own_configs_override_the_clusters(client):
    body = {
        "resources": [
            {
                "resource_type": ConfigResourceType.GROUP,
                "resource_name": "tuned",
                "configs": [
                    {
                        "name": "consumer.heartbeat.interval.ms",
                        "config_operation": AlterConfigOp.SET,
                        "value": "1234",
                    }
                ],
            }
        ],
        "validate_only": False,
    }
    (altered,) = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]
    assert altered["error_code"] == ErrorCode.NONE
    assert _consumer(client, "tuned", "m1")["heartbeat_interval_ms"] == 1234
    # other groups keep the cluster's setting (the mock's 500 ms)
    assert _consumer(client, "untuned", "m1")["heartbeat_interval_ms"] == 500


def test_offset_delete_of_a_streams_group_spares_the_topics_its_topology_reads(client):
    group = "deleting-streams"
    epoch = _streams(client, group, "m1")["member_epoch"]
    assert _commit(client, group, "m1", epoch) == ErrorCode.NONE
    assert _streams(client, group, "m1", -1)["error_code"] == ErrorCode.NONE
    body = {
        "group_id": group,
        "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 1}]},
            {"name": "elsewhere", "partitions": [{"partition_index": 0}]},
        ],
    }
    reply = client.call(ApiKey.OFFSET_DELETE, 0, body)
    assert reply["error_code"] == ErrorCode.NONE
    assert [t["partitions"][0]["error_code"] for t in reply["topics"]] == [
        ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,  # the topology still reads it
        ErrorCode.NONE,
    ]
    (topic,) = _fetch(client, group, None, -1)["topics"]
    assert [p["committed_offset"] for p in topic["partitions"]] == [7]
