"""Kafka 4.4.0's Java KafkaShareConsumer (kafka-clients, cached by tests/realkafka's kafka_dist)
reads from the mock with acknowledgements: ACCEPT, RELEASE then a redelivery with a higher
delivery count, REJECT never redelivered, and two consumers of one share group sharing a
partition's records without delivering any record twice. Skipped with the reason where java or
the jars cannot be had."""

from __future__ import annotations

import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from kipwire.mockbroker import MockCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "realkafka"))
from kafka_dist import KafkaDist, KafkaUnavailable, ensure_kafka_clients  # noqa: E402

pytestmark = pytest.mark.requires("java")  # Kafka's own Java code

SOURCE = Path(__file__).resolve().parent / "java" / "ShareConsumerCheck.java"
RUN_TIMEOUT_S = 120


@cache
def _compiled(tmp: str) -> tuple[KafkaDist, Path]:
    dist = ensure_kafka_clients()
    javac = shutil.which("javac")
    if javac is None:
        raise KafkaUnavailable("javac is not installed")
    out = Path(tmp)
    done = subprocess.run(
        [javac, "-cp", dist.classpath, "-d", str(out), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"javac failed: {done.stderr}")
    return dist, out


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> tuple[KafkaDist, Path]:
    try:
        return _compiled(str(tmp_path_factory.mktemp("share-java")))
    except KafkaUnavailable as exc:
        pytest.skip(f"Kafka's Java clients unavailable: {exc}")


@pytest.fixture(scope="module")
def share_cluster():
    # a short heartbeat interval so a second member's join reaches the first one quickly
    with MockCluster(brokers=3, config={"group.share.heartbeat.interval.ms": "1000"}) as running:
        yield running


def _run(java: tuple[KafkaDist, Path], cluster: MockCluster, *args: str) -> list[list[str]]:
    dist, classes = java
    cp = f"{classes}:{dist.classpath}"
    done = subprocess.run(
        [dist.java, "-cp", cp, "ShareConsumerCheck", cluster.bootstrap_servers, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines and lines[-1] == "DONE", done.stdout[-2000:] + done.stderr[-2000:]
    return [line.split()[1:] for line in lines if line.startswith("DELIVERED")]


def test_java_share_consumer_acknowledgements(java, share_cluster):
    share_cluster.create_topic("share-acks", partitions=1, replication_factor=2)
    deliveries = _run(java, share_cluster, "share-acks", "share-acks-group", "acks", "5")
    counts: dict[str, list[int]] = {}
    for _, key, count in deliveries:
        counts.setdefault(key, []).append(int(count))
    # k1 was released and came back with delivery count 2; k2 rejected, never again
    assert counts == {"k0": [1], "k1": [1, 2], "k2": [1], "k3": [1], "k4": [1]}


def test_two_java_share_consumers_share_a_partition(java, share_cluster):
    share_cluster.create_topic("share-two", partitions=1, replication_factor=2)
    deliveries = _run(java, share_cluster, "share-two", "share-two-group", "two", "30")
    keys = [key for _, key, _ in deliveries]
    assert sorted(keys) == sorted(f"k{i}" for i in range(30))  # each record once
    assert {who for who, _, _ in deliveries} == {"c1", "c2"}
    assert all(count == "1" for _, _, count in deliveries)
