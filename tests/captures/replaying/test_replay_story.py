"""A story recorded against a mock cluster, replayed against fresh mocks (real sockets).

The story (`replay_story_kit`, recorded once by `conftest.story`) uses confluent-kafka: admin
calls, an idempotent producer, a transactional producer, a consumer group that commits. Replayed
against a fresh mock with the same configuration it means the same thing and the target holds
the same records; against a mock that needs 3 in-sync replicas with one broker stopped, the
refused produces lead the report and `--fail-on semantic` fails.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kipwire.captures import replay
from kipwire.captures.cli import main
from kipwire.mockbroker import MockCluster

pytest.importorskip("confluent_kafka")

import replay_story_kit as kit  # noqa: E402


def _cluster(**config: object) -> MockCluster:
    cluster = MockCluster(brokers=3, config=config or None)
    cluster.start()
    cluster.create_topic(kit.TOPIC, 2, 3)
    return cluster


def test_replayed_on_a_fresh_mock_it_means_the_same_and_holds_the_same_records(
    story: tuple[Path, dict], tmp_path: Path
) -> None:
    capture, recorded = story
    assert sum(len(v) for v in recorded.values()) == kit.RECORDS + 5
    cluster = _cluster()
    try:
        result = replay([capture], bootstrap=cluster.bootstrap_servers, out=tmp_path / "out")
        assert result.semantic_differences == []
        assert result.connections >= 5 and result.requests_sent >= 30
        assert set(result.not_replayed_counts()) == {
            "cluster's own traffic (replication, controller)"
        }
        assert kit.held(cluster.bootstrap_servers) == recorded
    finally:
        cluster.close()
    for name in ("replay.pcapng", "report.md", "report.html", "diff.json"):
        assert (tmp_path / "out" / name).is_file()
    diff = json.loads((tmp_path / "out" / "diff.json").read_text())
    assert diff["semantic_differences"] == []
    assert diff["options"]["not_replayed"]


def test_one_broker_down_under_min_isr_3_fails_the_semantic_gate(
    story: tuple[Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture, _ = story
    cluster = _cluster(**{"min.insync.replicas": 3})
    try:
        cluster.stop_broker(3)
        assert cluster.wait_until(
            lambda: all(len(cluster.partition(kit.TOPIC, p).isr) == 2 for p in range(2)),
            kit.TIMEOUT,
        )
        argv = [
            "replay",
            str(capture),
            "--bootstrap",
            cluster.bootstrap_servers,
            "--out",
            str(tmp_path / "out"),
            "--fail-on",
            "semantic",
        ]
        assert main(argv) == 1
    finally:
        cluster.close()
    out = capsys.readouterr()
    assert "failing: differences of kind semantic" in out.err
    diff = json.loads((tmp_path / "out" / "diff.json").read_text())
    first = diff["semantic_differences"][0]
    assert first["kind"] == "errors" and "NOT_ENOUGH_REPLICAS" in first["summary"]
    assert "first: Produce errors NOT_ENOUGH_REPLICAS" in out.out


def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--out", str(tmp_path / "out")]
    assert main(["replay", str(tmp_path / "none.pcapng"), "--bootstrap", "h:1", *common]) == 2
    assert main(["replay", __file__, "--bootstrap", "no-port", *common]) == 2
    assert main(["replay", __file__, "--bootstrap", "h:1", "--pace", "slow", *common]) == 2
    assert main(["replay", __file__, "--bootstrap", "h:1", "--fail-on", "odd", *common]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4  # one line each
    assert "none.pcapng: no such file" in err[0]
    assert "--bootstrap: expected host:port" in err[1]
    assert "--pace" in err[2] and "odd" in err[3]


def _kafka_python_story(bootstrap: str) -> int:
    """kafka-python 3: an idempotent producer, then a group consumer committing what it read."""
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, client_id="kp-producer", enable_idempotence=True, acks="all"
    )
    for i in range(10):
        producer.send(kit.TOPIC, key=b"k%d" % i, value=b"v%d" % i)
    producer.flush(kit.TIMEOUT)
    producer.close(kit.TIMEOUT)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="kp-reader",
        group_id="kp-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    consumer.subscribe([kit.TOPIC])
    read, deadline = 0, time.monotonic() + kit.TIMEOUT
    try:
        while read < 10 and time.monotonic() < deadline:
            read += sum(len(batch) for batch in consumer.poll(500).values())
            consumer.commit()
    finally:
        consumer.close()
    return read


def test_a_kafka_python_story_replays_with_its_fetch_sessions(tmp_path: Path) -> None:
    pytest.importorskip("kafka")
    capture = tmp_path / "kp.pcapng"
    with MockCluster(brokers=3, record=str(capture)) as cluster:
        cluster.create_topic(kit.TOPIC, 2, 3)
        assert _kafka_python_story(cluster.bootstrap_servers) == 10
        recorded = kit.held(cluster.bootstrap_servers, [(kit.TOPIC, 2)])
    cluster = _cluster()
    try:
        result = replay([capture], bootstrap=cluster.bootstrap_servers, out=tmp_path / "out")
        assert result.semantic_differences == []
        assert kit.held(cluster.bootstrap_servers, [(kit.TOPIC, 2)]) == recorded
    finally:
        cluster.close()
