"""A Kafka Streams 4.4.0 word count with `group.protocol=streams` (KIP-1071) against the mock:
two instances of one application share the tasks, the group coordinator creates the repartition
and changelog topics, and after one instance stops the other carries on, so the final counts are
those of every line (what real Kafka's word count ends with), at least once and exactly once.
Skipped with the reason where java or the jars are missing, or while the broker does not list
StreamsGroupHeartbeat."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "realkafka"))
import kafka_dist  # noqa: E402

pytestmark = pytest.mark.requires("java")  # Kafka's own Java code

SOURCE = Path(__file__).resolve().parent / "java" / "StreamsWordCount.java"
RUN_TIMEOUT_S = 180
FIRST = ["the quick brown fox", "jumps over the lazy dog", "The dog sleeps"]
SECOND = ["a quick dog", "the end"]


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> tuple[kafka_dist.KafkaDist, Path]:
    try:
        dist = kafka_dist.ensure_kafka_streams()
    except kafka_dist.KafkaUnavailable as exc:
        pytest.skip(f"Kafka Streams unavailable: {exc}")
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("javac is not installed")
    out = tmp_path_factory.mktemp("streams-java")
    done = subprocess.run(
        [javac, "-cp", dist.classpath, "-d", str(out), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dist, out


def _lists_streams(cluster: MockCluster) -> bool:
    with WireClient(cluster.bootstrap_servers.split(",")[0]) as wire:
        reply = wire.call(ApiKey.API_VERSIONS, 3, {})
    assert reply["error_code"] == ErrorCode.NONE
    return any(k["api_key"] == ApiKey.STREAMS_GROUP_HEARTBEAT for k in reply["api_keys"])


def _expected(lines: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        for word in line.lower().split():
            counts[word] = counts.get(word, 0) + 1
    return counts


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_streams_word_count_with_two_instances_then_one(java, guarantee):
    config = {"group.streams.heartbeat.interval.ms": "500"}
    with MockCluster(brokers=3, config=config) as cluster:
        if not _lists_streams(cluster):
            pytest.skip("the broker's ApiVersions does not list StreamsGroupHeartbeat yet")
        cluster.create_topic("lines", partitions=2, replication_factor=2)
        cluster.create_topic("word-counts", partitions=2, replication_factor=2)
        dist, classes = java
        done = subprocess.run(
            [
                dist.java,
                "-cp",
                f"{classes}:{dist.classpath}",
                "StreamsWordCount",
                cluster.bootstrap_servers,
                "lines",
                "word-counts",
                "wordcount",
                *FIRST,
                "|",
                *SECOND,
            ],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
            # exactly_once_v2 commits offsets in transactions, read here read_committed
            env={**os.environ, "PROCESSING_GUARANTEE": guarantee},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        lines = done.stdout.splitlines()
        assert lines[-1:] == ["DONE"], done.stdout[-2000:]
        assert not [line for line in lines if line.startswith("TIMEOUT")], done.stdout[-2000:]
        counts = {
            w: int(n) for _, w, n in (line.split() for line in lines if line.startswith("COUNT"))
        }
        assert counts == _expected(FIRST + SECOND)
        group = cluster.cluster.streams_groups.group("wordcount")
        # both instances joined and left; the coordinator made the internal topics
        assert group is not None and not group.members and group.epoch >= 4
        internal = {t.name for t in cluster.controller.state.topics.values()}
        assert {"wordcount-counts-changelog", "wordcount-counts-repartition"} <= internal
        changelog = cluster.partition("wordcount-counts-changelog", 1)
        assert changelog is not None  # as many partitions as the counting subtopology's tasks
