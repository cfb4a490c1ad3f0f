"""The controller's client listener (what `--bootstrap-controller` reaches) authorizes what it
serves as Kafka's ControllerApis does; the brokers' own traffic on the internal listener is never
checked."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sasl_wire import connect, plain_login

from kipwire.codec import (
    AclOperation,
    AclPermissionType,
    AclResourceType,
    AlterConfigOp,
    ApiKey,
    ConfigResourceType,
    ErrorCode,
    PatternType,
)
from kipwire.mockbroker import MockCluster

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
_names = itertools.count()


@pytest.fixture(scope="module")
def secured() -> Iterator[MockCluster]:
    """One broker, SASL/PLAIN, the authorizer on, `admin` a super user."""
    with MockCluster(
        brokers=1,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=("PLAIN", "SCRAM-SHA-256"),  # SCRAM enables delegation tokens
        users=USERS,
        super_users=("admin",),
        authorizer=True,
    ) as running:
        yield running


@contextmanager
def _acl(cluster: MockCluster, *args: str) -> Iterator[None]:
    # the module's cluster is shared: every ACL a test adds is gone when it ends
    cluster.add_acl(*args)
    try:
        yield
    finally:
        cluster.remove_acl(*args)


@contextmanager
def _controller_as(cluster: MockCluster, user: str) -> Iterator:
    with connect(cluster.cluster.controller_node.address) as client:
        assert plain_login(client, user, USERS[user])["error_code"] == ErrorCode.NONE
        yield client


def _name() -> str:
    return f"ctl-{next(_names)}"


def _registration(client) -> dict:
    # a foreign cluster id: an authorized registration is refused without touching the cluster
    body = {"broker_id": 99, "cluster_id": "not-this-one", "incarnation_id": uuid.uuid4()}
    return client.call(ApiKey.BROKER_REGISTRATION, 4, body)


def _heartbeat(client) -> dict:
    return client.call(ApiKey.BROKER_HEARTBEAT, 1, {"broker_id": 99, "broker_epoch": 7})


def _metadata_fetch(client, version: int = 12) -> dict:
    topic = {"topic": "__cluster_metadata", "partitions": [{"partition": 0, "fetch_offset": 0}]}
    body = {"replica_id": 99, "max_wait_ms": 0, "topics": [topic]}
    return client.call(ApiKey.FETCH, version, body)


def _describe_quorum(client) -> dict:
    topic = {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
    return client.call(ApiKey.DESCRIBE_QUORUM, 2, {"topics": [topic]})


def _create(client, *names: str) -> dict:
    topics = [{"name": n, "num_partitions": 1, "replication_factor": 1} for n in names]
    response = client.call(ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout_ms": 5000})
    return {t["name"]: t for t in response["topics"]}


def test_broker_apis_need_cluster_action(secured):
    with _controller_as(secured, "alice") as client:
        assert _registration(client)["error_code"] == CLUSTER_DENIED
        assert _heartbeat(client)["error_code"] == CLUSTER_DENIED
        fetched = _metadata_fetch(client)
        assert fetched["error_code"] == CLUSTER_DENIED
        # before v13 each partition carries the code too (FetchRequest.getErrorResponse)
        assert fetched["responses"][0]["partitions"][0]["error_code"] == CLUSTER_DENIED
        assert _metadata_fetch(client, 13)["responses"] == []
        with _acl(secured, "User:alice", "CLUSTER", "kafka-cluster", "CLUSTER_ACTION"):
            # past the check, the controller's own answers
            assert _registration(client)["error_code"] == ErrorCode.INCONSISTENT_CLUSTER_ID
            assert _heartbeat(client)["error_code"] == ErrorCode.STALE_BROKER_EPOCH
            fetched = _metadata_fetch(client)
            assert fetched["error_code"] == ErrorCode.NONE
            assert fetched["responses"][0]["partitions"][0]["records"]
        assert _heartbeat(client)["error_code"] == CLUSTER_DENIED


def test_create_topics_needs_create_on_the_topic_or_the_cluster(secured):
    denied, allowed, cluster_wide = _name(), _name(), _name()
    with _controller_as(secured, "alice") as client:
        result = _create(client, denied)[denied]
        assert (result["error_code"], result["error_message"]) == (
            TOPIC_DENIED,
            "Authorization failed.",
        )
        assert denied not in secured.cluster.controller.state.topic_ids
        with _acl(secured, "User:alice", "TOPIC", allowed, "CREATE"):
            results = _create(client, allowed, denied)
        assert results[allowed]["error_code"] == ErrorCode.NONE
        assert results[denied]["error_code"] == TOPIC_DENIED
        # no DESCRIBE_CONFIGS on it: the configs are withheld, as Kafka's controller does
        assert results[allowed]["topic_config_error_code"] == TOPIC_DENIED
        assert results[allowed]["num_partitions"] == -1
        with _acl(secured, "User:alice", "CLUSTER", "kafka-cluster", "CREATE"):
            assert _create(client, cluster_wide)[cluster_wide]["error_code"] == ErrorCode.NONE
    assert secured.cluster.controller.state.topic(allowed) is not None


def test_delete_topics_needs_delete_and_hides_what_it_may_not_describe(secured):
    kept, gone = _name(), _name()
    secured.create_topic(kept)
    secured.create_topic(gone)
    missing = _name()
    with _controller_as(secured, "alice") as client:

        def delete(*names: str) -> dict:
            response = client.call(
                ApiKey.DELETE_TOPICS, 5, {"topic_names": list(names), "timeout_ms": 5000}
            )
            return {r["name"]: r["error_code"] for r in response["responses"]}

        assert delete(kept, missing) == {kept: TOPIC_DENIED, missing: TOPIC_DENIED}
        with _acl(secured, "User:alice", "TOPIC", "ctl-", "DESCRIBE", "PREFIXED"):
            # describable: an absent topic is named so, an existing one is still refused
            codes = delete(kept, missing)
            assert codes == {kept: TOPIC_DENIED, missing: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        with _acl(secured, "User:alice", "TOPIC", gone, "DELETE"):
            assert delete(kept, gone) == {kept: TOPIC_DENIED, gone: ErrorCode.NONE}
    state = secured.cluster.controller.state
    assert state.topic(kept) is not None
    assert state.topic(gone) is None


def test_delete_by_id_names_only_a_describable_topic(secured):
    hidden, seen = _name(), _name()
    secured.create_topic(hidden)
    secured.create_topic(seen)
    state = secured.cluster.controller.state
    ids = {n: state.topic_ids[n] for n in (hidden, seen)}
    topics = [{"name": None, "topic_id": i} for i in ids.values()]
    with (
        _controller_as(secured, "alice") as client,
        _acl(secured, "User:alice", "TOPIC", seen, "DESCRIBE"),
    ):
        response = client.call(ApiKey.DELETE_TOPICS, 6, {"topics": topics, "timeout_ms": 5000})
    answers = {r["topic_id"]: (r["name"], r["error_code"]) for r in response["responses"]}
    assert answers == {ids[hidden]: (None, TOPIC_DENIED), ids[seen]: (seen, TOPIC_DENIED)}
    assert state.topic(hidden) is not None


def test_a_refused_duplicate_is_never_served(secured):
    name = _name()
    secured.create_topic(name)
    with _controller_as(secured, "alice") as client:
        response = client.call(
            ApiKey.DELETE_TOPICS, 5, {"topic_names": [name, name], "timeout_ms": 5000}
        )
        assert [(r["name"], r["error_code"]) for r in response["responses"]] == [
            (name, ErrorCode.INVALID_REQUEST)
        ]
        twice = [{"name": name, "count": 3, "assignments": None}] * 2
        results = client.call(ApiKey.CREATE_PARTITIONS, 3, {"topics": twice, "timeout_ms": 5000})[
            "results"
        ]
        assert [(r["name"], r["error_code"]) for r in results] == [
            (name, ErrorCode.INVALID_REQUEST)
        ]
    assert len(secured.cluster.controller.state.topic(name).partitions) == 1


def test_create_partitions_needs_alter_on_the_topic(secured):
    name = _name()
    secured.create_topic(name)
    body = {"topics": [{"name": name, "count": 2, "assignments": None}], "timeout_ms": 5000}
    with _controller_as(secured, "alice") as client:
        result = client.call(ApiKey.CREATE_PARTITIONS, 3, body)["results"]
        assert [(r["name"], r["error_code"]) for r in result] == [(name, TOPIC_DENIED)]
        with _acl(secured, "User:alice", "TOPIC", name, "ALTER"):
            result = client.call(ApiKey.CREATE_PARTITIONS, 3, body)["results"]
        assert [(r["name"], r["error_code"]) for r in result] == [(name, ErrorCode.NONE)]


def test_config_changes_are_checked_per_resource(secured):
    name = _name()
    secured.create_topic(name)
    change = [{"name": "retention.ms", "config_operation": AlterConfigOp.SET, "value": "60000"}]
    resources = [
        {"resource_type": ConfigResourceType.TOPIC, "resource_name": name, "configs": change},
        {"resource_type": ConfigResourceType.BROKER, "resource_name": "", "configs": []},
    ]
    with _controller_as(secured, "alice") as client:
        with _acl(secured, "User:alice", "TOPIC", name, "ALTER_CONFIGS"):
            response = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": resources})
        codes = {r["resource_type"]: r["error_code"] for r in response["responses"]}
        assert codes == {
            ConfigResourceType.TOPIC: ErrorCode.NONE,
            ConfigResourceType.BROKER: CLUSTER_DENIED,
        }
        described = client.call(
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {"resources": [{"resource_type": ConfigResourceType.TOPIC, "resource_name": name}]},
        )
        assert described["results"][0]["error_code"] == TOPIC_DENIED
    assert secured.cluster.controller.state.config(ConfigResourceType.TOPIC, name, "retention.ms")


def test_cluster_wide_apis_need_their_operation_on_the_cluster(secured):
    with _controller_as(secured, "alice") as client:
        assert _describe_quorum(client)["error_code"] == CLUSTER_DENIED
        updates = {"timeout_ms": 5000, "feature_updates": [], "validate_only": True}
        assert client.call(ApiKey.UPDATE_FEATURES, 1, updates)["error_code"] == CLUSTER_DENIED
        creation = {
            "resource_type": AclResourceType.TOPIC,
            "resource_name": "x",
            "resource_pattern_type": PatternType.LITERAL,
            "principal": "User:alice",
            "host": "*",
            "operation": AclOperation.READ,
            "permission_type": AclPermissionType.ALLOW,
        }
        results = client.call(ApiKey.CREATE_ACLS, 3, {"creations": [creation]})["results"]
        assert [r["error_code"] for r in results] == [CLUSTER_DENIED]
        with _acl(secured, "User:alice", "CLUSTER", "kafka-cluster", "DESCRIBE"):
            described = _describe_quorum(client)
        assert described["error_code"] == ErrorCode.NONE


def _token(client, owner: str | None = None) -> dict:
    body = {"renewers": [], "max_lifetime_ms": -1, "owner_principal_type": None}
    if owner is not None:
        body.update(owner_principal_type="User", owner_principal_name=owner)
    return client.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, body)


def test_delegation_tokens_are_the_requesters_own(secured):
    with _controller_as(secured, "alice") as client:
        refused = _token(client, owner="admin")
        assert refused["error_code"] == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
        own = _token(client)
        assert own["error_code"] == ErrorCode.NONE
        assert (own["principal_name"], own["token_requester_principal_name"]) == ("alice", "alice")
        # before v3 a request names no owner: still the requester's
        old = client.call(
            ApiKey.CREATE_DELEGATION_TOKEN, 1, {"renewers": [], "max_lifetime_ms": -1}
        )
        assert (old["error_code"], old["principal_name"]) == (ErrorCode.NONE, "alice")
        with _controller_as(secured, "admin") as admin:
            theirs = _token(admin)
        renew = {"hmac": theirs["hmac"], "renew_period_ms": 1000}
        answer = client.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, renew)
        assert answer["error_code"] == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        mine = {"hmac": own["hmac"], "renew_period_ms": 1000}
        assert client.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, mine)["error_code"] == ErrorCode.NONE


def test_a_super_user_is_allowed_everything(secured):
    name = _name()
    with _controller_as(secured, "admin") as client:
        assert _heartbeat(client)["error_code"] == ErrorCode.STALE_BROKER_EPOCH
        assert _metadata_fetch(client)["error_code"] == ErrorCode.NONE
        result = _create(client, name)[name]
        assert (result["error_code"], result["topic_config_error_code"]) == (ErrorCode.NONE, 0)


def test_the_internal_listener_is_never_checked(secured):
    # what the brokers dial: no principal, so no ACL is needed for their own traffic
    with connect(secured.cluster.controller_node.internal_address) as client:
        assert _metadata_fetch(client)["error_code"] == ErrorCode.NONE
    assert secured.cluster.controller_node.authorization is not None


def test_without_the_authorizer_nothing_is_wrapped():
    with MockCluster(
        brokers=1, security_protocol="SASL_PLAINTEXT", sasl_mechanisms=("PLAIN",), users=USERS
    ) as cluster:
        assert cluster.cluster.controller_node.authorization is None
        with _controller_as(cluster, "alice") as client:
            assert _heartbeat(client)["error_code"] == ErrorCode.STALE_BROKER_EPOCH
