"""Fixtures that run real Apache Kafka: the fetched jars, a single-node cluster, and the
four-node ELR cluster whose brokers the KIP-966 story stops and restarts (run once, recorded).
All on Kafka 4.4.0, the codec's reference release, but `kafka_single_4_1`: Kafka 4.1.2, for the
tests that keep the mock's `Semantics.KAFKA_4_1` preset true to the release it names.

Every test in this folder is marked `realkafka` (deselect with `-m "not realkafka"`) and skips,
with the reason, when Kafka cannot run here (no Java 17+, no mvn, Maven Central unreachable, a
node that exits while starting, twice); under KIPWIRE_REQUIRE=java (CI) such a skip fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_capture import record
from kafka_dist import KAFKA_4_1, KafkaDist, KafkaUnavailable, ensure_kafka
from kafka_harness import KafkaCluster, NodeSpec, elr, single
from kip966_story import PartitionView, StoryRun, run_story

HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (here, not in pyproject: it belongs to this folder)."""
    config.addinivalue_line(
        "markers", "realkafka: runs a real Apache Kafka cluster (Java 17+, jars from Maven)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder `realkafka`."""
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.realkafka)


def _dist(version: str | None = None) -> KafkaDist:
    try:
        return ensure_kafka() if version is None else ensure_kafka(version)
    except KafkaUnavailable as e:
        pytest.skip(f"real Kafka unavailable: {e}")


@pytest.fixture(scope="session")
def kafka_dist() -> KafkaDist:
    """Kafka 4.4.0's jars (fetched once per machine), or a skip that says why not."""
    return _dist()


@pytest.fixture(scope="session")
def kafka_dist_4_1() -> KafkaDist:
    """Kafka 4.1.2's jars, for the tests of the mock's KAFKA_4_1 preset."""
    return _dist(KAFKA_4_1)


def _started(dist: KafkaDist, workdir: Path, layout: list[NodeSpec]) -> KafkaCluster:
    try:
        return KafkaCluster.start(dist, workdir, layout)
    except KafkaUnavailable as e:
        pytest.skip(f"real Kafka did not start: {e}")


@pytest.fixture(scope="session")
def kafka_single(
    kafka_dist: KafkaDist, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    """One combined controller+broker node, shared by the session's read-mostly tests."""
    cluster = _started(kafka_dist, tmp_path_factory.mktemp("kafka-single"), single())
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kafka_single_4_1(
    kafka_dist_4_1: KafkaDist, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    """One combined Kafka 4.1.2 node, for the tests of the mock's KAFKA_4_1 preset."""
    cluster = _started(kafka_dist_4_1, tmp_path_factory.mktemp("kafka-single-4-1"), single())
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def bootstrap(kafka_single: KafkaCluster) -> str:
    """bootstrap.servers of the single-node cluster."""
    return kafka_single.bootstrap()


@pytest.fixture(scope="session")
def kafka_elr(
    kafka_dist: KafkaDist, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    """Node 0 (controller + broker) and brokers 1-3; the KIP-966 story stops and restarts 1-3."""
    cluster = _started(kafka_dist, tmp_path_factory.mktemp("kafka-elr"), elr())
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kip966_run(kafka_elr: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> StoryRun:
    """The KIP-966 story, run once on the ELR cluster, with tcpdump on every listener if it can.

    Session-scoped because the metadata-log and capture tests read what the story left.
    """
    pcap = tmp_path_factory.mktemp("kip966-capture") / "kip966.pcap"
    with record(pcap, kafka_elr.listener_ports()) as recording:
        steps = run_story(kafka_elr)
    return StoryRun(steps, recording)


@pytest.fixture(scope="session")
def kip966_story(kip966_run: StoryRun) -> list[tuple[str, PartitionView | None]]:
    """The partition as DescribeTopicPartitions showed it after each step of the story."""
    return kip966_run.steps
