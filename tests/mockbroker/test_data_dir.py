"""A cluster with `log.dirs`: broker restarts reload their logs from disk, and a new cluster on
the same directory finds the topics, records, configs and committed offsets of the last one."""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ConfigResourceType, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.broker import segment_files as files

GROUP = "restart-group"


def _produce(cluster: MockCluster, topic: str, count: int) -> int:
    """`count` one-record batches to partition 0 at its leader; the last error code."""
    address = cluster.cluster.nodes[cluster.partition(topic, 0).leader].address
    code = ErrorCode.NONE
    with WireClient(address) as client:
        for i in range(count):
            batch = build_batch([{"key": b"k%d" % i, "value": b"v%d" % i}])
            body = {
                "acks": -1,
                "timeout_ms": 5000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
            }
            response = client.call(ApiKey.PRODUCE, 9, body)
            code = response["responses"][0]["partition_responses"][0]["error_code"]
    return code


def _log(cluster: MockCluster, topic: str):
    return cluster.cluster.nodes[1].logs.get((topic, 0))


def test_an_unclean_broker_stop_loses_exactly_the_unflushed_suffix_on_disk(tmp_path):
    with MockCluster(brokers=1, config={"log.dirs": str(tmp_path)}) as cluster:
        cluster.create_topic("synced", config={"flush.messages": 1})
        cluster.create_topic("lossy", config={"flush.messages": 5})
        assert _produce(cluster, "synced", 7) == ErrorCode.NONE
        assert _produce(cluster, "lossy", 7) == ErrorCode.NONE  # flushed at 5, 2 left
        before = _log(cluster, "lossy")
        assert (before.end_offset, before.flushed_offset) == (7, 5)
        cluster.stop_broker(1, clean=False)
        assert not (tmp_path / "broker-1" / ".kafka_cleanshutdown").exists()
        cluster.start_broker(1)
        cluster.wait_until(lambda: cluster.partition("lossy", 0).leader == 1)
        after = _log(cluster, "lossy")
        assert after is not before  # loaded anew from the segment files
        assert (after.end_offset, _log(cluster, "synced").end_offset) == (5, 7)
        segment = tmp_path / "broker-1" / "lossy-0" / "00000000000000000000.log"
        assert segment.read_bytes() == b"".join(b.data for b in after.batches)
        assert _produce(cluster, "lossy", 1) == ErrorCode.NONE
        assert _log(cluster, "lossy").end_offset == 6


def test_a_clean_broker_stop_keeps_everything_and_writes_the_checkpoints(tmp_path):
    with MockCluster(brokers=1, config={"log.dirs": str(tmp_path)}) as cluster:
        cluster.create_topic("kept")
        assert _produce(cluster, "kept", 4) == ErrorCode.NONE
        cluster.stop_broker(1, clean=True)
        broker_dir = tmp_path / "broker-1"
        checkpoint = files.read_offsets_checkpoint(broker_dir / files.REPLICATION_CHECKPOINT)
        assert checkpoint[("kept", 0)] == 4
        assert files.read_leader_epochs(broker_dir / "kept-0")[0] == (0, 0)
        cluster.start_broker(1)
        cluster.wait_until(lambda: cluster.partition("kept", 0).leader == 1)
        assert (_log(cluster, "kept").end_offset, _log(cluster, "kept").high_watermark) == (4, 4)


def test_a_new_cluster_on_the_same_directory_has_the_last_ones_state(tmp_path):
    config = {"log.dirs": str(tmp_path)}
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("orders", partitions=2, config={"retention.ms": 123456789})
        assert _produce(cluster, "orders", 6) == ErrorCode.NONE
        topic_id = cluster.controller.state.topic("orders").topic_id
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP, enable_auto_commit=False
        )
        consumer.commit({TopicPartition("orders", 0): OffsetAndMetadata(4, "half", -1)})
        consumer.close()
    assert (tmp_path / "controller" / "__cluster_metadata-0").is_dir()
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.wait_until(lambda: cluster.partition("orders", 0).leader == 1)
        state = cluster.controller.state
        assert state.topic("orders").topic_id == topic_id
        assert state.config(ConfigResourceType.TOPIC, "orders", "retention.ms") == "123456789"
        assert _log(cluster, "orders").end_offset == 6
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            group_id=GROUP,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            consumer_timeout_ms=5000,
        )
        committed = consumer.committed(TopicPartition("orders", 0), metadata=True)
        consumer.assign([TopicPartition("orders", 0)])
        values = [m.value for m in consumer]
        consumer.close()
    assert (committed.offset, committed.metadata) == (4, "half")
    assert values == [b"v4", b"v5"]  # from the committed offset to the end


def test_log_flush_interval_messages_is_the_brokers_default_flush_policy(tmp_path):
    config = {"log.dirs": str(tmp_path), "log.flush.interval.messages": "1"}
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("every")
        assert _produce(cluster, "every", 3) == ErrorCode.NONE
        assert _log(cluster, "every").flushed_offset == 3
        cluster.stop_broker(1, clean=False)
        cluster.start_broker(1)
        cluster.wait_until(lambda: cluster.partition("every", 0).leader == 1)
        assert _log(cluster, "every").end_offset == 3


def test_replicas_of_a_three_broker_cluster_come_back_from_their_own_directories(tmp_path):
    config = {"log.dirs": str(tmp_path)}
    with MockCluster(brokers=3, config=config) as cluster:
        cluster.create_topic("copied", replication_factor=3)
        assert _produce(cluster, "copied", 5) == ErrorCode.NONE
        cluster.wait_until(
            lambda: all(
                n.logs.get(("copied", 0)) and n.logs["copied", 0].end_offset == 5
                for n in cluster.cluster.nodes.values()
            )
        )
    for broker_id in (1, 2, 3):
        segment = tmp_path / f"broker-{broker_id}" / "copied-0" / "00000000000000000000.log"
        assert segment.stat().st_size > 0
    with MockCluster(brokers=3, config=config) as cluster:
        leader = cluster.partition("copied", 0).leader
        assert cluster.cluster.nodes[leader].logs["copied", 0].end_offset == 5
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            auto_offset_reset="earliest",
            consumer_timeout_ms=4000,
        )
        consumer.assign([TopicPartition("copied", 0)])
        assert [m.offset for m in consumer] == [0, 1, 2, 3, 4]
        consumer.close()


def test_a_topic_deleted_and_made_again_while_a_broker_was_down_drops_its_old_log(tmp_path):
    with MockCluster(brokers=2, config={"log.dirs": str(tmp_path)}) as cluster:
        cluster.create_topic("reborn", replication_factor=2)
        assert _produce(cluster, "reborn", 3) == ErrorCode.NONE
        nodes = cluster.cluster.nodes
        cluster.wait_until(lambda: all(n.logs["reborn", 0].end_offset == 3 for n in nodes.values()))
        cluster.flush(2)
        # unclean: a broker restarted within the session timeout of its clean stop is refused
        # (DUPLICATE_BROKER_REGISTRATION, on main too), and only the flushed records matter here
        cluster.stop_broker(2, clean=False)
        with WireClient(nodes[1].address) as client:
            body = {"topics": [{"name": "reborn"}], "timeout_ms": 5000}
            deleted = client.call(ApiKey.DELETE_TOPICS, 6, body)["responses"][0]
        assert deleted["error_code"] == ErrorCode.NONE
        cluster.wait_until(lambda: cluster.controller.state.topic("reborn") is None)
        cluster.create_topic("reborn")  # on broker 1 alone: broker 2 is down
        old_dir = tmp_path / "broker-2" / "reborn-0"
        assert old_dir.is_dir()
        cluster.start_broker(2)
        assert ("reborn", 0) not in nodes[2].logs
        assert not old_dir.exists()


def test_retention_deletes_segment_files_and_a_restart_keeps_the_log_start(tmp_path):
    config = {"log.dirs": str(tmp_path), "log.retention.check.interval.ms": 100}
    topic = {"retention.bytes": 1024 * 1024, "segment.bytes": 1024 * 1024, "flush.messages": 1}
    directory = tmp_path / "broker-1" / "kept-short-0"
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("kept-short", config=topic)
        address = cluster.cluster.nodes[1].address
        with WireClient(address) as client:
            for _ in range(40):
                batch = build_batch([{"value": b"x" * 100_000}])
                partition = {"index": 0, "records": batch}
                body = {
                    "acks": -1,
                    "timeout_ms": 5000,
                    "topic_data": [{"name": "kept-short", "partition_data": [partition]}],
                }
                client.call(ApiKey.PRODUCE, 9, body)
        cluster.wait_until(lambda: _log(cluster, "kept-short").log_start_offset > 0)
    checkpoint = tmp_path / "broker-1" / files.LOG_START_CHECKPOINT
    start = files.read_offsets_checkpoint(checkpoint)["kept-short", 0]
    bases = files.segment_bases(directory)
    assert bases[0] == start > 0  # the deleted segments' files are gone
    kept = sum((directory / (files.segment_name(b) + files.LOG)).stat().st_size for b in bases)
    assert kept < 3 * 1024 * 1024
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.wait_until(lambda: cluster.partition("kept-short", 0).leader == 1)
        log = _log(cluster, "kept-short")
        assert (log.log_start_offset, log.end_offset) == (start, 40)
