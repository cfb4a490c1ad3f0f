"""DescribeLogDirs and AlterReplicaLogDirs on brokers with two `log.dirs` entries and without any:
where replicas are placed, what the controller records of it (KIP-858), sizes, lags, volume
sizes, moves and the error codes Kafka's ReplicaManager answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster


@pytest.fixture(scope="module")
def two_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockCluster]:
    """Two brokers, each with two log directories."""
    base = tmp_path_factory.mktemp("logdirs")
    with MockCluster(brokers=2, config={"log.dirs": f"{base}/a,{base}/b"}) as running:
        yield running


def address(cluster: MockCluster, broker_id: int) -> str:
    return cluster.bootstrap_servers.split(",")[broker_id - 1]


def describe(cluster: MockCluster, broker_id: int, topics: Any = None, version: int = 4) -> Any:
    with WireClient(address(cluster, broker_id)) as client:
        return client.call(ApiKey.DESCRIBE_LOG_DIRS, version, {"topics": topics})


def placement(cluster: MockCluster, broker_id: int, topic: str) -> dict[int, str]:
    """partition -> the log dir DescribeLogDirs shows it in, on one broker."""
    out = {}
    for result in describe(cluster, broker_id)["results"]:
        for t in result["topics"]:
            if t["name"] == topic:
                out.update({p["partition_index"]: result["log_dir"] for p in t["partitions"]})
    return out


def alter(cluster: MockCluster, broker_id: int, path: str, topic: str, *parts: int) -> list[int]:
    with WireClient(address(cluster, broker_id)) as client:
        body = client.call(
            ApiKey.ALTER_REPLICA_LOG_DIRS,
            2,
            {"dirs": [{"path": path, "topics": [{"name": topic, "partitions": list(parts)}]}]},
        )
    return [p["error_code"] for t in body["results"] for p in t["partitions"]]


def recorded_dirs(cluster: MockCluster, broker_id: int, topic: str) -> dict[int, Any]:
    """partition -> the directory id the controller records for the broker's replica."""
    node = cluster.cluster.node(broker_id)
    out = {}
    for index, p in cluster.controller.state.topic(topic).partitions.items():
        if broker_id in p.replicas and len(p.directories) == len(p.replicas):
            out[index] = p.directories[p.replicas.index(broker_id)]
    return {
        i: node.replica_dirs.by_id(d) and node.replica_dirs.by_id(d).path for i, d in out.items()
    }


def test_replicas_spread_over_both_dirs_and_the_controller_records_them(
    two_dirs: MockCluster,
) -> None:
    two_dirs.create_topic("spread", partitions=4, replication_factor=2)
    for broker_id in (1, 2):
        where = placement(two_dirs, broker_id, "spread")
        assert sorted(where) == [0, 1, 2, 3]
        paths = [d.path for d in two_dirs.cluster.node(broker_id).replica_dirs.dirs]
        assert sorted(where.values()) == sorted(paths * 2)  # the fewest-replicas rule
        assert all(Path(p).name == f"broker-{broker_id}" for p in paths)
        two_dirs.wait_until(lambda b=broker_id, w=where: recorded_dirs(two_dirs, b, "spread") == w)


def test_sizes_lags_and_volume_bytes(two_dirs: MockCluster) -> None:
    two_dirs.create_topic("sized", partitions=1, replication_factor=2)
    leader = two_dirs.partition("sized", 0).leader
    records = build_batch([{"value": b"x" * 100} for _ in range(3)])
    with WireClient(address(two_dirs, leader)) as client:
        produced = client.call(
            ApiKey.PRODUCE,
            9,
            {
                "acks": -1,
                "timeout_ms": 5000,
                "topic_data": [
                    {"name": "sized", "partition_data": [{"index": 0, "records": records}]}
                ],
            },
        )
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    for broker_id in (1, 2):
        body = describe(two_dirs, broker_id, [{"topic": "sized", "partitions": [0]}])
        assert body["error_code"] == ErrorCode.NONE
        (holding,) = [r for r in body["results"] if r["topics"]]
        (part,) = holding["topics"][0]["partitions"]
        assert (part["partition_size"], part["offset_lag"], part["is_future_key"]) == (
            len(records),
            0,
            False,
        )
        assert all(r["error_code"] == ErrorCode.NONE for r in body["results"])
        assert all(0 < r["usable_bytes"] <= r["total_bytes"] for r in body["results"])


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_every_version_answers_with_its_fields(two_dirs: MockCluster, version: int) -> None:
    two_dirs.create_topic(f"versions{version}", partitions=1)
    body = describe(two_dirs, 1, [{"topic": f"versions{version}", "partitions": [0, 7]}], version)
    assert len(body["results"]) == 2
    named = [t["name"] for r in body["results"] for t in r["topics"]]
    # only the asked replicas this broker holds: partition 7 does not exist
    assert named == (
        [f"versions{version}"] if 1 in two_dirs.partition(f"versions{version}", 0).replicas else []
    )
    if version >= 4:
        assert all(r["total_bytes"] > 0 for r in body["results"])
    if version >= 5:
        assert not any(r["is_cordoned"] for r in body["results"])


def test_a_move_shows_in_the_new_dir_and_in_the_metadata(two_dirs: MockCluster) -> None:
    two_dirs.create_topic("moving", partitions=1, replication_factor=2)
    (was,) = placement(two_dirs, 1, "moving").values()
    (other,) = [d.path for d in two_dirs.cluster.node(1).replica_dirs.dirs if d.path != was]
    assert alter(two_dirs, 1, other, "moving", 0) == [ErrorCode.NONE]
    assert placement(two_dirs, 1, "moving") == {0: other}
    two_dirs.wait_until(lambda: recorded_dirs(two_dirs, 1, "moving") == {0: other})
    # moving it where it already is changes nothing
    assert alter(two_dirs, 1, other, "moving", 0) == [ErrorCode.NONE]
    assert placement(two_dirs, 1, "moving") == {0: other}


def test_alter_replica_log_dirs_errors(two_dirs: MockCluster) -> None:
    two_dirs.create_topic("elsewhere", partitions=1, replication_factor=1)
    holder = two_dirs.partition("elsewhere", 0).replicas[0]
    other = 3 - holder
    dirs = two_dirs.cluster.node(other).replica_dirs
    # the dir the fewest-replicas rule would not pick (it picks the first on a tie)
    target = max(reversed(dirs.dirs), key=lambda d: len(dirs.replicas_in(d))).path
    assert alter(two_dirs, other, "/no/such/dir", "elsewhere", 0) == [ErrorCode.LOG_DIR_NOT_FOUND]
    assert alter(two_dirs, other, target, "nosuchtopic", 0) == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    ]
    assert alter(two_dirs, other, target, "x" * 249, 0) == [ErrorCode.INVALID_TOPIC_EXCEPTION]
    # not held here: REPLICA_NOT_AVAILABLE, and the replica goes to that dir once it arrives
    assert alter(two_dirs, other, target, "elsewhere", 0) == [ErrorCode.REPLICA_NOT_AVAILABLE]
    with WireClient(address(two_dirs, 1)) as client:
        body = client.call(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            0,
            {
                "timeout_ms": 5000,
                "topics": [
                    {
                        "name": "elsewhere",
                        "partitions": [{"partition_index": 0, "replicas": [holder, other]}],
                    }
                ],
            },
        )
    assert body["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    # (wait_until's predicate runs in the cluster's thread: no requests from it)
    two_dirs.wait_until(lambda: recorded_dirs(two_dirs, other, "elsewhere") == {0: target})
    assert placement(two_dirs, other, "elsewhere") == {0: target}


def test_without_log_dirs_each_broker_reports_one_in_memory_dir() -> None:
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic("mem", partitions=2)
        body = describe(cluster, 1)
        (only,) = body["results"]
        assert only["log_dir"] == "/kipwire-memory/broker-1"
        assert (only["total_bytes"], only["usable_bytes"]) == (-1, -1)  # unknown: no volume
        assert [(t["name"], len(t["partitions"])) for t in only["topics"]] == [("mem", 2)]
        dir_id = cluster.cluster.node(1).replica_dirs.dirs[0].directory_id
        # one directory: the controller names it for every replica from the start
        assert all(
            p.directories == [dir_id]
            for p in cluster.controller.state.topic("mem").partitions.values()
        )
        assert alter(cluster, 1, "/kipwire-memory/broker-1", "mem", 0) == [ErrorCode.NONE]
