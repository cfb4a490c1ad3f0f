"""A data dir with two `log.dirs` entries: each broker keeps a log directory per entry, each
replica's files in the directory ReplicaDirs names, moves carry the files, and a new cluster on
the same entries finds every replica where it was, under the same directory ids."""

from __future__ import annotations

from pathlib import Path

from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.broker import segment_files as files

TOPIC = "spread"
PARTITIONS = 4


def _config(tmp_path: Path) -> dict[str, str]:
    return {"log.dirs": f"{tmp_path}/a,{tmp_path}/b"}


def _produce(cluster: MockCluster, index: int, count: int) -> int:
    """`count` records in one batch to a partition at its leader; the error code."""
    leader = cluster.partition(TOPIC, index).leader
    batch = build_batch([{"value": b"p%d-%d" % (index, i)} for i in range(count)])
    body = {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": index, "records": batch}]}],
    }
    with WireClient(cluster.cluster.node(leader).address) as client:
        response = client.call(ApiKey.PRODUCE, 9, body)
    return response["responses"][0]["partition_responses"][0]["error_code"]


def _placement(cluster: MockCluster) -> dict[tuple[int, int], str]:
    """(broker, partition) -> the path of the log dir holding that replica."""
    out = {}
    for broker_id in (1, 2):
        dirs = cluster.cluster.node(broker_id).replica_dirs
        for index in range(PARTITIONS):
            where = dirs.dir_of(TOPIC, index)
            assert where is not None
            out[broker_id, index] = where.path
    return out


def _ids(cluster: MockCluster) -> dict[int, list]:
    return {b: cluster.cluster.node(b).replica_dirs.ids() for b in (1, 2)}


def _alter(cluster: MockCluster, broker_id: int, path: str, index: int) -> int:
    body = {"dirs": [{"path": path, "topics": [{"name": TOPIC, "partitions": [index]}]}]}
    with WireClient(cluster.cluster.node(broker_id).address) as client:
        answer = client.call(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, body)
    return answer["results"][0]["partitions"][0]["error_code"]


def _described_size(cluster: MockCluster, broker_id: int, index: int) -> tuple[str, int]:
    """(log dir, size) DescribeLogDirs answers for a replica."""
    topics = [{"topic": TOPIC, "partitions": [index]}]
    with WireClient(cluster.cluster.node(broker_id).address) as client:
        body = client.call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": topics})
    ((log_dir, part),) = [
        (r["log_dir"], p) for r in body["results"] for t in r["topics"] for p in t["partitions"]
    ]
    return log_dir, part["partition_size"]


def _log_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.glob("*.log"))


def _all_replicated(cluster: MockCluster, ends: dict[int, int]) -> bool:
    return all(
        cluster.cluster.node(b).logs.get((TOPIC, i)) is not None
        and cluster.cluster.node(b).logs[TOPIC, i].end_offset == end
        for b in (1, 2)
        for i, end in ends.items()
    )


def test_replicas_files_spread_over_both_dirs_move_and_come_back_in_place(tmp_path):
    config = _config(tmp_path)
    ends = {i: i + 1 for i in range(PARTITIONS)}
    with MockCluster(brokers=2, config=config) as cluster:
        cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=2)
        for index, count in ends.items():
            assert _produce(cluster, index, count) == ErrorCode.NONE
        cluster.wait_until(lambda: _all_replicated(cluster, ends))
        for broker_id in (1, 2):
            cluster.flush(broker_id)
        assert not (tmp_path / "a,b").exists()
        placed = _placement(cluster)
        for (broker_id, index), path in placed.items():
            other = {str(tmp_path / e / f"broker-{broker_id}") for e in "ab"} - {path}
            directory = Path(path) / f"{TOPIC}-{index}"
            assert _log_bytes(directory) > 0
            assert not (Path(other.pop()) / f"{TOPIC}-{index}").exists()
            assert _described_size(cluster, broker_id, index) == (path, _log_bytes(directory))
        for broker_id in (1, 2):  # both dirs hold replicas on every broker
            assert {placed[broker_id, i] for i in range(PARTITIONS)} == {
                str(tmp_path / e / f"broker-{broker_id}") for e in "ab"
            }
        # a move: broker 1's replica of partition 0 goes to its other directory, files and all
        was = Path(placed[1, 0])
        dirs = cluster.cluster.node(1).replica_dirs.dirs
        target = next(d.path for d in dirs if d.path != str(was))
        size = _log_bytes(was / f"{TOPIC}-0")
        assert _alter(cluster, 1, target, 0) == ErrorCode.NONE
        assert not (was / f"{TOPIC}-0").exists()
        assert _log_bytes(Path(target) / f"{TOPIC}-0") == size
        assert _produce(cluster, 0, 2) == ErrorCode.NONE
        ends[0] += 2
        cluster.wait_until(lambda: _all_replicated(cluster, ends))
        cluster.flush(1)
        assert _log_bytes(Path(target) / f"{TOPIC}-0") > size
        assert _described_size(cluster, 1, 0) == (target, _log_bytes(Path(target) / f"{TOPIC}-0"))
        placed[1, 0] = target
        ids = _ids(cluster)
    for broker_id, broker_ids in ids.items():
        for entry, directory_id in zip("ab", broker_ids, strict=True):
            meta = files.read_meta_properties(tmp_path / entry / f"broker-{broker_id}")
            assert files.parse_uuid(meta["directory.id"]) == directory_id
    with MockCluster(brokers=2, config=config) as cluster:
        cluster.wait_until(lambda: _all_replicated(cluster, ends))
        assert _ids(cluster) == ids
        assert _placement(cluster) == placed
        # the controller records the same directories (a move reported late is reported again)
        cluster.wait_until(lambda: _recorded(cluster) == placed)


def _recorded(cluster: MockCluster) -> dict[tuple[int, int], str | None]:
    """(broker, partition) -> the path of the directory the controller records for it."""
    out = {}
    for broker_id in (1, 2):
        dirs = cluster.cluster.node(broker_id).replica_dirs
        for index, p in cluster.controller.state.topic(TOPIC).partitions.items():
            where = dirs.by_id(p.directories[p.replicas.index(broker_id)])
            out[broker_id, index] = where.path if where is not None else None
    return out


def test_a_topic_deleted_while_a_broker_was_down_leaves_no_log_on_it(tmp_path):
    with MockCluster(brokers=2, config=_config(tmp_path)) as cluster:
        cluster.create_topic(TOPIC, partitions=2, replication_factor=2)
        cluster.create_topic("kept", partitions=1, replication_factor=2)
        for index in (0, 1):
            assert _produce(cluster, index, 2) == ErrorCode.NONE
        cluster.wait_until(lambda: _all_replicated(cluster, {0: 2, 1: 2}))
        node = cluster.cluster.node(2)
        cluster.wait_until(lambda: node.logs.get(("kept", 0)) is not None)
        cluster.flush(2)
        held = {i: Path(node.replica_dirs.dir_of(TOPIC, i).path) / f"{TOPIC}-{i}" for i in (0, 1)}
        # unclean: a restart within the session timeout of a clean stop would be refused
        cluster.stop_broker(2, clean=False)
        with WireClient(cluster.cluster.node(1).address) as client:
            body = {"topics": [{"name": TOPIC}], "timeout_ms": 5000}
            deleted = client.call(ApiKey.DELETE_TOPICS, 6, body)["responses"][0]
        assert deleted["error_code"] == ErrorCode.NONE
        cluster.wait_until(lambda: cluster.controller.state.topic(TOPIC) is None)
        assert all(d.is_dir() for d in held.values())  # broker 2 was down: still there
        cluster.start_broker(2)
        assert not any(d.exists() for d in held.values())
        assert not any(key[0] == TOPIC for key in node.logs)
        assert node.replica_dirs.dir_of(TOPIC, 0) is None
        assert ("kept", 0) in node.logs  # the topic still there keeps its log
        kept = node.replica_dirs.dir_of("kept", 0)
        assert kept is not None and (Path(kept.path) / "kept-0").is_dir()
