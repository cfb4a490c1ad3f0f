"""The authorizer on the wire: the ACL APIs themselves, and each served API answered with
Kafka's error where Kafka puts it (per partition, per topic or group, or the whole request)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sasl_wire import connect, plain_login

from kipwire.codec import (
    AclOperation,
    AclPermissionType,
    AclResourceType,
    ApiKey,
    ConfigResourceType,
    ErrorCode,
    PatternType,
)
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster

USERS = {"admin": "admin-secret", "alice": "alice-secret", "carol": "carol-secret"}
_names = itertools.count()


@pytest.fixture(scope="module")
def secured() -> Iterator[MockCluster]:
    """One broker, SASL/PLAIN, the authorizer on, `admin` a super user."""
    with MockCluster(
        brokers=1,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=("PLAIN", "SCRAM-SHA-256"),
        users=USERS,
        super_users=("admin",),
        authorizer=True,
    ) as running:
        yield running


@contextmanager
def _as(cluster: MockCluster, user: str) -> Iterator:
    with connect(cluster.bootstrap_servers) as client:
        assert plain_login(client, user, USERS[user])["error_code"] == ErrorCode.NONE
        yield client


def _name(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def _topic(cluster: MockCluster, prefix: str = "t") -> str:
    name = _name(prefix)
    cluster.create_topic(name)
    return name


def _metadata(client, *names: str, auto: bool = False, ops: bool = False) -> dict:
    topics = None if not names else [{"name": n} for n in names]
    body = {
        "topics": topics,
        "allow_auto_topic_creation": auto,
        "include_topic_authorized_operations": ops,
    }
    response = client.call(ApiKey.METADATA, 12, body)
    return {t["name"]: t for t in response["topics"]}


# -- the ACL APIs ------------------------------------------------------------------------------


def _creation(principal: str, name: str, operation: int = AclOperation.READ) -> dict:
    return {
        "resource_type": AclResourceType.TOPIC,
        "resource_name": name,
        "resource_pattern_type": PatternType.LITERAL,
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": AclPermissionType.ALLOW,
    }


_ANY = {
    "resource_type_filter": AclResourceType.ANY,
    "resource_name_filter": None,
    "pattern_type_filter": PatternType.ANY,
    "principal_filter": None,
    "host_filter": None,
    "operation": AclOperation.ANY,
    "permission_type": AclPermissionType.ANY,
}


def test_create_describe_and_delete_acls_on_the_wire(secured):
    name = _name("acl")
    with _as(secured, "admin") as admin:
        created = admin.call(ApiKey.CREATE_ACLS, 3, {"creations": [_creation("User:alice", name)]})
        assert created["results"][0]["error_code"] == ErrorCode.NONE
        listed = admin.call(ApiKey.DESCRIBE_ACLS, 3, {**_ANY, "resource_name_filter": name})
        [resource] = listed["resources"]
        assert resource["resource_name"] == name and resource["acls"][0]["principal"] == (
            "User:alice"
        )
        deleted = admin.call(
            ApiKey.DELETE_ACLS, 3, {"filters": [{**_ANY, "resource_name_filter": name}]}
        )
        assert len(deleted["filter_results"][0]["matching_acls"]) == 1
    assert all(a.resource_name != name for a in secured.acls())


def test_only_a_principal_with_alter_on_the_cluster_creates_acls(secured):
    with _as(secured, "alice") as alice:
        created = alice.call(
            ApiKey.CREATE_ACLS, 3, {"creations": [_creation("User:alice", _name("x"))]}
        )
        assert created["results"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        listed = alice.call(ApiKey.DESCRIBE_ACLS, 3, _ANY)
        assert listed["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_an_invalid_acl_is_refused_with_kafkas_message(secured):
    bad = {**_creation("alice", _name("x")), "operation": AclOperation.ANY}
    with _as(secured, "admin") as admin:
        [result] = admin.call(ApiKey.CREATE_ACLS, 3, {"creations": [bad]})["results"]
    assert result["error_code"] == ErrorCode.INVALID_REQUEST
    assert result["error_message"] == "Invalid operation ANY"


# -- metadata -----------------------------------------------------------------------------------


def test_metadata_leaves_out_undescribable_topics_and_refuses_asked_ones(secured):
    seen, hidden = _topic(secured), _topic(secured)
    secured.add_acl("User:alice", "TOPIC", seen, "READ")
    with _as(secured, "alice") as alice:
        listed = _metadata(alice, ops=True)
        assert seen in listed and hidden not in listed
        bits = listed[seen]["topic_authorized_operations"]
        assert bits == (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)
        asked = _metadata(alice, seen, hidden)
        assert asked[hidden]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert asked[seen]["error_code"] == ErrorCode.NONE


def test_auto_creation_needs_create(secured):
    wanted = _name("auto")
    secured.add_acl("User:alice", "TOPIC", wanted, "DESCRIBE")
    with _as(secured, "alice") as alice:
        refused = _metadata(alice, wanted, auto=True)[wanted]
        assert refused["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        secured.add_acl("User:alice", "TOPIC", wanted, "CREATE")
        created = _metadata(alice, wanted, auto=True)[wanted]
        assert created["error_code"] in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE)


# -- produce, fetch, offsets ---------------------------------------------------------------------


def test_produce_answers_topic_authorization_failed_per_partition(secured):
    allowed, denied = _topic(secured), _topic(secured)
    secured.add_acl("User:alice", "TOPIC", allowed, "WRITE")
    batch = build_batch([{"key": None, "value": b"v"}])
    request = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": n, "partition_data": [{"index": 0, "records": batch}]}
            for n in (allowed, denied)
        ],
    }
    with _as(secured, "alice") as alice:
        response = alice.call(ApiKey.PRODUCE, 9, request)
    codes = {r["name"]: r["partition_responses"][0]["error_code"] for r in response["responses"]}
    assert codes == {allowed: ErrorCode.NONE, denied: ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def test_fetch_needs_read(secured):
    readable, other = _topic(secured), _topic(secured)
    secured.add_acl("User:alice", "TOPIC", readable, "READ")
    request = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "topics": [
            {"topic": n, "partitions": [{"partition": 0, "fetch_offset": 0}]}
            for n in (readable, other)
        ],
    }
    with _as(secured, "alice") as alice:
        response = alice.call(ApiKey.FETCH, 12, request)
    codes = {r["topic"]: r["partitions"][0]["error_code"] for r in response["responses"]}
    assert codes == {readable: ErrorCode.NONE, other: ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def test_group_apis_need_read_on_the_group_and_the_topics(secured):
    group, topic = _name("g"), _topic(secured)
    with _as(secured, "alice") as alice:
        join = {"group_id": group, "session_timeout_ms": 10000, "protocol_type": "consumer"}
        joined = alice.call(ApiKey.JOIN_GROUP, 9, join)
        assert joined["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        found = alice.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        assert found["coordinators"][0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        secured.add_acl("User:alice", "GROUP", group, "READ")
        found = alice.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        assert found["coordinators"][0]["error_code"] == ErrorCode.NONE
        commit = {
            "group_id": group,
            "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1}]}
            ],
        }
        committed = alice.call(ApiKey.OFFSET_COMMIT, 8, commit)
        code = committed["topics"][0]["partitions"][0]["error_code"]
        assert code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_idempotent_and_transactional_producers(secured):
    # carol has no ACL at all: WRITE on any topic would allow an idempotent producer (KIP-679)
    txn = _name("txn")
    with _as(secured, "carol") as carol:
        idempotent = {"transactional_id": None, "transaction_timeout_ms": 60000}
        answer = carol.call(ApiKey.INIT_PRODUCER_ID, 4, idempotent)
        assert answer["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        transactional = {"transactional_id": txn, "transaction_timeout_ms": 60000}
        answer = carol.call(ApiKey.INIT_PRODUCER_ID, 4, transactional)
        assert answer["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        secured.add_acl("User:carol", "CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE")
        assert carol.call(ApiKey.INIT_PRODUCER_ID, 4, idempotent)["error_code"] == ErrorCode.NONE
        secured.add_acl("User:carol", "TRANSACTIONAL_ID", txn, "WRITE")
        assert carol.call(ApiKey.INIT_PRODUCER_ID, 4, transactional)["error_code"] == ErrorCode.NONE


def test_admin_apis_answer_per_topic_and_per_resource(secured):
    mine, theirs = _name("mine"), _name("theirs")
    secured.add_acl("User:alice", "TOPIC", "mine-", "ALL", pattern="PREFIXED")
    topics = [{"name": n, "num_partitions": 1, "replication_factor": 1} for n in (mine, theirs)]
    with _as(secured, "alice") as alice:
        created = alice.call(ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout_ms": 5000})
        codes = {t["name"]: t["error_code"] for t in created["topics"]}
        assert codes == {mine: ErrorCode.NONE, theirs: ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        resources = [
            {"resource_type": ConfigResourceType.TOPIC, "resource_name": mine},
            {"resource_type": ConfigResourceType.BROKER, "resource_name": "1"},
        ]
        described = alice.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": resources})
        codes = [r["error_code"] for r in described["results"]]
        assert codes == [ErrorCode.NONE, ErrorCode.CLUSTER_AUTHORIZATION_FAILED]


def test_describe_cluster_reports_the_authorized_operations(secured):
    with _as(secured, "admin") as admin:
        body = admin.call(
            ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True}
        )
    assert body["cluster_authorized_operations"] & (1 << AclOperation.ALTER)
    with _as(secured, "alice") as alice:
        body = alice.call(
            ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True}
        )
    assert body["cluster_authorized_operations"] == 0


def test_kip_848_group_apis_need_the_group(secured):
    group = _name("kip848")
    heartbeat = {
        "group_id": group,
        "member_id": "m-1",
        "member_epoch": 0,
        "rebalance_timeout_ms": 10000,
        "subscribed_topic_names": [],
        "topic_partitions": [],
    }
    with _as(secured, "alice") as alice:
        joined = alice.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, heartbeat)
        assert joined["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        described = alice.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [group]})
        assert described["groups"][0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        secured.add_acl("User:alice", "GROUP", group, "READ")
        joined = alice.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, heartbeat)
        assert joined["error_code"] != ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_share_group_apis_need_the_group(secured):
    group = _name("share")
    heartbeat = {
        "group_id": group,
        "member_id": "AAAAAAAAAAAAAAAAAAAAAA",
        "member_epoch": 0,
        "subscribed_topic_names": [],
    }
    with _as(secured, "alice") as alice:
        joined = alice.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, heartbeat)
        assert joined["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        described = alice.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": [group]})
        assert described["groups"][0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        fetch = {"group_id": group, "member_id": "AAAAAAAAAAAAAAAAAAAAAA", "share_session_epoch": 0}
        fetched = alice.call(ApiKey.SHARE_FETCH, 1, fetch)
        assert fetched["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        secured.add_acl("User:alice", "GROUP", group, "READ")
        joined = alice.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, heartbeat)
        assert joined["error_code"] != ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_describe_quorum_through_a_broker_needs_describe_on_the_cluster(secured):
    topic = {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
    with _as(secured, "alice") as alice:
        denied = alice.call(ApiKey.DESCRIBE_QUORUM, 2, {"topics": [topic]})
    assert denied["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with _as(secured, "admin") as admin:
        answered = admin.call(ApiKey.DESCRIBE_QUORUM, 2, {"topics": [topic]})
    assert answered["error_code"] == ErrorCode.NONE
    assert answered["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


def test_log_dir_apis_need_describe_and_alter_on_the_cluster(secured):
    # KafkaApis: DescribeLogDirs needs DESCRIBE on the cluster (else a top-level error and no
    # dirs), AlterReplicaLogDirs ALTER (else every partition fails)
    topic = _topic(secured, "dirs")
    with _as(secured, "carol") as carol:
        described = carol.call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
        assert (described["error_code"], described["results"]) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            [],
        )
        move = {"dirs": [{"path": "/x", "topics": [{"name": topic, "partitions": [0]}]}]}
        altered = carol.call(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, move)
        assert [p["error_code"] for p in altered["results"][0]["partitions"]] == [
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        ]
        secured.add_acl("User:carol", "CLUSTER", "kafka-cluster", "DESCRIBE")
        described = carol.call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
        assert described["error_code"] == ErrorCode.NONE and len(described["results"]) == 1
