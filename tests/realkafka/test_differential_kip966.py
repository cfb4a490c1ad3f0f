"""KIP-966 differential: the `kip966_story` steps (clean shutdowns, a hard kill, restarts, min ISR
changes) on kipwire's `Semantics.KAFKA_4_4` mock cluster must leave partition 0 as real Kafka 4.4.0
left it after each step: leader, ISR, ELR and LastKnownElr from DescribeTopicPartitions (Kafka
4.1.2 left it the same way: see test_realkafka_kip966); and the mock controller's records of the
topic must be those Kafka 4.4.0's controller wrote (data/kip966_kafka_4_4.json), but for the
differences `KNOWN_RECORD_DIFFERENCES` lists with their reasons.

The real side is the session's story run (`kip966_story`, shared with the metadata-log and
capture tests); the mock runs the same `run_story` with its brokers 1-3 stopped and restarted
and broker 4 standing in for Kafka's always-up node 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_harness import HEARTBEAT_INTERVAL_MS, REPLICA_LAG_MS, SESSION_TIMEOUT_MS
from kafka_metadata_log import decode_entry, story_records
from kip966_story import EXPECTED, TOPIC, PartitionView, run_story

from kipwire.mockbroker import MockCluster, Semantics

OBSERVER = 4
#: the mock reaches each step's state in well under a second; a wrong state fails in this time
MOCK_STEP_TIMEOUT_S = 10.0
#: kafka_harness's timing, so fencing and ISR shrinks come after the same delays.
HARNESS_CONFIG = {
    "auto.create.topics.enable": "false",
    "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "broker.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
    "replica.lag.time.max.ms": str(REPLICA_LAG_MS),
}
RECORDED = Path(__file__).parent / "data" / "kip966_kafka_4_4.json"

_NULL_ELR = (
    "Kafka 4.4.0's PartitionRecord of a new partition leaves the ELR and LastKnownElr tagged "
    "fields null (not written); the mock writes them as empty lists"
)
_ISR_ORDER = (
    "Kafka 4.4.0's leader asks (AlterPartition) for the ISR a replica rejoins in ascending broker "
    "id order, and its controller writes that; the mock's leader appends the replica, as Kafka "
    "4.1.2's did"
)
#: (index of the record in the story, field) -> (Kafka 4.4.0's value, the mock's, why they differ)
KNOWN_RECORD_DIFFERENCES: dict[tuple[int, str], tuple[Any, Any, str]] = {
    (3, "eligible_leader_replicas"): (None, [], _NULL_ELR),
    (3, "last_known_elr"): (None, [], _NULL_ELR),
    (9, "isr"): ([1, 2], [2, 1], _ISR_ORDER),
    (10, "isr"): ([1, 2, 3], [2, 1, 3], _ISR_ORDER),
    (11, "isr"): ([1, 2], [2, 1], _ISR_ORDER),
}


class MockStoryCluster:
    """`kip966_story.StoryCluster` on a MockCluster: Kafka's SIGTERM is a clean stop, SIGKILL
    an unclean one (the unflushed suffix is lost), a restart registers again."""

    def __init__(self, cluster: MockCluster) -> None:
        self.cluster = cluster

    def stop_node(self, node_id: int) -> None:
        """Controlled shutdown, as SIGTERM gives a Kafka broker."""
        self.cluster.stop_broker(node_id, clean=True)

    def hard_kill(self, node_id: int) -> None:
        """A crash: no controlled shutdown, no clean-shutdown file."""
        self.cluster.stop_broker(node_id, clean=False)

    def restart(self, node_id: int) -> None:
        """Start the broker again; it registers with its previous epoch if it stopped cleanly."""
        self.cluster.start_broker(node_id)

    def observer_port(self) -> int:
        """The port of the broker the story never stops."""
        address = self.cluster.bootstrap_servers.split(",")[OBSERVER - 1]
        return int(address.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def mock_run() -> Iterator[tuple[list[tuple[str, PartitionView | None]], list[dict[str, Any]]]]:
    """The story's steps as the mock's DescribeTopicPartitions showed them, and the topic's
    records in the mock controller's metadata log."""
    with MockCluster(
        brokers=OBSERVER, semantics=Semantics.KAFKA_4_4, config=HARNESS_CONFIG
    ) as cluster:
        steps = run_story(MockStoryCluster(cluster), MOCK_STEP_TIMEOUT_S)
        entries = {e.offset: decode_entry(e.data) for e in cluster.controller.log}
        yield steps, story_records(entries, TOPIC)


def test_mock_story_is_real_kafkas(
    kip966_story: list[tuple[str, PartitionView | None]],
    mock_run: tuple[list[tuple[str, PartitionView | None]], list[dict[str, Any]]],
) -> None:
    # real Kafka went through every step, so the comparison covers the whole story
    assert [name for name, _ in kip966_story] == [name for name, _w, _v in EXPECTED]
    assert mock_run[0] == kip966_story


def test_mock_writes_the_records_kafka_wrote(
    mock_run: tuple[list[tuple[str, PartitionView | None]], list[dict[str, Any]]],
) -> None:
    kafka = json.loads(RECORDED.read_text())["records"]
    ours = mock_run[1]
    assert [(r["type"], r["version"]) for r in ours] == [(r["type"], r["version"]) for r in kafka]
    differing = {
        (i, field): (theirs["data"][field], mine["data"].get(field))
        for i, (theirs, mine) in enumerate(zip(kafka, ours, strict=True))
        for field in theirs["data"]
        if theirs["data"][field] != mine["data"].get(field)
    }
    assert differing == {k: v[:2] for k, v in KNOWN_RECORD_DIFFERENCES.items()}
