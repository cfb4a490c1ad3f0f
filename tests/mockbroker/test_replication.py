"""Replication on the wire: followers' copies, min ISR on acks=all, flushing and unclean loss,
the CleanShutdownFile, GetReplicaLogInfo, KIP-704 under Semantics.KIP and KIP-903's race."""

from __future__ import annotations

import json

from confluent_kafka import Producer
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster, Semantics
from kipwire.mockbroker.broker.log_dirs import LogDirs

DEADLINE = 20.0


def _address(cluster: MockCluster, broker_id: int) -> str:
    return cluster.bootstrap_servers.split(",")[broker_id - 1]


def _produce(cluster: MockCluster, broker_id: int, topic: str, count: int, acks: int = -1) -> int:
    """Produce `count` records in one batch to `broker_id`; the partition's error code."""
    body = {
        "acks": acks,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": 0, "records": build_batch([{"value": b"v"}] * count)}],
            }
        ],
    }
    with WireClient(_address(cluster, broker_id)) as client:
        return client.call(ApiKey.PRODUCE, 9, body)["responses"][0]["partition_responses"][0][
            "error_code"
        ]


def _fetch_error(cluster: MockCluster, broker_id: int, topic: str) -> int:
    body = {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}],
            }
        ],
    }
    with WireClient(_address(cluster, broker_id)) as client:
        return client.call(ApiKey.FETCH, 12, body)["responses"][0]["partitions"][0]["error_code"]


def _end(cluster: MockCluster, broker_id: int, topic: str) -> int:
    log = cluster.cluster.nodes[broker_id].logs.get((topic, 0))
    return -1 if log is None else log.end_offset


def test_every_replica_holds_the_leaders_batches_byte_for_byte():
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("copy", partitions=1, replication_factor=3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        for i in range(200):
            producer.produce("copy", f"r{i}".encode(), partition=0)
        assert producer.flush(DEADLINE) == 0
        cluster.wait_until(lambda: all(_end(cluster, b, "copy") == 200 for b in (1, 2, 3)))
        logs = [cluster.cluster.nodes[b].logs["copy", 0] for b in (1, 2, 3)]
        assert [b.data for b in logs[0].batches] == [b.data for b in logs[1].batches]
        assert [b.data for b in logs[0].batches] == [b.data for b in logs[2].batches]
        leader = cluster.partition("copy", 0).leader
        assert cluster.cluster.nodes[leader].logs["copy", 0].high_watermark == 200


def test_acks_all_is_refused_before_the_append_below_min_isr():
    with MockCluster(brokers=2, config={"min.insync.replicas": "2"}) as cluster:
        cluster.create_topic("strict", partitions=1, replication_factor=2)
        cluster.wait_until(lambda: len(cluster.partition("strict", 0).isr) == 2)
        leader = cluster.partition("strict", 0).leader
        assert _produce(cluster, leader, "strict", 3) == ErrorCode.NONE
        follower = 3 - leader
        cluster.stop_broker(follower, clean=False)
        cluster.wait_until(lambda: cluster.partition("strict", 0).isr == [leader])
        end = _end(cluster, leader, "strict")
        assert _produce(cluster, leader, "strict", 3) == ErrorCode.NOT_ENOUGH_REPLICAS
        assert _end(cluster, leader, "strict") == end  # nothing was appended
        assert _produce(cluster, leader, "strict", 3, acks=1) == ErrorCode.NONE


def test_an_unclean_stop_loses_what_was_not_flushed():
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic("lossy", partitions=1, replication_factor=1)
        cluster.create_topic("synced", 1, 1, config={"flush.messages": "1"})
        assert _produce(cluster, 1, "lossy", 5) == ErrorCode.NONE
        cluster.flush(1)
        assert _produce(cluster, 1, "lossy", 3) == ErrorCode.NONE
        assert _produce(cluster, 1, "synced", 4) == ErrorCode.NONE
        cluster.stop_broker(1, clean=False)
        assert _end(cluster, 1, "lossy") == 5  # the three unflushed records are gone
        assert _end(cluster, 1, "synced") == 4  # flush.messages=1 flushed every append
        cluster.start_broker(1)
        cluster.wait_until(lambda: cluster.partition("lossy", 0).leader == 1)
        assert _produce(cluster, 1, "lossy", 1) == ErrorCode.NONE
        assert _end(cluster, 1, "lossy") == 6


def test_a_clean_stop_keeps_everything_and_writes_the_clean_shutdown_file(tmp_path):
    with MockCluster(brokers=1, config={"log.dirs": str(tmp_path)}) as cluster:
        cluster.create_topic("kept", partitions=1, replication_factor=1)
        assert _produce(cluster, 1, "kept", 7) == ErrorCode.NONE
        epoch = cluster.controller.broker(1).epoch
        cluster.stop_broker(1, clean=True)
        assert _end(cluster, 1, "kept") == 7
        file = tmp_path / "broker-1" / ".kafka_cleanshutdown"
        assert json.loads(file.read_text()) == {"version": 0, "BrokerEpoch": epoch}
        cluster.start_broker(1)
        assert not file.exists()  # read and deleted while loading, as Kafka's LogManager does


def test_clean_shutdown_file_epoch_read_back_or_minus_one(tmp_path):
    memory = LogDirs(None, 1)
    assert memory.take_previous_epoch() == -1
    memory.write_clean_shutdown(42)
    assert memory.clean_shutdown_text() == '{"version":0,"BrokerEpoch":42}'
    assert memory.take_previous_epoch() == 42
    assert memory.take_previous_epoch() == -1  # consumed by the restart
    disk = LogDirs(str(tmp_path), 2)
    disk.write_clean_shutdown(7)
    assert disk.take_previous_epoch() == 7
    (tmp_path / "broker-2" / ".kafka_cleanshutdown").write_text("{not json")
    assert disk.take_previous_epoch() == -1


def test_get_replica_log_info_answers_for_a_replica():
    with MockCluster(brokers=2) as cluster:
        cluster.create_topic("info", partitions=1, replication_factor=2)
        leader = cluster.partition("info", 0).leader
        assert _produce(cluster, leader, "info", 4) == ErrorCode.NONE
        follower = 3 - leader
        cluster.wait_until(lambda: _end(cluster, follower, "info") == 4)
        topic_id = cluster.controller.state.topic("info").topic_id
        with WireClient(_address(cluster, follower)) as client:
            body = client.call(
                ApiKey.GET_REPLICA_LOG_INFO,
                0,
                {"topic_partitions": [{"topic_id": topic_id, "partitions": [0, 5]}]},
            )
        assert body["broker_epoch"] == cluster.controller.broker(follower).epoch
        ok, missing = body["topic_partition_log_info_list"][0]["partition_log_info"]
        p = cluster.partition("info", 0)
        assert (ok["error_code"], ok["log_end_offset"]) == (ErrorCode.NONE, 4)
        assert ok["current_leader_epoch"] == ok["last_written_leader_epoch"] == p.leader_epoch
        assert missing["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_kip_unclean_recovery_elects_recovering_and_fetches_wait_for_recovered():
    config = {
        "min.insync.replicas": "2",
        "unclean.recovery.strategy": "Aggressive",
        "broker.session.timeout.ms": "10000",
    }
    with MockCluster(brokers=3, semantics=Semantics.KIP, config=config) as cluster:
        cluster.create_topic("rec", partitions=1, replication_factor=3)
        cluster.wait_until(lambda: len(cluster.partition("rec", 0).isr) == 3)
        leader = cluster.partition("rec", 0).leader
        assert _produce(cluster, leader, "rec", 5) == ErrorCode.NONE
        survivor, other = [r for r in cluster.partition("rec", 0).replicas if r != leader]
        cluster.wait_until(lambda: _end(cluster, survivor, "rec") == 5)
        cluster.flush(survivor)
        for broker in (other, survivor, leader):
            cluster.stop_broker(broker, clean=False)
        # the survivor's AlterPartition(RECOVERED) takes a second: the window the KIP describes
        cluster.add_latency(500, link=(survivor, "controller"))
        cluster.start_broker(survivor)
        node = cluster.cluster.nodes[survivor]

        def recovering() -> bool:
            state = node.replication.state(("rec", 0))
            return state is not None and not state.serves_fetches

        cluster.wait_until(recovering)
        assert cluster.partition("rec", 0).leader == survivor
        assert cluster.controller.recovery.finished == 1  # elected through GetReplicaLogInfo
        assert _fetch_error(cluster, survivor, "rec") == ErrorCode.NOT_LEADER_OR_FOLLOWER
        cluster.wait_until(lambda: cluster.partition("rec", 0).leader_recovery_state == 0)
        cluster.wait_until(lambda: not recovering())
        assert _fetch_error(cluster, survivor, "rec") == ErrorCode.NONE
        assert _end(cluster, survivor, "rec") == 5


def test_kip903_a_stale_alter_partition_does_not_bring_back_an_emptied_replica():
    config = {"broker.session.timeout.ms": "10000"}
    with MockCluster(brokers=2, config=config) as cluster:
        cluster.create_topic("race", partitions=1, replication_factor=2)
        cluster.wait_until(lambda: len(cluster.partition("race", 0).isr) == 2)
        leader = cluster.partition("race", 0).leader
        follower = 3 - leader
        # the follower stops fetching and, once records it lacks arrive, leaves the ISR (an idle
        # follower at the log end counts as caught up, as Kafka's Replica#isCaughtUp has it)
        cluster.partition_network(leader, follower)
        assert _produce(cluster, leader, "race", 3, acks=1) == ErrorCode.NONE
        state = cluster.cluster.nodes[leader].replication.state(("race", 0))
        cluster.wait_until(lambda: state.isr == (leader,) and state.pending is None)
        # its expansion request will be slow to reach the controller
        cluster.add_latency(500, link=(leader, "controller"))
        cluster.heal()
        cluster.wait_until(
            lambda: state.pending is not None and state.pending.expansion and state.in_flight
        )
        epochs = dict(state.pending.isr_with_epochs)
        assert epochs[follower] == cluster.controller.broker(follower).epoch
        # before it lands, the follower reboots with an empty disk and cannot fetch again
        cluster.stop_broker(follower, clean=False)
        cluster.partition_network(leader, follower)
        cluster.start_broker(follower)
        assert cluster.controller.broker(follower).epoch != epochs[follower]
        assert _end(cluster, follower, "race") == 0
        cluster.wait_until(lambda: state.pending is None)  # INELIGIBLE_REPLICA: reverted
        assert cluster.partition("race", 0).isr == [leader]
        cluster.heal()
        cluster.wait_until(lambda: sorted(cluster.partition("race", 0).isr) == [1, 2])
        assert _end(cluster, follower, "race") == 3
