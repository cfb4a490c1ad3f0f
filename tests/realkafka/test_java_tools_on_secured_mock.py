"""Kafka's own Java tools against a secured mock, configured by nothing but
`cluster.client_config(user, library="java")` as `--command-config`: kafka-topics over
SASL_SSL with SCRAM, and over mTLS with the PEM keystore of `client_cert`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kafka_dist import KafkaDist

from kipwire.mockbroker import MockCluster

TIMEOUT = 120


def _tool(dist: KafkaDist, main: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [dist.java, "-cp", dist.classpath, main, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize(
    "settings",
    [
        {"security_protocol": "SASL_SSL", "users": {"alice": "alice-secret"}},
        {"security_protocol": "SSL", "ssl_client_auth": "required"},
    ],
    ids=["sasl-ssl-scram", "mtls"],
)
def test_kafka_topics_with_command_config(kafka_dist, tmp_path: Path, settings):
    with MockCluster(brokers=1, **settings) as cluster:
        cluster.create_topic("from-the-mock")
        config = tmp_path / "client.properties"
        config.write_text(cluster.client_config("alice", library="java"))
        listed = _tool(
            kafka_dist,
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--command-config",
            str(config),
            "--list",
        )
    assert listed.returncode == 0, listed.stderr[-800:]
    assert "from-the-mock" in listed.stdout.split()


def test_kafka_delegation_tokens_creates_and_describes_a_token(kafka_dist, tmp_path: Path):
    with MockCluster(
        brokers=1, security_protocol="SASL_SSL", users={"alice": "alice-secret"}
    ) as cluster:
        config = tmp_path / "client.properties"
        config.write_text(cluster.client_config("alice", library="java"))
        common = ["--bootstrap-server", cluster.bootstrap_servers, "--command-config", str(config)]
        main = "org.apache.kafka.tools.DelegationTokenCommand"
        created = _tool(kafka_dist, main, *common, "--create", "--max-life-time-period", "-1")
        # without --owner-principal the tool sends an empty owner list: Kafka lists nothing
        described = _tool(
            kafka_dist, main, *common, "--describe", "--owner-principal", "User:alice"
        )
    assert created.returncode == 0, created.stderr[-800:]
    assert "Calling create token operation with renewers :[] , max-life-time-period :-1" in (
        created.stdout
    )
    assert described.returncode == 0, described.stderr[-800:]
    assert "User:alice" in described.stdout
