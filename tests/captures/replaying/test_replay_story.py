"""A story recorded against a mock cluster, replayed against fresh mocks (real sockets).

The story uses confluent-kafka: admin calls (CreateTopics, DescribeConfigs), an idempotent
producer, a transactional producer, and a consumer group that commits what it reads. Replayed
against a fresh mock with the same configuration it means the same thing and the target holds
the same records; against a mock that needs 3 in-sync replicas with one broker stopped, the
refused produces lead the report and `--fail-on semantic` fails.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kipwire.captures import replay
from kipwire.captures.cli import main
from kipwire.mockbroker import MockCluster

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

TOPIC, AUDIT = "orders", "audit"
RECORDS = 20
TIMEOUT = 30.0


def _story(bootstrap: str) -> int:
    """Run the story's clients; returns how many records the consumer read."""
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap, "client.id": "app-admin"})
    for future in admin.create_topics([admin_mod.NewTopic(AUDIT, 1, 1)]).values():
        future.result(TIMEOUT)
    resource = admin_mod.ConfigResource("topic", TOPIC)
    admin.describe_configs([resource])[resource].result(TIMEOUT)
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "app-producer",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    for i in range(RECORDS):
        producer.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, headers=[("seq", b"%d" % i)])
        if i % 5 == 4:  # several Produce requests per partition, acknowledged one by one
            assert producer.flush(TIMEOUT) == 0
    txn = ck.Producer(
        {"bootstrap.servers": bootstrap, "client.id": "app-txn", "transactional.id": "txn-1"}
    )
    txn.init_transactions(TIMEOUT)
    txn.begin_transaction()
    for i in range(5):
        txn.produce(AUDIT, key=b"t%d" % i, value=b"tv%d" % i)
    txn.commit_transaction(TIMEOUT)
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "app-reader",
            "group.id": "app-1",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    read, deadline = 0, time.monotonic() + TIMEOUT
    try:
        while read < RECORDS and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            read += 1
            consumer.commit(msg, asynchronous=False)
    finally:
        consumer.close()
    return read


def _held(bootstrap: str) -> dict[tuple[str, int], list[tuple]]:
    """Every committed record of the story's topics, per partition, as the cluster holds it."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "replay-check",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    held: dict[tuple[str, int], list[tuple]] = {}
    try:
        for topic, partitions in ((TOPIC, 2), (AUDIT, 1)):
            for p in range(partitions):
                low, high = consumer.get_watermark_offsets(
                    ck.TopicPartition(topic, p), timeout=TIMEOUT
                )
                got: list[tuple] = []
                if high > low:
                    consumer.assign([ck.TopicPartition(topic, p, low)])
                    deadline = time.monotonic() + TIMEOUT
                    while time.monotonic() < deadline and (not got or got[-1][0] < high - 1):
                        msg = consumer.poll(0.2)
                        if msg is not None and not msg.error():
                            got.append((msg.offset(), msg.key(), msg.value(), msg.headers()))
                        elif got and msg is None:
                            break  # a transaction marker ends the partition
                held[(topic, p)] = [g[1:] for g in got]
    finally:
        consumer.close()
    return held


def _cluster(**config: object) -> MockCluster:
    cluster = MockCluster(brokers=3, config=config or None)
    cluster.start()
    cluster.create_topic(TOPIC, 2, 3)
    return cluster


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    """The story's capture, and the records the recorded cluster held at its end."""
    path = tmp_path_factory.mktemp("story") / "story.pcapng"
    with MockCluster(brokers=3, record=str(path)) as cluster:
        cluster.create_topic(TOPIC, 2, 3)
        assert _story(cluster.bootstrap_servers) == RECORDS
        held = _held(cluster.bootstrap_servers)
    yield path, held


def test_replayed_on_a_fresh_mock_it_means_the_same_and_holds_the_same_records(
    story: tuple[Path, dict], tmp_path: Path
) -> None:
    capture, held = story
    assert sum(len(v) for v in held.values()) == RECORDS + 5
    cluster = _cluster()
    try:
        result = replay([capture], bootstrap=cluster.bootstrap_servers, out=tmp_path / "out")
        assert result.semantic_differences == []
        assert result.connections >= 5 and result.requests_sent >= 30
        assert set(result.not_replayed_counts()) == {
            "cluster's own traffic (replication, controller)"
        }
        assert _held(cluster.bootstrap_servers) == held
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
            lambda: all(len(cluster.partition(TOPIC, p).isr) == 2 for p in range(2)), TIMEOUT
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
