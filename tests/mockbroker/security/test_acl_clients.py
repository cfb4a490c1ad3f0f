"""Real clients against the authorizer: confluent-kafka's AdminClient managing ACLs, a consumer
that needs READ on its group, an idempotent producer allowed by WRITE on its topic (KIP-679),
kafka-python told which topic it may not read."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from kipwire.mockbroker import MockCluster

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
DEADLINE = 20.0


@pytest.fixture(scope="module")
def guarded() -> Iterator[MockCluster]:
    """SASL_SSL, SCRAM-SHA-512, the authorizer on, `admin` a super user."""
    with MockCluster(
        brokers=2,
        security_protocol="SASL_SSL",
        sasl_mechanisms=("SCRAM-SHA-512",),
        users=USERS,
        super_users=("admin",),
        authorizer=True,
    ) as running:
        yield running


def _consume(config: dict, topic: str, group: str, count: int) -> tuple[list, list]:
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen, errors = [], []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(seen) < count and not errors and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.3):
                if message.error() is None:
                    seen.append(message.value())
                elif message.error().code() != KafkaError._PARTITION_EOF:
                    errors.append(message.error().code())
    finally:
        consumer.close()
    return seen, errors


def test_admin_client_creates_describes_and_deletes_acls(guarded):
    admin = AdminClient(guarded.client_config("admin"))
    binding = AclBinding(
        ResourceType.TOPIC,
        "audit",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([binding]).values():
        assert future.result(10) is None
    assert any(a.resource_name == "audit" for a in guarded.acls())
    match = AclBindingFilter(
        ResourceType.TOPIC,
        "audit",
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert [b.principal for b in admin.describe_acls(match).result(10)] == ["User:alice"]
    deleted = admin.delete_acls([match])
    assert [b.name for f in deleted.values() for b in f.result(10)] == ["audit"]


def test_a_consumer_needs_read_on_its_group(guarded):
    guarded.create_topic("events", partitions=1, replication_factor=2)
    guarded.add_acl("User:alice", "TOPIC", "events", "ALL")
    alice = guarded.client_config("alice")
    producer = Producer(alice)  # idempotent by default: WRITE on the topic is enough (KIP-679)
    failures: list = []
    for i in range(10):
        producer.produce("events", b"e%d" % i, on_delivery=lambda e, m: e and failures.append(e))
    assert producer.flush(DEADLINE) == 0 and failures == []
    seen, errors = _consume(alice, "events", "svc-reader", 10)
    assert errors == [KafkaError.GROUP_AUTHORIZATION_FAILED]
    guarded.add_acl("User:alice", "GROUP", "svc-", "READ", pattern="PREFIXED")
    seen, errors = _consume(alice, "events", "svc-reader", 10)
    assert errors == [] and len(seen) == 10


def test_kafka_python_is_told_a_topic_is_not_readable(guarded):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import TopicAuthorizationFailedError

    guarded.create_topic("payroll", partitions=1, replication_factor=2)
    guarded.add_acl("User:alice", "TOPIC", "payroll", "DESCRIBE")  # it may see it, not read it
    consumer = KafkaConsumer(**guarded.client_config("alice", library="kafka-python"))
    try:
        consumer.assign([TopicPartition("payroll", 0)])
        with pytest.raises(TopicAuthorizationFailedError):
            deadline = time.monotonic() + DEADLINE
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=200)
    finally:
        consumer.close()


def test_an_mtls_principal_is_its_certificates_dn():
    with MockCluster(
        brokers=1, security_protocol="SSL", ssl_client_auth="required", authorizer=True
    ) as mtls:
        mtls.create_topic("signed")
        mtls.add_acl("User:CN=alice,OU=mock,O=kipwire", "TOPIC", "signed", "WRITE")
        outcomes = {}
        for user in ("alice", "bob"):
            failures: list = []
            producer = Producer({**mtls.client_config(user), "enable.idempotence": False})
            producer.produce("signed", b"x", on_delivery=lambda e, m, f=failures: f.append(e))
            producer.flush(DEADLINE)
            outcomes[user] = failures[0].code() if failures and failures[0] else None
    assert outcomes == {"alice": None, "bob": KafkaError.TOPIC_AUTHORIZATION_FAILED}
