"""What a node's listeners bound (mockbroker/limits.py, applied by serve.py): a frame over
socket.request.max.bytes closes its connection, request memory (queued.max.request.bytes) mutes
connections whose frame does not fit, max.connections.per.ip refuses and max.connections holds
back clients, as Kafka's SocketServer does."""

from __future__ import annotations

import logging
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import trio
import trio.testing
from confluent_kafka import Producer
from kafka_wire import WireClient, alter_cluster_default

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import ConfigError, MockCluster
from kipwire.mockbroker.controller.broker_configs import cluster_config
from kipwire.mockbroker.limits import ConnectionLimits, RequestMemory, TooManyConnections

MIB = 1024 * 1024


@pytest.mark.trio
async def test_a_frame_is_charged_whole_and_waits_until_it_fits():
    memory = RequestMemory(100)
    assert await memory.take(60) == 60 and memory.in_use == 60
    taken: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _take_into(memory, 50, taken))
        await trio.testing.wait_all_tasks_blocked()
        assert taken == []  # 40 left: a 50-byte frame waits (strict, unlike Kafka's pool)
        assert await memory.take(30) == 30  # a small one passes beside it
        memory.give(60)
        await trio.testing.wait_all_tasks_blocked()
        assert taken == [50] and memory.in_use == 80
    assert await RequestMemory(-1).take(10 * MIB) == 0  # Kafka's -1: nothing is counted


async def _take_into(memory: RequestMemory, size: int, taken: list[int]) -> None:
    taken.append(await memory.take(size))


@pytest.mark.trio
async def test_connection_counts_per_ip_refuse_and_max_connections_waits():
    config = {"max.connections": "2", "max.connections.per.ip": "1"}
    limits = ConnectionLimits(config.get)
    await limits.open("10.0.0.1", internal=False)
    with pytest.raises(TooManyConnections, match=r"^Rejected connection from /10\.0\.0\.1, addr"):
        await limits.open("10.0.0.1", internal=False)
    await limits.open("127.0.0.1", internal=True)  # a node's link: no per-IP limit, no wait
    assert limits.total == 2
    opened: list[str] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _open_into(limits, "10.0.0.2", opened))
        await trio.testing.wait_all_tasks_blocked()
        assert opened == []  # max.connections reached: accepted, held unread
        limits.close("127.0.0.1", internal=True)
        await trio.testing.wait_all_tasks_blocked()
        assert opened == ["10.0.0.2"] and limits.total == 2


async def _open_into(limits: ConnectionLimits, host: str, opened: list[str]) -> None:
    await limits.open(host, internal=False)
    opened.append(host)


def test_request_limits_are_cross_checked_with_kafkas_messages():
    with pytest.raises(ConfigError, match="queued.max.request.bytes must be larger or equal"):
        MockCluster(brokers=1, config={"queued.max.request.bytes": 1000})
    with pytest.raises(ConfigError, match="can be set to zero only if max.connections.per.ip.ov"):
        MockCluster(brokers=1, config={"max.connections.per.ip": 0})
    with pytest.raises(ConfigError, match="Invalid value x:1,:2 for configuration max.connections"):
        MockCluster(brokers=1, config={"max.connections.per.ip.overrides": "x:1,:2"})
    # the mock's bound follows a larger socket.request.max.bytes up unless it is given
    raised = cluster_config({"socket.request.max.bytes": 200 * MIB})
    assert raised["queued.max.request.bytes"] == str(200 * MIB)
    assert cluster_config({})["queued.max.request.bytes"] == str(128 * MIB)


def test_an_oversized_frame_closes_its_connection_with_a_line_naming_the_limit(caplog):
    caplog.set_level(logging.WARNING, logger="kipwire.mockbroker")
    with (
        MockCluster(brokers=1, config={"socket.request.max.bytes": 4096}) as cluster,
        WireClient(cluster.bootstrap_servers) as client,
    ):
        client.send_raw(struct.pack(">i", 4097))
        assert client.receive_frame() == b""
    lines = [r.getMessage() for r in caplog.records]
    assert any("4097 bytes is over socket.request.max.bytes (4096)" in line for line in lines)


def test_clients_over_max_connections_per_ip_are_accepted_then_closed(caplog):
    caplog.set_level(logging.INFO, logger="kipwire.mockbroker")
    config = {"max.connections.per.ip": 0, "max.connections.per.ip.overrides": "127.0.0.1:2"}
    with MockCluster(brokers=2, config=config) as cluster:
        # the brokers' own links (replication, the controller) are not counted against it
        cluster.create_topic("per-ip", partitions=1, replication_factor=2)
        first = cluster.bootstrap_servers.split(",")[0]
        with WireClient(first) as one, WireClient(first) as two, WireClient(first) as three:
            assert one.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]
            assert two.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]
            three.send(ApiKey.METADATA, 12, {"topics": []})
            assert three.receive_frame() == b""
        producer = Producer({"bootstrap.servers": first, "acks": "all"})
        producer.produce("per-ip", b"replicated")
        assert producer.flush(30) == 0
        assert len(cluster.partition("per-ip", 0).isr) == 2
    rejected = (
        "Rejected connection from /127.0.0.1, address already has the configured maximum of 2"
    )
    assert any(rejected in r.getMessage() for r in caplog.records)


def test_a_client_over_max_connections_waits_for_a_slot_and_the_limit_is_dynamic():
    with MockCluster(brokers=1, config={"max.connections": 2}) as cluster:
        address = cluster.bootstrap_servers
        with WireClient(address) as one:
            two = WireClient(address)
            assert one.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]
            assert two.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]
            waiting = WireClient(address, timeout=1.0)
            cid = waiting.send(ApiKey.METADATA, 12, {"topics": []})
            with pytest.raises(TimeoutError):
                waiting.receive_frame()  # accepted, not read: Kafka's acceptor blocks
            two.connection.close()
            waiting.connection.timeout = 10.0
            assert waiting.receive(ApiKey.METADATA, 12).correlation_id == cid
            # max.connections is a dynamic broker config in Kafka: a cluster default applies
            assert (
                alter_cluster_default(one, "max.connections", "5")["error_code"] == ErrorCode.NONE
            )
            with WireClient(address) as three, WireClient(address) as four:
                for client in (three, four):
                    assert client.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]
            waiting.connection.close()


def test_clients_filling_the_controllers_pool_never_mute_the_brokers_links():
    limits = {"socket.request.max.bytes": MIB, "queued.max.request.bytes": MIB}
    with MockCluster(brokers=1, config=limits) as cluster:
        host, port = cluster.cluster.controller_node.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as hostile:
            hostile.sendall(struct.pack(">i", MIB - 4) + b"x" * 1000)  # charged whole: all of it
            memory = cluster.cluster.controller_node.limits.memory
            deadline = time.monotonic() + 10
            while memory.in_use < MIB and time.monotonic() < deadline:
                time.sleep(0.01)
            assert memory.in_use == MIB
            muted = WireClient(cluster.cluster.controller_node.address, timeout=1.0)
            cid = muted.send(ApiKey.API_VERSIONS, 3, {})
            with pytest.raises(TimeoutError):
                muted.receive_frame()
            # forwarded to the controller and fetched back over the broker's links
            cluster.create_topic("past-the-full-pool", partitions=1, replication_factor=1)
            assert cluster.partition("past-the-full-pool", 0).leader == 1
        muted.connection.timeout = 10.0
        assert muted.receive(ApiKey.API_VERSIONS, 3).correlation_id == cid
        muted.connection.close()


def _rss_peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


def _half_a_frame(address: str, frame: int, half: bytes, sent: list[int]) -> socket.socket:
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.settimeout(None)

    def send() -> None:
        try:
            sock.sendall(struct.pack(">i", frame) + half)
            sent.append(1)
        except OSError:
            return  # closed by the test while muted

    threading.Thread(target=send, daemon=True).start()
    return sock


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
def test_twenty_clients_half_way_through_50_mb_frames_keep_the_broker_bounded(tmp_path):
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", "--brokers", "1"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    hostile: list[socket.socket] = []
    try:
        bootstrap = proc.stdout.readline().strip()
        before = _rss_peak_mib(proc.pid)
        sent: list[int] = []
        half = b"x" * (25 * MIB)
        hostile = [_half_a_frame(bootstrap, 50 * MIB, half, sent) for _ in range(20)]
        deadline = time.monotonic() + 120
        while len(sent) < 2 and time.monotonic() < deadline:  # bounded: two frames fit at once
            time.sleep(0.1)
        assert len(sent) >= 2, "the broker never read two half frames"
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        delivered: list[object] = []
        started = time.monotonic()
        producer.produce("beside-the-hostile", b"v", on_delivery=lambda e, m: delivered.append(e))
        assert producer.flush(30) == 0
        assert delivered == [None] and time.monotonic() - started < 30
        peak = _rss_peak_mib(proc.pid)
        assert len(sent) < 20  # the others were muted: their bytes stayed in the kernel
    finally:
        for sock in hostile:
            sock.close()
        proc.kill()
        proc.wait(timeout=30)
        log.close()
    # 2 x 25 MiB read; without the bound it was 20 x 25 MiB
    assert peak < 200, f"broker RSS peaked at {peak:.0f} MiB (from {before:.0f} MiB)"
