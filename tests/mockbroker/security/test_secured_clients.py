"""Real clients against secured clusters: SASL_SSL with SCRAM (and PLAIN, OAUTHBEARER), SSL
with mTLS; each produces and consumes through `cluster.client_config` alone."""

from __future__ import annotations

import itertools
import re
import subprocess
import time
from collections.abc import Iterator

import pytest
from secured_clients import KCAT, LIBRARIES

from kipwire.mockbroker import MockCluster

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
_topics = itertools.count()


def _library(name: str):
    if name == "kcat" and KCAT is None:
        pytest.skip("kcat is not installed (Debian: kcat)")
    return LIBRARIES[name]


@pytest.fixture(scope="module")
def sasl_ssl() -> Iterator[MockCluster]:
    """SASL_SSL with SCRAM-SHA-512 first, then SCRAM-SHA-256, PLAIN and OAUTHBEARER."""
    with MockCluster(
        brokers=2,
        security_protocol="SASL_SSL",
        sasl_mechanisms=("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN", "OAUTHBEARER"),
        users=USERS,
        super_users=("admin",),
    ) as running:
        yield running


@pytest.fixture(scope="module")
def mtls() -> Iterator[MockCluster]:
    """SSL listeners that require a client certificate of the cluster's CA."""
    with MockCluster(brokers=2, security_protocol="SSL", ssl_client_auth="required") as running:
        yield running


def _topic(cluster: MockCluster) -> str:
    name = f"secured-{next(_topics)}"
    cluster.create_topic(name, partitions=1, replication_factor=2)
    return name


@pytest.mark.parametrize("library", ["aiokafka", "confluent-kafka", "kafka-python"])
def test_sasl_ssl_scram(sasl_ssl, library):
    values = [b"scram-%d" % i for i in range(40)]
    topic = _topic(sasl_ssl)
    assert sorted(LIBRARIES[library](sasl_ssl, "alice", topic, values)) == sorted(values)


def test_kcat_sasl_ssl(sasl_ssl):
    values = [b"kcat-%d" % i for i in range(40)]
    topic = _topic(sasl_ssl)
    seen = _library("kcat")(sasl_ssl, "alice", topic, values, mechanism="PLAIN")
    assert sorted(seen) == sorted(values)


def test_kcat_scram_fails_as_against_kafka_4_when_its_librdkafka_is_older_than_2_6_1(sasl_ssl):
    # librdkafka before 2.6.1 (librdkafka#4895) repeats the client nonce in its final message;
    # Kafka 4.x compares the nonce strictly (RFC 5802) and refuses it, and so does the mock
    done = subprocess.run([_library("kcat") and KCAT, "-V"], capture_output=True, text=True)
    version = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", done.stdout)
    assert version is not None
    topic = _topic(sasl_ssl)
    if tuple(map(int, version.groups())) >= (2, 6, 1):
        assert LIBRARIES["kcat"](sasl_ssl, "alice", topic, [b"v"]) == [b"v"]
    else:
        with pytest.raises(subprocess.CalledProcessError) as failed:
            LIBRARIES["kcat"](sasl_ssl, "alice", topic, [b"v"])
        assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in failed.value.stderr


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN", "OAUTHBEARER"])
@pytest.mark.parametrize("library", ["aiokafka", "confluent-kafka", "kafka-python"])
def test_sasl_ssl_other_mechanisms(sasl_ssl, library, mechanism):
    values = [b"m-%d" % i for i in range(10)]
    topic = _topic(sasl_ssl)
    seen = LIBRARIES[library](sasl_ssl, "alice", topic, values, mechanism=mechanism)
    assert sorted(seen) == sorted(values)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_mtls(mtls, library):
    values = [b"mtls-%d" % i for i in range(40)]
    topic = _topic(mtls)
    assert sorted(_library(library)(mtls, "alice", topic, values)) == sorted(values)


def test_a_wrong_password_is_reported_as_an_authentication_error(sasl_ssl):
    from confluent_kafka import KafkaError, Producer

    errors: list = []
    config = {**sasl_ssl.client_config("alice"), "sasl.password": "wrong"}
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert "Authentication failed during authentication due to invalid credentials" in (
        errors[0].str()
    )


def test_java_properties(sasl_ssl, mtls):
    text = sasl_ssl.client_config("alice", library="java")
    assert "security.protocol=SASL_SSL\n" in text and "sasl.mechanism=SCRAM-SHA-512\n" in text
    assert (
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="alice-secret";\n'
    ) in text
    assert f"ssl.truststore.location={sasl_ssl.ssl_ca_location}\n" in text
    assert "ssl.keystore.location=" in mtls.client_config("alice", library="java")


def test_client_config_refuses_unknown_users_and_mechanisms(sasl_ssl):
    with pytest.raises(ValueError, match="no user 'bob'"):
        sasl_ssl.client_config("bob")
    with pytest.raises(ValueError, match="GSSAPI is not enabled"):
        sasl_ssl.client_config("alice", mechanism="GSSAPI")
    with pytest.raises(ValueError, match="library must be one of"):
        sasl_ssl.client_config("alice", library="franz-go")


def test_requested_client_auth_takes_clients_with_and_without_a_certificate():
    with MockCluster(brokers=1, security_protocol="SSL", ssl_client_auth="requested") as cluster:
        topic = _topic_rf1(cluster)
        with_cert = LIBRARIES["confluent-kafka"](cluster, "alice", topic, [b"a"])
        config = {
            k: v
            for k, v in cluster.client_config("alice").items()
            if not k.startswith(("ssl.certificate", "ssl.key"))
        }
        from confluent_kafka import Producer

        producer = Producer(config)
        producer.produce(topic, b"b")
        assert producer.flush(10) == 0
    assert with_cert == [b"a"]


def _topic_rf1(cluster: MockCluster) -> str:
    name = f"secured-{next(_topics)}"
    cluster.create_topic(name)
    return name
