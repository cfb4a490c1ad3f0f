"""Share groups on the wire (KIP-932 as Kafka 4.4 ships it): heartbeats and the assignor,
ShareFetch and ShareAcknowledge with their sessions, acquisition locks and delivery counts, the
share-group offset APIs, group configs and group admin."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka_wire import WireClient

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ConfigType, ErrorCode
from kipwire.codec.records import build_batch, iter_batches
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.coordinators.share_partition import AcknowledgeType
from kipwire.mockbroker.handlers import HANDLERS
from kipwire.mockbroker.handlers.registry import listed

HEARTBEAT_V, FETCH_V = 1, 1
ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


@pytest.fixture(scope="module")
def cluster():
    """One broker (so it coordinates every group and leads every partition), short locks."""
    config = {
        "group.share.record.lock.duration.ms": "1000",
        "group.share.delivery.count.limit": "3",
    }
    with MockCluster(brokers=1, config=config) as running:
        yield running


@pytest.fixture
def client(cluster):
    with WireClient(cluster.bootstrap_servers) as wire:
        yield wire


def _produce(client: WireClient, topic: str, values: list[bytes]) -> None:
    body = {
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [
                    {"index": 0, "records": build_batch([{"value": v} for v in values])}
                ],
            }
        ],
    }
    reply = client.call(ApiKey.PRODUCE, 9, body)
    assert reply["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE


def _set_group_config(client: WireClient, group: str, name: str, value: str) -> int:
    body = {
        "resources": [
            {
                "resource_type": ConfigResourceType.GROUP,
                "resource_name": group,
                "configs": [{"name": name, "config_operation": AlterConfigOp.SET, "value": value}],
            }
        ],
        "validate_only": False,
    }
    return client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]["error_code"]


def _heartbeat(client: WireClient, group: str, member: str, epoch: int, topics=None) -> dict:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "subscribed_topic_names": topics,
    }
    return client.call(ApiKey.SHARE_GROUP_HEARTBEAT, HEARTBEAT_V, body)


def _topic_id(cluster: MockCluster, topic: str) -> uuid.UUID:
    body = {
        "topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    with WireClient(cluster.bootstrap_servers.split(",")[0]) as wire:
        return wire.call(ApiKey.METADATA, 12, body)["topics"][0]["topic_id"]


class Member:
    """A share consumer by hand: one session on the broker, acknowledgements on its fetches."""

    def __init__(self, client: WireClient, cluster: MockCluster, group: str, topic: str) -> None:
        self.client, self.group, self.topic = client, group, topic
        self.topic_id = _topic_id(cluster, topic)
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.joined = _heartbeat(client, group, self.member_id, 0, [topic])
        assert self.joined["error_code"] == ErrorCode.NONE

    def fetch(self, acks=(), wait_ms: int = 0, max_records: int = 500) -> dict:
        batches = [
            {"first_offset": f, "last_offset": last, "acknowledge_types": [t]}
            for f, last, t in acks
        ]
        body = {
            "group_id": self.group,
            "member_id": self.member_id,
            "share_session_epoch": self.epoch,
            "max_wait_ms": wait_ms,
            "min_bytes": 1,
            "max_records": max_records,
            "batch_size": max_records,
            "topics": [
                {
                    "topic_id": self.topic_id,
                    "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
                }
            ],
        }
        reply = self.client.call(ApiKey.SHARE_FETCH, FETCH_V, body)
        assert reply["error_code"] == ErrorCode.NONE, reply["error_message"]
        self.epoch += 1
        return reply

    def acknowledge(self, acks, close: bool = False) -> dict:
        body = {
            "group_id": self.group,
            "member_id": self.member_id,
            "share_session_epoch": -1 if close else self.epoch,
            "topics": [
                {
                    "topic_id": self.topic_id,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "acknowledgement_batches": [
                                {"first_offset": f, "last_offset": last, "acknowledge_types": [t]}
                                for f, last, t in acks
                            ],
                        }
                    ],
                }
            ],
        }
        reply = self.client.call(ApiKey.SHARE_ACKNOWLEDGE, 1, body)
        self.epoch += 1
        return reply


def _acquired(reply: dict) -> list[tuple[int, int, int]]:
    return [
        (a["first_offset"], a["last_offset"], a["delivery_count"])
        for t in reply["responses"]
        for p in t["partitions"]
        for a in p["acquired_records"]
    ]


def _values(reply: dict) -> list[bytes]:
    out = []
    for t in reply["responses"]:
        for p in t["partitions"]:
            for batch in iter_batches(p["records"]):
                out.extend(r.value for r in batch.records)
    return out


def test_heartbeat_joins_assigns_and_leaves(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=2)
    tid = _topic_id(cluster, topic_name)
    first = _heartbeat(client, "hb", "m1", 0, [topic_name])
    assert first["error_code"] == ErrorCode.NONE
    assert first["member_epoch"] >= 1 and first["heartbeat_interval_ms"] == 5000
    assert first["assignment"]["topic_partitions"] == [{"topic_id": tid, "partitions": [0, 1]}]
    # same epoch, nothing changed: no assignment in the answer
    again = _heartbeat(client, "hb", "m1", first["member_epoch"])
    assert again["assignment"] is None and again["member_epoch"] == first["member_epoch"]
    second = _heartbeat(client, "hb", "m2", 0, [topic_name])
    assert second["member_epoch"] == first["member_epoch"] + 1
    # an epoch the member was never given is fenced
    stale = _heartbeat(client, "hb", "m1", first["member_epoch"] + 7)
    assert stale["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    # the first member learns its new share and epoch with its next heartbeat
    now = _heartbeat(client, "hb", "m1", first["member_epoch"])
    assert now["error_code"] == ErrorCode.NONE
    assert now["member_epoch"] == second["member_epoch"]
    parts = now["assignment"]["topic_partitions"][0]["partitions"]
    assert len(parts) == 1
    assert second["assignment"]["topic_partitions"][0]["partitions"] != parts
    left = _heartbeat(client, "hb", "m2", -1)
    assert (left["error_code"], left["member_epoch"]) == (ErrorCode.NONE, -1)
    unknown = _heartbeat(client, "hb", "m2", 5)
    assert unknown["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    # Kafka 4.4's error answers: epoch 0, no member id, no interval
    assert (unknown["member_epoch"], unknown["member_id"], unknown["heartbeat_interval_ms"]) == (
        0,
        None,
        0,
    )
    assert unknown["error_message"] == "Member m2 is not a member of group hb."
    assert _heartbeat(client, "hb", "", 0, [topic_name])["error_code"] == ErrorCode.INVALID_REQUEST
    assert _heartbeat(client, "hb", "m3", 0, None)["error_code"] == ErrorCode.INVALID_REQUEST


def test_describe_share_group(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    joined = _heartbeat(client, "described", "m1", 0, [topic_name])
    body = {"group_ids": ["described", "nobody"], "include_authorized_operations": False}
    found, missing = client.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, body)["groups"]
    assert (found["error_code"], found["group_state"]) == (ErrorCode.NONE, "Stable")
    assert found["assignor_name"] == "simple"
    assert found["group_epoch"] == found["assignment_epoch"] == joined["member_epoch"]
    (member,) = found["members"]
    assert member["member_id"] == "m1" and member["subscribed_topic_names"] == [topic_name]
    assert member["assignment"]["topic_partitions"][0]["topic_name"] == topic_name
    assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_accept_release_reject_and_redelivery(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    group = f"g-{topic_name}"
    assert _set_group_config(client, group, "share.auto.offset.reset", "earliest") == 0
    _produce(client, topic_name, [b"a", b"b", b"c"])
    member = Member(client, cluster, group, topic_name)
    first = member.fetch(wait_ms=500)
    assert _acquired(first) == [(0, 2, 1)]
    assert _values(first) == [b"a", b"b", b"c"]
    assert first["acquisition_lock_timeout_ms"] == 1000
    # accept 0, release 1, reject 2: only 1 comes back, with a higher delivery count
    second = member.fetch(acks=[(0, 0, ACCEPT), (1, 1, RELEASE), (2, 2, REJECT)])
    (part,) = second["responses"][0]["partitions"]
    assert part["acknowledge_error_code"] == ErrorCode.NONE
    assert _acquired(second) == [(1, 1, 2)]
    # acknowledging what nobody acquired is INVALID_RECORD_STATE; what is finished below the
    # start offset is skipped without an error (Kafka 4.4 answers both so)
    third = member.fetch(acks=[(3, 3, ACCEPT)])
    assert third["responses"][0]["partitions"][0]["acknowledge_error_code"] == (
        ErrorCode.INVALID_RECORD_STATE
    )
    fourth = member.fetch(acks=[(0, 0, ACCEPT)])
    assert fourth["responses"][0]["partitions"][0]["acknowledge_error_code"] == ErrorCode.NONE
    done = member.acknowledge([(1, 1, ACCEPT)])
    assert done["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    offsets = client.call(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        0,
        {
            "groups": [
                {"group_id": group, "topics": [{"topic_name": topic_name, "partitions": [0]}]}
            ]
        },
    )
    # Kafka's share coordinator holds the start offset written with the last acknowledgement,
    # before the share partition moved it over the accepted record (to 3)
    assert offsets["groups"][0]["topics"][0]["partitions"][0]["start_offset"] == 1


def test_lock_timeout_redelivers_until_the_delivery_limit(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    group = f"g-{topic_name}"
    assert _set_group_config(client, group, "share.auto.offset.reset", "earliest") == 0
    _produce(client, topic_name, [b"x"])
    member = Member(client, cluster, group, topic_name)
    counts = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len(counts) < 4:
        got = _acquired(member.fetch(wait_ms=1500))
        counts.extend(c for _, _, c in got)
        if not got and len(counts) == 3:
            break
    # the limit is 3: delivered three times, the locks expire, then the record is archived
    assert counts == [1, 2, 3]
    offsets = client.call(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        0,
        {"groups": [{"group_id": group, "topics": None}]},
    )
    # the state written when the last lock expired: the start offset before the archived record
    assert offsets["groups"][0]["topics"][0]["partitions"][0]["start_offset"] == 0


def test_two_members_never_get_the_same_record(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    group = f"g-{topic_name}"
    assert _set_group_config(client, group, "share.auto.offset.reset", "earliest") == 0
    one = Member(client, cluster, group, topic_name)
    two = Member(client, cluster, group, topic_name)
    both = _heartbeat(client, group, one.member_id, 0, [topic_name])
    # one partition, two members: the simple assignor gives it to both
    assert both["assignment"]["topic_partitions"][0]["partitions"] == [0]
    for i in range(4):
        _produce(client, topic_name, [f"r{i}".encode()])
    seen_one = _values(one.fetch(max_records=1, wait_ms=200))
    seen_two = _values(two.fetch(max_records=10, wait_ms=200))
    assert seen_one and seen_two
    assert not set(seen_one) & set(seen_two)
    assert sorted(seen_one + seen_two) == [b"r0", b"r1", b"r2", b"r3"]


def test_session_epochs(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    member = Member(client, cluster, f"g-{topic_name}", topic_name)
    member.fetch()
    member.epoch = 5
    body = {
        "group_id": member.group,
        "member_id": member.member_id,
        "share_session_epoch": 5,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_records": 1,
        "batch_size": 1,
        "topics": [],
    }
    reply = client.call(ApiKey.SHARE_FETCH, FETCH_V, body)
    assert reply["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    reply = client.call(ApiKey.SHARE_FETCH, FETCH_V, {**body, "member_id": "stranger"})
    assert reply["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
    ack = member.acknowledge([], close=False)
    assert ack["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH


def test_group_config_rejects_unknown_names(cluster, client):
    assert _set_group_config(client, "cfg", "share.no.such", "1") == ErrorCode.INVALID_CONFIG
    assert _set_group_config(client, "cfg", "share.auto.offset.reset", "middle") == (
        ErrorCode.INVALID_CONFIG
    )
    assert _set_group_config(client, "cfg", "share.record.lock.duration.ms", "15000") == 0
    body = {
        "resources": [
            {
                "resource_type": ConfigResourceType.GROUP,
                "resource_name": "cfg",
                "configuration_keys": ["share.record.lock.duration.ms"],
            }
        ],
        "include_synonyms": False,
        "include_documentation": False,
    }
    (result,) = client.call(ApiKey.DESCRIBE_CONFIGS, 4, body)["results"]
    assert [(c["name"], c["value"]) for c in result["configs"]] == [
        ("share.record.lock.duration.ms", "15000")
    ]


def test_share_apis_are_served_from_v1():
    served = {h.api_key: h for h in listed("4.4")}
    for key in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE):
        # v0 was withdrawn early access: never listed, never served
        assert (served[key].advertised_min, served[key].min_version) == (1, 1)


def test_group_admin_lists_and_deletes_share_groups(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    group = f"admin-{topic_name}"
    joined = _heartbeat(client, group, "m1", 0, [topic_name])
    listed = client.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
    mine = [g for g in listed["groups"] if g["group_id"] == group]
    assert [(g["group_type"], g["protocol_type"], g["group_state"]) for g in mine] == [
        ("share", "share", "Stable")
    ]
    classic_only = client.call(
        ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["classic"]}
    )
    assert group not in {g["group_id"] for g in classic_only["groups"]}
    # DescribeGroups describes classic groups only: v6 says so, v5 reports a Dead group
    (v6,) = client.call(ApiKey.DESCRIBE_GROUPS, 6, {"groups": [group]})["groups"]
    assert v6["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert v6["error_message"] == f"Group {group} is not a classic group."
    (nobody,) = client.call(ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["nobody"]})["groups"]
    assert (nobody["error_code"], nobody["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nobody not found.",
    )
    (v5,) = client.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group]})["groups"]
    assert (v5["error_code"], v5["group_state"]) == (ErrorCode.NONE, "Dead")
    delete = {"groups_names": [group]}
    (busy,) = client.call(ApiKey.DELETE_GROUPS, 2, delete)["results"]
    assert busy["error_code"] == ErrorCode.NON_EMPTY_GROUP
    assert _heartbeat(client, group, "m1", -1)["error_code"] == ErrorCode.NONE
    assert joined["member_epoch"] >= 1
    (gone,) = client.call(ApiKey.DELETE_GROUPS, 2, delete)["results"]
    assert gone["error_code"] == ErrorCode.NONE
    (again,) = client.call(ApiKey.DELETE_GROUPS, 2, delete)["results"]
    assert again["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_alter_and_delete_share_group_offsets(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    group = f"offsets-{topic_name}"
    _produce(client, topic_name, [b"a", b"b", b"c", b"d"])
    member = Member(client, cluster, group, topic_name)
    alter = {
        "group_id": group,
        "topics": [
            {"topic_name": topic_name, "partitions": [{"partition_index": 0, "start_offset": 2}]}
        ],
    }
    busy = client.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert busy["error_code"] == ErrorCode.NON_EMPTY_GROUP
    assert _heartbeat(client, group, member.member_id, -1)["error_code"] == ErrorCode.NONE
    altered = client.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert altered["error_code"] == ErrorCode.NONE
    assert altered["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    # a new member starts where the offsets were set: c and d
    again = Member(client, cluster, group, topic_name)
    reply = again.fetch(wait_ms=200)
    assert _acquired(reply) == [(2, 3, 1)]
    assert _values(reply) == [b"a", b"b", b"c", b"d"]  # the whole batch; the client skips a, b
    assert _acquired(again.fetch()) == []
    assert again.acknowledge([(2, 3, ACCEPT)])["error_code"] == ErrorCode.NONE
    assert _heartbeat(client, group, again.member_id, -1)["error_code"] == ErrorCode.NONE
    described = client.call(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, {"groups": [{"group_id": group, "topics": None}]}
    )
    # the start offset written with the acknowledgement of c and d, before it moved to 4
    assert described["groups"][0]["topics"][0]["partitions"][0]["start_offset"] == 2
    deleted = client.call(
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
        0,
        {"group_id": group, "topics": [{"topic_name": topic_name}]},
    )
    assert deleted["responses"][0]["error_code"] == ErrorCode.NONE
    described = client.call(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, {"groups": [{"group_id": group, "topics": None}]}
    )
    assert described["groups"][0]["topics"] == []


def test_v2_record_limit_and_renew(cluster, client, topic_name):
    if HANDLERS[ApiKey.SHARE_FETCH].max_version < 2:
        pytest.skip("ShareFetch v2 is served once ApiVersions lists Kafka 4.4's ranges")
    cluster.create_topic(topic_name, partitions=1)
    group = f"g-{topic_name}"
    assert _set_group_config(client, group, "share.auto.offset.reset", "earliest") == 0
    _produce(client, topic_name, [b"a", b"b", b"c"])
    member = Member(client, cluster, group, topic_name)
    body = {
        "group_id": group,
        "member_id": member.member_id,
        "share_session_epoch": 0,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_records": 2,
        "batch_size": 2,
        "share_acquire_mode": 1,  # record_limit: never more than MaxRecords
        "topics": [
            {
                "topic_id": member.topic_id,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": []}],
            }
        ],
    }
    first = client.call(ApiKey.SHARE_FETCH, 2, body)
    assert _acquired(first) == [(0, 1, 1)]
    renew = {
        **body,
        "share_session_epoch": 1,
        "is_renew_ack": True,
        "topics": [
            {
                "topic_id": member.topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "acknowledgement_batches": [
                            {"first_offset": 0, "last_offset": 1, "acknowledge_types": [4]}
                        ],
                    }
                ],
            }
        ],
    }
    renewed = client.call(ApiKey.SHARE_FETCH, 2, renew)
    (part,) = renewed["responses"][0]["partitions"]
    assert part["acknowledge_error_code"] == ErrorCode.NONE
    assert part["acquired_records"] == []  # a renewal acquires nothing new


def test_auto_offset_reset_latest_and_by_duration(cluster, client, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    _produce(client, topic_name, [b"old"])
    latest = Member(client, cluster, f"latest-{topic_name}", topic_name)
    assert _acquired(latest.fetch()) == []  # latest is the default: "old" is before the start
    _produce(client, topic_name, [b"new"])
    assert _values(latest.fetch(wait_ms=500)) == [b"new"]
    group = f"recent-{topic_name}"
    assert _set_group_config(client, group, "share.auto.offset.reset", "by_duration:PT1H") == 0
    recent = Member(client, cluster, group, topic_name)
    assert _values(recent.fetch(wait_ms=500)) == [b"old", b"new"]  # both within the hour
    assert _set_group_config(client, group, "share.auto.offset.reset", "by_duration:1h") == (
        ErrorCode.INVALID_CONFIG
    )


def test_known_difference_the_first_heartbeat_already_assigns(cluster, client, topic_name):
    """Kafka 4.4.0 answers a share member's first heartbeat with an empty assignment and hands
    out the partitions on a later one, once the share coordinator has initialised their state
    (seen on the wire against a real 4.4.0 broker). The mock's share state needs no
    initialisation round, so the first answer already assigns; clients treat both alike."""
    cluster.create_topic(topic_name, partitions=1)
    first = _heartbeat(client, f"first-{topic_name}", "m1", 0, [topic_name])
    assert first["assignment"]["topic_partitions"][0]["partitions"] == [0]
    assert first["member_epoch"] == 2  # as Kafka: one bump for the member, one for the topics


def test_group_config_errors_and_types(cluster, client):
    body = {
        "resources": [
            {
                "resource_type": ConfigResourceType.GROUP,
                "resource_name": "typed",
                "configs": [
                    {"name": "share.nope", "config_operation": AlterConfigOp.SET, "value": "1"}
                ],
            }
        ],
        "validate_only": False,
    }
    (refused,) = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]
    assert refused["error_message"] == "Unknown group config name: share.nope"
    describe = {
        "resources": [
            {
                "resource_type": ConfigResourceType.GROUP,
                "resource_name": "typed",
                "configuration_keys": ["share.auto.offset.reset", "share.delivery.count.limit"],
            }
        ],
        "include_synonyms": False,
        "include_documentation": False,
    }
    (result,) = client.call(ApiKey.DESCRIBE_CONFIGS, 4, describe)["results"]
    types = {c["name"]: (c["config_type"], c["value"]) for c in result["configs"]}
    assert types == {
        "share.auto.offset.reset": (ConfigType.STRING, "latest"),
        "share.delivery.count.limit": (ConfigType.INT, "3"),  # the cluster's setting here
    }


def test_describe_offsets_v1_lag(cluster, client, topic_name):
    if HANDLERS[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS].max_version < 1:
        pytest.skip("DescribeShareGroupOffsets v1 is served once ApiVersions lists Kafka 4.4's")
    cluster.create_topic(topic_name, partitions=1)
    group = f"lag-{topic_name}"
    assert _set_group_config(client, group, "share.auto.offset.reset", "earliest") == 0
    _produce(client, topic_name, [b"a", b"b", b"c", b"d"])
    member = Member(client, cluster, group, topic_name)
    member.fetch(wait_ms=500)
    member.acknowledge([(0, 1, ACCEPT)])
    _produce(client, topic_name, [b"e"])
    body = {"groups": [{"group_id": group, "topics": None}]}
    (part,) = client.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, body)["groups"][0]["topics"][0][
        "partitions"
    ]
    # c, d (acquired, not acknowledged) and e (not yet delivered) are the lag; the start offset
    # is the one written with the acknowledgement of a and b (before it moved to 2)
    assert (part["start_offset"], part["lag"]) == (0, 3)


def test_share_fetch_from_a_follower_names_the_leader_at_once(topic_name):
    with MockCluster(brokers=2) as two:
        two.create_topic(topic_name, partitions=1)
        leader = two.partition(topic_name, 0).leader
        other = two.bootstrap_servers.split(",")[2 - leader]
        body = {
            "group_id": f"g-{topic_name}",
            "member_id": "m",
            "share_session_epoch": 0,
            "max_wait_ms": 5000,
            "min_bytes": 1,
            "max_records": 10,
            "batch_size": 10,
            "topics": [
                {
                    "topic_id": _topic_id(two, topic_name),
                    "partitions": [{"partition_index": 0, "acknowledgement_batches": []}],
                }
            ],
        }
        with WireClient(other) as wire:
            started = time.monotonic()
            reply = wire.call(ApiKey.SHARE_FETCH, FETCH_V, body)
            assert time.monotonic() - started < 4  # an error answers without the long poll
    (part,) = reply["responses"][0]["partitions"]
    assert part["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert part["current_leader"]["leader_id"] == leader
    assert [n["node_id"] for n in reply["node_endpoints"]] == [leader]
