"""Process mode (`MockCluster(processes=True)`): each broker and the controller in its own OS
process, the same public API. Real clients produce and consume in both modes; stop/start, a
network cut, an injected error and the recorder work across processes; `clock=` is refused."""

from __future__ import annotations

import os

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from process_clients import MODES, consume, produce, produce_in_transaction, values

from kipwire.client import Connection
from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.errors import ClusterError
from kipwire.mockbroker.network import CONTROLLER
from kipwire.mockbroker.processes import ProcessCluster

METADATA_VERSION = 12
INIT_PRODUCER_ID_VERSION = 4
RECORDS = 200


@pytest.mark.parametrize("processes", MODES)
def test_a_real_client_produces_and_consumes(processes):
    with MockCluster(brokers=3, processes=processes) as cluster:
        cluster.create_topic("t", partitions=3, replication_factor=3)
        assert produce(cluster.bootstrap_servers, "t", RECORDS) == []
        read = consume(cluster.bootstrap_servers, "t", RECORDS)
        assert sorted(read) == values(RECORDS)
        marks = cluster.metrics()["high_watermark"]
        assert sum(marks[f"t-{i}"] for i in range(3)) == RECORDS
        # a client's CreateTopics is answered once every broker has the topic, as in Kafka
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        (created,) = admin.create_topics([NewTopic("made", 3, 3)]).values()
        assert created.result(30) is None
        for address in cluster.bootstrap_servers.split(","):
            with Connection(address) as wire:
                request = {"topics": [{"name": "made"}], "allow_auto_topic_creation": False}
                (topic,) = wire.call(ApiKey.METADATA, METADATA_VERSION, request)["topics"]
                assert topic["error_code"] == ErrorCode.NONE and len(topic["partitions"]) == 3
        # a transaction over partitions led by different processes (markers go to each leader),
        # read by a KIP-848 consumer group
        produce_in_transaction(cluster.bootstrap_servers, "made", 30)
        kip848 = {"group.protocol": "consumer", "isolation.level": "read_committed"}
        read = consume(cluster.bootstrap_servers, "made", 30, extra=kip848)
        assert sorted(read) == values(30)


def test_brokers_in_processes_stop_start_and_survive_a_network_cut(tmp_path):
    capture = tmp_path / "cluster.pcapng"
    config = {"min.insync.replicas": 2}
    with MockCluster(brokers=3, processes=True, config=config, record=str(capture)) as cluster:
        described = cluster.describe()
        pids = {_pid_listening(b["port"]) for b in described["brokers"]}
        pids.add(_pid_listening(described["controller"]["port"]))
        assert len(pids) == 4 and os.getpid() not in pids  # the controller's process too
        cluster.create_topic("t", partitions=1, replication_factor=3)
        assert produce(cluster.bootstrap_servers, "t", 10) == []

        cluster.stop_broker(2)
        assert cluster.describe()["brokers"][1]["state"] == "stopped"
        assert 2 not in cluster.partition("t", 0).isr
        assert produce(cluster.bootstrap_servers, "t", 10) == []  # 2 in-sync replicas remain
        cluster.start_broker(2)
        assert cluster.wait_until(lambda: 2 in cluster.partition("t", 0).isr, timeout=20)
        assert cluster.describe_partition("t", 0)["high_watermark"] == 20

        cut = cluster.isolate(3)
        cluster.wait_until(lambda: cluster.controller.broker(3).fenced, timeout=20)
        assert 3 not in cluster.partition("t", 0).isr
        assert cut.fired > 0  # counted from the brokers' processes
        cluster.heal()
        assert cluster.wait_until(lambda: 3 in cluster.partition("t", 0).isr, timeout=20)

        link = cluster.partition_network(1, CONTROLLER)
        cluster.wait_until(lambda: cluster.controller.broker(1).fenced, timeout=20)
        link.remove()
        assert cluster.wait_until(lambda: not cluster.controller.broker(1).fenced, timeout=20)

        with pytest.raises(ClusterError, match="processes=True"):
            cluster.cluster.logs  # noqa: B018 - the logs live in the brokers' processes
        cluster.stop_broker(3, clean=False)  # fenced by the controller's process at once
        assert cluster.controller.broker(3).fenced and 3 not in cluster.partition("t", 0).isr
    assert capture.stat().st_size > 0
    assert b"value-9" in capture.read_bytes()  # a client's produce, recorded in the parent


def test_an_injected_error_is_counted_in_the_parent_and_producer_ids_are_never_shared():
    with MockCluster(brokers=2, processes=True) as cluster:
        handle = cluster.inject_error(ApiKey.METADATA, ErrorCode.NOT_CONTROLLER, broker=2)
        host, port = cluster.bootstrap_servers.split(",")[1].split(":")
        with Connection(f"{host}:{port}") as wire:
            answer = wire.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
            assert answer["brokers"] == []  # the injected answer is the error's, not metadata
        assert cluster.wait_until(lambda: not handle.active, timeout=10)
        assert handle.fired == 1
        with Connection(f"{host}:{port}") as wire:
            answer = wire.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
            assert len(answer["brokers"]) == 2
        # until removed, and removed in broker 2's process when remove() returns
        forever = cluster.inject_error(ApiKey.METADATA, ErrorCode.NOT_CONTROLLER, -1, broker=2)
        with Connection(f"{host}:{port}") as wire:
            assert wire.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})["brokers"] == []
            forever.remove()
            answer = wire.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
            assert len(answer["brokers"]) == 2
        # each broker process hands out producer ids of its own: none is given out twice
        ids = set()
        for address in cluster.bootstrap_servers.split(","):
            with Connection(address) as wire:
                for _ in range(2):
                    request = {"transactional_id": None, "transaction_timeout_ms": 60000}
                    answer = wire.call(ApiKey.INIT_PRODUCER_ID, INIT_PRODUCER_ID_VERSION, request)
                    assert answer["error_code"] == ErrorCode.NONE
                    ids.add(answer["producer_id"])
        assert len(ids) == 4


def test_process_mode_refuses_a_clock():
    import trio.testing

    with pytest.raises(ValueError, match="processes=True"):
        MockCluster(processes=True, clock=trio.testing.MockClock())


def _pid_listening(port: int) -> int:
    """The process that listens on `port` (from /proc: its socket's inode)."""
    inode = None
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state == "0A" and int(local.split(":")[1], 16) == port:
                inode = fields[9]
    assert inode is not None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
            except OSError:
                continue
    raise AssertionError(f"no process listens on port {port}")


@pytest.mark.trio
@pytest.mark.mock_cluster(brokers=1, processes=True)
async def test_the_trio_fixture_runs_process_mode(trio_mock_cluster):
    assert isinstance(trio_mock_cluster, ProcessCluster)
    await trio_mock_cluster.create_topic("t")
    assert (await trio_mock_cluster.metrics())["high_watermark"] == {"t-0": 0}
