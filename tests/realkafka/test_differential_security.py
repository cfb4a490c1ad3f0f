"""Security on a kipwire mock against real Kafka, both SASL_SSL with SCRAM-SHA-512 and PLAIN,
StandardAuthorizer and `User:admin` a super user: the same logins (right and wrong passwords,
an unknown user, an unknown mechanism) and the same matrix of principal x operation x resource
(topics, groups, transactional ids and the cluster under literal, prefixed and deny ACLs) get
the same answers. Every difference found is in `DIFFERENCES`, with its reason."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka_dist import KafkaDist, KafkaUnavailable
from kafka_harness import single
from secured_kafka import USERS, SecuredKafka, secured_mock

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "mockbroker"))
sys.path.insert(0, str(TESTS / "mockbroker" / "security"))

from sasl_wire import connect, handshake, plain_login, scram_login  # noqa: E402

from kipwire.codec import (  # noqa: E402
    AclOperation,
    AclPermissionType,
    AclResourceType,
    ApiKey,
    ConfigResourceType,
    ErrorCode,
    PatternType,
)
from kipwire.codec.records import build_batch  # noqa: E402
from kipwire.mockbroker.security.acls import binding_from_names  # noqa: E402

TOPICS = ("orders", "svc-a", "secret-x", "other")
GROUPS = ("svc-g", "other-g")
RETRIED = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.CONCURRENT_TRANSACTIONS,
}
#: (principal, resource type, name, operation, pattern, permission), as `add_acl` takes them
ACLS = [
    ("User:alice", "TOPIC", "orders", "WRITE", "LITERAL", "ALLOW"),
    ("User:alice", "TOPIC", "svc-", "READ", "PREFIXED", "ALLOW"),
    ("User:alice", "TOPIC", "secret-", "ALL", "PREFIXED", "DENY"),
    ("User:alice", "TOPIC", "*", "DESCRIBE", "LITERAL", "ALLOW"),
    ("User:alice", "TOPIC", "other", "ALTER_CONFIGS", "LITERAL", "ALLOW"),
    ("User:alice", "GROUP", "svc-", "READ", "PREFIXED", "ALLOW"),
    ("User:alice", "TRANSACTIONAL_ID", "tx-", "WRITE", "PREFIXED", "ALLOW"),
    ("User:bob", "GROUP", "*", "DESCRIBE", "LITERAL", "ALLOW"),
    ("User:bob", "TOPIC", "orders", "READ", "LITERAL", "ALLOW"),
    ("User:bob", "CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE", "LITERAL", "ALLOW"),
    ("User:bob", "CLUSTER", "kafka-cluster", "CREATE", "LITERAL", "ALLOW"),
]
#: cell -> why the mock answers differently from Kafka (empty: none found).
DIFFERENCES: dict[str, str] = {}


class Side:
    """One cluster under test: its SASL_SSL address and CA."""

    def __init__(self, address: str, ca: str) -> None:
        self.address, self.ca = address, ca

    def login(self, user: str, mechanism: str = "SCRAM-SHA-512"):
        """A wire client authenticated as `user`."""
        client = connect(self.address, ca=self.ca, timeout=15)
        if mechanism == "PLAIN":
            done = plain_login(client, user, USERS[user])
        else:
            done = scram_login(client, mechanism, user, USERS[user])
        assert done["error_code"] == ErrorCode.NONE, done
        return client


def _setup(side: Side) -> None:
    """The topics and ACLs, created by the super user through the SASL_SSL listener."""
    with side.login("admin") as admin:
        topics = [{"name": n, "num_partitions": 1, "replication_factor": 1} for n in TOPICS]
        admin.call(ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout_ms": 30000})
        creations = [
            binding_from_names(principal, kind, name, op, pattern, permission).creation()
            for principal, kind, name, op, pattern, permission in ACLS
        ]
        created = admin.call(ApiKey.CREATE_ACLS, 3, {"creations": creations})
        assert {r["error_code"] for r in created["results"]} == {ErrorCode.NONE}, created
        # Kafka's broker authorizer learns ACLs from the metadata log a moment later
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            listed = admin.call(ApiKey.DESCRIBE_ACLS, 3, _ANY_ACL)
            if sum(len(r["acls"]) for r in listed["resources"]) == len(ACLS):
                break
            time.sleep(0.2)  # bounded: polled until the ACLs are listed
        time.sleep(1.0)  # Kafka's metadata propagation to the authorizer has no signal


@pytest.fixture(scope="module")
def kafka_side(kafka_dist: KafkaDist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    """Real Kafka, one node, SASL_SSL beside PLAINTEXT."""
    try:
        cluster = SecuredKafka.start(kafka_dist, tmp_path_factory.mktemp("kafka-sasl"), single())
    except KafkaUnavailable as e:
        pytest.skip(f"real Kafka did not start: {e}")
    try:
        cluster.add_scram_users()
        side = Side(cluster.sasl_bootstrap(), cluster.ca_path)
        _setup(side)
        yield side
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def mock_side() -> Iterator[Side]:
    """A one-broker mock configured as the real node is."""
    with secured_mock() as cluster:
        side = Side(cluster.bootstrap_servers, cluster.ssl_ca_location)
        _setup(side)
        yield side


# -- logins ------------------------------------------------------------------------------------


def _logins(side: Side) -> dict[str, tuple]:
    out = {}
    for label, mechanism, user, password in (
        ("scram right", "SCRAM-SHA-512", "alice", "alice-secret"),
        ("scram wrong", "SCRAM-SHA-512", "alice", "nope"),
        ("scram unknown user", "SCRAM-SHA-512", "mallory", "x"),
        ("plain right", "PLAIN", "alice", "alice-secret"),
        ("plain wrong", "PLAIN", "alice", "nope"),
        ("plain unknown user", "PLAIN", "mallory", "x"),
    ):
        with connect(side.address, ca=side.ca) as client:
            if mechanism == "PLAIN":
                done = plain_login(client, user, password)
            else:
                done = scram_login(client, mechanism, user, password)
            out[label] = (done["error_code"], done["error_message"] or None)
    with connect(side.address, ca=side.ca) as client:
        body = handshake(client, "GSSAPI")
        out["unknown mechanism"] = (body["error_code"], tuple(sorted(body["mechanisms"])))
        out["closed after it"] = client.receive_frame() == b""
    with connect(side.address, ca=side.ca) as client:
        client.send(ApiKey.METADATA, 12, {"topics": None})
        out["metadata before login closes"] = client.receive_frame() == b""
    return out


def test_logins_are_answered_alike(kafka_side, mock_side):
    assert _logins(mock_side) == _logins(kafka_side)


# -- the authorization matrix --------------------------------------------------------------------


def _retrying(call: Callable[[], int]) -> int:
    deadline = time.monotonic() + 20
    code = call()
    while code in RETRIED and time.monotonic() < deadline:
        time.sleep(0.2)  # bounded: a coordinator still loading
        code = call()
    return code


_ANY_ACL = {
    "resource_type_filter": AclResourceType.ANY,
    "resource_name_filter": None,
    "pattern_type_filter": PatternType.ANY,
    "principal_filter": None,
    "host_filter": None,
    "operation": AclOperation.ANY,
    "permission_type": AclPermissionType.ANY,
}
_NEW_ACL = {
    "resource_type": AclResourceType.TOPIC,
    "resource_name": "x",
    "resource_pattern_type": PatternType.LITERAL,
    "principal": "User:bob",
    "host": "*",
    "operation": AclOperation.READ,
    "permission_type": AclPermissionType.ALLOW,
}


def _topic_cells(client, topic: str) -> dict[str, int]:
    batch = build_batch([{"key": None, "value": b"v"}])
    one = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    md = client.call(
        ApiKey.METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    )
    produce = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    pr = client.call(ApiKey.PRODUCE, 9, produce)["responses"][0]["partition_responses"][0]
    fetch = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20}
    fetch["topics"] = [{"topic": topic, "partitions": [one]}]
    fr = client.call(ApiKey.FETCH, 12, fetch)
    offsets = {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}
    lo = client.call(ApiKey.LIST_OFFSETS, 7, {"replica_id": -1, "topics": [offsets]})
    return {
        f"metadata {topic}": md["topics"][0]["error_code"],
        f"produce {topic}": pr["error_code"],
        f"fetch {topic}": fr["error_code"] or fr["responses"][0]["partitions"][0]["error_code"],
        f"list offsets {topic}": lo["topics"][0]["partitions"][0]["error_code"],
        f"describe configs {topic}": _describe_config(client, ConfigResourceType.TOPIC, topic),
    }


def _describe_config(client, kind: int, name: str) -> int:
    resource = {"resource_type": kind, "resource_name": name, "configuration_keys": None}
    return client.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [resource]})["results"][0][
        "error_code"
    ]


def _find(client, key_type: int, key: str) -> int:
    body = {"key_type": key_type, "coordinator_keys": [key]}
    return _retrying(
        lambda: client.call(ApiKey.FIND_COORDINATOR, 4, body)["coordinators"][0]["error_code"]
    )


def _group_cells(client, group: str) -> dict[str, int]:
    join = {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    return {
        f"find coordinator {group}": _find(client, 0, group),
        f"join group {group}": _retrying(
            lambda: client.call(ApiKey.JOIN_GROUP, 5, join)["error_code"]
        ),
        f"offset fetch {group}": _retrying(
            lambda: client.call(ApiKey.OFFSET_FETCH, 7, {"group_id": group, "topics": None})[
                "error_code"
            ]
        ),
        f"describe group {group}": _retrying(
            lambda: client.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group]})["groups"][0][
                "error_code"
            ]
        ),
    }


def _cells(client) -> dict[str, int]:
    out: dict[str, int] = {}
    for topic in TOPICS:
        out.update(_topic_cells(client, topic))
    for group in GROUPS:
        out.update(_group_cells(client, group))
    for txn in ("tx-1", "ty-1"):
        # Kafka makes __transaction_state on the first FindCoordinator for a transaction
        out[f"find coordinator {txn}"] = _find(client, 1, txn)
    for txn in ("tx-1", "ty-1", None):
        init = {"transactional_id": txn, "transaction_timeout_ms": 60000}
        out[f"init producer id {txn}"] = _retrying(
            lambda i=init: client.call(ApiKey.INIT_PRODUCER_ID, 4, i)["error_code"]
        )
    for name in ("svc-new", "new-x"):
        topic = {"name": name, "num_partitions": 1, "replication_factor": 1}
        request = {"topics": [topic], "timeout_ms": 5000, "validate_only": True}
        out[f"create topic {name}"] = client.call(ApiKey.CREATE_TOPICS, 7, request)["topics"][0][
            "error_code"
        ]
    out["describe configs broker"] = _describe_config(client, ConfigResourceType.BROKER, "0")
    out["describe acls"] = client.call(ApiKey.DESCRIBE_ACLS, 3, _ANY_ACL)["error_code"]
    created = client.call(ApiKey.CREATE_ACLS, 3, {"creations": [_NEW_ACL]})
    out["create acls"] = created["results"][0]["error_code"]
    return out


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_the_authorization_matrix_is_answered_alike(kafka_side, mock_side, user):
    with kafka_side.login(user) as client:
        kafka = _cells(client)
    with mock_side.login(user) as client:
        mock = _cells(client)
    assert len(kafka) >= 30
    # the matrix reaches every kind of refusal, not only successes
    refusals = {
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
    assert refusals <= set(kafka.values())
    differ = {cell: (mock[cell], kafka[cell]) for cell in kafka if mock[cell] != kafka[cell]}
    assert {c: v for c, v in differ.items() if f"{user}: {c}" not in DIFFERENCES} == {}


SECURITY_APIS = (
    ApiKey.SASL_HANDSHAKE,
    ApiKey.SASL_AUTHENTICATE,
    ApiKey.DESCRIBE_ACLS,
    ApiKey.CREATE_ACLS,
    ApiKey.DELETE_ACLS,
    ApiKey.CREATE_DELEGATION_TOKEN,
    ApiKey.RENEW_DELEGATION_TOKEN,
    ApiKey.EXPIRE_DELEGATION_TOKEN,
    ApiKey.DESCRIBE_DELEGATION_TOKEN,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
)


def _security_ranges(side: Side) -> dict[int, tuple[int, int]]:
    with connect(side.address, ca=side.ca) as client:
        # Kafka answers INVALID_REQUEST, and no ranges, to a client without a software version
        software = {"client_software_name": "kipwire", "client_software_version": "1"}
        body = client.call(ApiKey.API_VERSIONS, 3, software)
    return {
        k["api_key"]: (k["min_version"], k["max_version"])
        for k in body["api_keys"]
        if k["api_key"] in SECURITY_APIS
    }


def test_the_security_apis_are_advertised_alike(kafka_side, mock_side):
    kafka = _security_ranges(kafka_side)
    assert set(kafka) == set(SECURITY_APIS)
    assert _security_ranges(mock_side) == kafka
