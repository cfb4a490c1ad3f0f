"""The cluster's lifecycle and faults: start-up, broker stop/start, error injection,
latency, connections held, clients vanishing mid-request, nothing left running after exit."""

from __future__ import annotations

import struct
import threading
import time

import pytest
import trio
from confluent_kafka import Producer
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import ClusterError, MockCluster, open_cluster


def test_three_brokers_and_the_controller_are_ready_when_the_block_starts():
    # how long start-up takes is measured by benchmarks/scale_bench.py, not here
    with MockCluster(brokers=3) as cluster:
        ctl = cluster.controller
        assert [ctl.broker(b).fenced for b in (1, 2, 3)] == [False, False, False]
        assert len(cluster.bootstrap_servers.split(",")) == 3


def test_no_thread_outlives_the_cluster():
    before = set(threading.enumerate())
    with MockCluster(brokers=2) as cluster:
        assert cluster.cluster.nodes[1].running
        # a second thread ran the cluster; it is gone once the block ends
        assert set(threading.enumerate()) - before
    assert set(threading.enumerate()) <= before


def test_stop_and_start_a_broker_moves_leadership_and_back():
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("t", partitions=3, replication_factor=3)
        leaders = {cluster.partition("t", p).leader for p in range(3)}
        assert leaders == {1, 2, 3}
        cluster.stop_broker(2, clean=True)
        assert cluster.wait_until(
            lambda: all(cluster.partition("t", p).leader != 2 for p in range(3)), timeout=5
        )
        assert 2 not in cluster.partition("t", 0).isr
        # the stopped broker's port no longer answers
        address = cluster.bootstrap_servers.split(",")[1]
        with pytest.raises(OSError):
            WireClient(address, timeout=1).call(ApiKey.METADATA, 12, {"topics": []})
        cluster.start_broker(2)
        assert cluster.wait_until(lambda: not cluster.controller.broker(2).fenced, timeout=5)
        with WireClient(address) as client:
            brokers = client.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]
        assert {b["node_id"] for b in brokers} == {1, 2, 3}
        with pytest.raises(ClusterError):
            cluster.start_broker(2)


def test_produce_continues_across_an_unclean_leader_stop():
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        producer.produce("t", b"before")
        assert producer.flush(10) == 0
        leader = cluster.partition("t", 0).leader
        cluster.stop_broker(leader, clean=False)
        assert cluster.wait_until(lambda: cluster.partition("t", 0).leader not in (leader, -1))
        producer.produce("t", b"after")
        assert producer.flush(20) == 0
        assert cluster.cluster.logs["t", 0].end_offset == 2


def test_wait_until_raises_timeout_error():
    with MockCluster(brokers=1) as cluster, pytest.raises(TimeoutError):
        cluster.wait_until(lambda: False, timeout=0.1)


def test_injected_errors_are_answered_count_times_then_normal_service():
    with MockCluster(brokers=1) as cluster:
        cluster.inject_error(ApiKey.FIND_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, count=2)
        with WireClient(cluster.bootstrap_servers) as client:
            codes = [
                client.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g"})["error_code"]
                for _ in range(3)
            ]
    assert codes == [ErrorCode.COORDINATOR_NOT_AVAILABLE] * 2 + [ErrorCode.NONE]


def test_injected_error_only_on_the_named_broker():
    with MockCluster(brokers=2) as cluster:
        cluster.inject_error(ApiKey.METADATA, ErrorCode.UNKNOWN_SERVER_ERROR, broker=2)
        first, second = cluster.bootstrap_servers.split(",")
        with WireClient(first) as client:
            assert client.call(ApiKey.METADATA, 13, {"topics": []})["error_code"] == ErrorCode.NONE
        with WireClient(second) as client:
            assert (
                client.call(ApiKey.METADATA, 13, {"topics": []})["error_code"]
                == ErrorCode.UNKNOWN_SERVER_ERROR
            )


def test_latency_delays_a_brokers_responses():
    with MockCluster(brokers=1) as cluster:
        cluster.add_latency(200, broker=1)
        with WireClient(cluster.bootstrap_servers) as client:
            start = time.perf_counter()
            client.call(ApiKey.METADATA, 12, {"topics": []})
            assert time.perf_counter() - start >= 0.2


@pytest.mark.trio
async def test_a_client_vanishing_mid_request_leaves_no_task_behind():
    async with open_cluster(brokers=1) as cluster:
        host, port = cluster.bootstrap_servers.split(":")
        await trio.testing.wait_all_tasks_blocked()
        baseline = trio.lowlevel.current_statistics().tasks_living
        for cut in (2, 7, 30):
            stream = await trio.open_tcp_stream(host, int(port))
            frame = struct.pack(">i", 40) + struct.pack(">hhih", ApiKey.METADATA, 12, 1, 1) + b"t"
            await stream.send_all(frame[:cut])
            await stream.aclose()
        with trio.fail_after(5):
            while trio.lowlevel.current_statistics().tasks_living > baseline:
                await trio.sleep(0.01)
        assert trio.lowlevel.current_statistics().tasks_living == baseline


@pytest.mark.trio
async def test_a_thousand_concurrent_connections_are_held_and_served():
    async with open_cluster(brokers=3) as cluster:
        addresses = [a.split(":") for a in cluster.bootstrap_servers.split(",")]
        request = struct.pack(">hhih", ApiKey.METADATA, 12, 5, 1) + b"t" + b"\x00\x00\x00\x00\x01"
        streams: list[trio.SocketStream] = []
        with trio.fail_after(60):
            for i in range(1000):
                host, port = addresses[i % 3]
                streams.append(await trio.open_tcp_stream(host, int(port)))
            answered = 0

            async def ask(stream: trio.SocketStream) -> None:
                nonlocal answered
                await stream.send_all(struct.pack(">i", len(request)) + request)
                data = b""
                while len(data) < 8:
                    data += await stream.receive_some(65536)
                assert struct.unpack(">i", data[4:8])[0] == 5
                answered += 1

            async with trio.open_nursery() as nursery:
                for stream in streams:
                    nursery.start_soon(ask, stream)
        assert answered == 1000
        for stream in streams:
            await stream.aclose()
