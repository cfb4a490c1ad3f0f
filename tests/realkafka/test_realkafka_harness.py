"""The harness itself: the pom it fetches with, and that every JVM it starts ends by its pid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka_dist import (
    KAFKA_4_1,
    KAFKA_VERSION,
    KafkaDist,
    KafkaUnavailable,
    artifacts,
    java_major,
    pom_xml,
)
from kafka_harness import KafkaCluster, is_alive, single


def test_pom_asks_for_the_server_the_tools_and_a_log_backend() -> None:
    pom = pom_xml()
    artifacts = set(re.findall(r"<artifactId>([^<]+)</artifactId>", pom))
    assert {"kafka_2.13", "kafka-server", "kafka-metadata", "kafka-tools"} <= artifacts
    assert {"log4j-core", "log4j-slf4j-impl"} <= artifacts
    assert KAFKA_VERSION == "4.4.0"
    assert pom.count(f"<version>{KAFKA_VERSION}</version>") == 4


def test_the_kafka_4_1_preset_release_is_a_version_parameter() -> None:
    pom = pom_xml(artifacts(KAFKA_4_1))
    assert pom.count(f"<version>{KAFKA_4_1}</version>") == 4
    assert KAFKA_VERSION not in pom


def test_java_is_new_enough(kafka_dist: KafkaDist) -> None:
    assert java_major(kafka_dist.java) >= 17


def test_every_jvm_ends_by_its_pid(kafka_dist: KafkaDist, tmp_path: Path) -> None:
    cluster = KafkaCluster.start(kafka_dist, tmp_path / "cluster", single())
    try:
        first = cluster.nodes[0].proc.pid
        cluster.hard_kill(0)
        assert not is_alive(first)
        assert not cluster.nodes[0].running
        cluster.restart(0)
        second = cluster.nodes[0].proc.pid
        assert second != first and cluster.live_brokers() == {0}
    finally:
        cluster.stop()
    assert not is_alive(second)
    assert cluster.nodes[0].proc is None


def test_a_running_node_cannot_be_started_twice(kafka_single: KafkaCluster) -> None:
    with pytest.raises(RuntimeError, match="still running"):
        kafka_single.restart(0)


def test_a_node_that_exits_while_starting_is_tried_again_then_named(
    kafka_dist: KafkaDist, tmp_path: Path
) -> None:
    # a cleaner map of 1 GiB cannot be allocated in the harness's 256 MiB heap: every attempt fails
    fails = {"log.cleaner.dedupe.buffer.size": str(1 << 30)}
    with pytest.raises(KafkaUnavailable) as e:
        KafkaCluster.start(kafka_dist, tmp_path / "cluster", single(), fails)
    assert re.fullmatch(
        r"attempt 1: node 0 exited while starting: .*\| java\.lang\.OutOfMemoryError: .*;"
        r" attempt 2: node 0 exited while starting: .*OutOfMemoryError.*",
        str(e.value),
    )
    assert (tmp_path / "cluster" / "retry-1" / "node0" / "server.log").exists()
