"""Kafka 4.4.0's `kafka-log-dirs --describe` and a log-dir move with `kafka-reassign-partitions`
(a `log_dirs` entry in the reassignment JSON) against a mock whose brokers have two `log.dirs`
entries each, on disk: the sizes `--describe` shows are the replicas' files, and the move
carries the files to the other directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_dist import KafkaDist
from realkafka_wire import WireConnection

from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster

LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
TIMEOUT = 120


@pytest.fixture(scope="module")
def mock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockCluster]:
    base = tmp_path_factory.mktemp("mock-log-dirs")
    with MockCluster(brokers=2, config={"log.dirs": f"{base}/a,{base}/b"}) as running:
        running.create_topic("dirs", partitions=2, replication_factor=2)
        _produce(running, 1, 5)
        yield running


def _produce(mock: MockCluster, index: int, count: int) -> None:
    """`count` records to partition `index` of "dirs", replicated and flushed on both brokers."""
    leader = mock.partition("dirs", index).leader
    batch = build_batch([{"value": b"r%d" % i} for i in range(count)])
    body = {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "dirs", "partition_data": [{"index": index, "records": batch}]}],
    }
    node = mock.cluster.node(leader)
    with WireConnection(node.host, node.port) as connection:
        answer = connection.call(ApiKey.PRODUCE, 9, body).body
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    for broker in (1, 2):
        replica = mock.cluster.node(broker)
        mock.wait_until(lambda n=replica: n.logs["dirs", index].end_offset >= count)
        mock.flush(broker)


def _file_bytes(log_dir: str, partition: str) -> int:
    return sum(p.stat().st_size for p in (Path(log_dir) / partition).glob("*.log"))


def _tool(dist: KafkaDist, main: str, *args: str) -> str:
    return dist.tool_output(main, *args, timeout=TIMEOUT)


def _describe(dist: KafkaDist, mock: MockCluster) -> dict[str, Any]:
    """kafka-log-dirs --describe's JSON line, parsed."""
    out = _tool(
        dist, LOG_DIRS, "--bootstrap-server", mock.bootstrap_servers, "--describe"
    ).splitlines()
    assert out[0] == "Querying brokers for log directories information"
    assert out[1] == "Received log directory information from brokers 1,2"
    return json.loads(out[2])


def _where(described: dict[str, Any], broker: int, partition: str) -> list[str]:
    """The log dirs of a broker that hold a partition ("dirs-0")."""
    (entry,) = [b for b in described["brokers"] if b["broker"] == broker]
    return [
        d["logDir"]
        for d in entry["logDirs"]
        if any(p["partition"] == partition for p in d["partitions"])
    ]


def test_kafka_log_dirs_describe(kafka_dist: KafkaDist, mock: MockCluster) -> None:
    described = _describe(kafka_dist, mock)
    assert described["version"] == 1
    assert sorted(b["broker"] for b in described["brokers"]) == [1, 2]
    for entry in described["brokers"]:
        node = mock.cluster.node(entry["broker"])
        assert sorted(d["logDir"] for d in entry["logDirs"]) == sorted(
            d.path for d in node.replica_dirs.dirs
        )
        assert all(d["error"] is None for d in entry["logDirs"])
        partitions = sorted(p["partition"] for d in entry["logDirs"] for p in d["partitions"])
        assert partitions == ["dirs-0", "dirs-1"]
        for d in entry["logDirs"]:
            for p in d["partitions"]:
                assert (p["offsetLag"], p["isFuture"]) == (0, False)
                assert p["size"] == _file_bytes(d["logDir"], p["partition"])
                assert (p["size"] > 0) == (p["partition"] == "dirs-1")


def test_a_log_dir_move_with_kafka_reassign_partitions(
    kafka_dist: KafkaDist, mock: MockCluster, tmp_path: Path
) -> None:
    replicas = mock.partition("dirs", 0).replicas
    (was,) = _where(_describe(kafka_dist, mock), replicas[0], "dirs-0")
    (target,) = [d.path for d in mock.cluster.node(replicas[0]).replica_dirs.dirs if d.path != was]
    plan = tmp_path / "move.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {
                        "topic": "dirs",
                        "partition": 0,
                        "replicas": replicas,
                        "log_dirs": [target, "any"],
                    }
                ],
            }
        )
    )
    common = ("--bootstrap-server", mock.bootstrap_servers, "--reassignment-json-file", str(plan))
    executed = _tool(kafka_dist, REASSIGN, *common, "--execute")
    assert "Successfully started partition reassignment for dirs-0" in executed
    verified = _tool(kafka_dist, REASSIGN, *common, "--verify")
    assert "Reassignment of partition dirs-0 is completed." in verified
    assert f"Reassignment of replica dirs-0-{replicas[0]} completed successfully." in verified, (
        verified
    )
    assert _where(_describe(kafka_dist, mock), replicas[0], "dirs-0") == [target]
    assert (Path(target) / "dirs-0").is_dir()
    assert not (Path(was) / "dirs-0").exists()
    _produce(mock, 0, 3)
    assert _file_bytes(target, "dirs-0") > 0
