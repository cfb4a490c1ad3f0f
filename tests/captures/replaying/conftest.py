"""The story every replay test replays: recorded once per session against a 3-broker mock."""

from __future__ import annotations

from pathlib import Path

import pytest

from kipwire.mockbroker import MockCluster


def pytest_configure(config: pytest.Config) -> None:
    """The `realkafka` marker, also when only this folder runs (tests/realkafka registers it)."""
    config.addinivalue_line(
        "markers", "realkafka: runs a real Apache Kafka cluster (Java 17+, jars from Maven)"
    )


@pytest.fixture(scope="session")
def story(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The story's capture, and the records the recorded cluster held at its end."""
    kit = pytest.importorskip("replay_story_kit", reason="confluent-kafka is not installed")
    path = tmp_path_factory.mktemp("story") / "story.pcapng"
    with MockCluster(brokers=3, record=str(path)) as cluster:
        cluster.create_topic(kit.TOPIC, 2, 3)
        assert kit.story(cluster.bootstrap_servers) == kit.RECORDS
        held = kit.held(cluster.bootstrap_servers)
    return path, held
