"""`MockCluster(record=...)`: a pcapng that kipwire's capture decoder and tshark both read."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter

import pytest
from confluent_kafka import Producer

from kipwire.captures import decode_capture
from kipwire.mockbroker import MockCluster


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A capture of a producer's session with a 2-broker cluster, and the broker ports."""
    path = tmp_path_factory.mktemp("rec") / "cluster.pcapng"
    with MockCluster(brokers=2, record=str(path)) as cluster:
        ports = [int(a.rsplit(":", 1)[1]) for a in cluster.bootstrap_servers.split(",")]
        ports.append(cluster.cluster.controller_node.port)
        cluster.create_topic("rec", partitions=2, replication_factor=2)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(100):
            producer.produce("rec", b"r%d" % i)
        assert producer.flush(10) == 0
    return path, ports


def test_every_recorded_frame_decodes(recording):
    path, ports = recording
    rows = decode_capture(str(path), broker_ports=ports)
    statuses = Counter(r["decode_status"] for r in rows.pdus)
    apis = Counter(r["api_name"] for r in rows.pdus)
    assert rows.issues == []
    assert set(statuses) == {"ok"}
    assert apis["Produce"] >= 2 and apis["Produce"] % 2 == 0  # requests and their responses
    produced = sum(
        r["record_count"] or 0
        for r in rows.pdus
        if r["api_name"] == "Produce" and r["direction"] == "request"
    )
    assert produced == 100
    # inter-node traffic too: brokers registering, heartbeating, fetching the metadata log
    assert apis["BrokerRegistration"] == 4 and apis["BrokerHeartbeat"] >= 4
    assert apis["Fetch"] >= 4


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_tshark_reads_the_recording(recording):
    path, _ = recording
    done = subprocess.run(
        ["tshark", "-r", str(path), "-q", "-z", "io,stat,0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Frames" in done.stdout


def _produce(cluster: MockCluster, topic: str, count: int, size: int = 8) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(count):
        producer.produce(topic, (b"r%d-" % i).ljust(size, b"x"))
    assert producer.flush(10) == 0


def test_clients_only_leaves_the_nodes_own_traffic_out(tmp_path):
    path = tmp_path / "clients.pcapng"
    with MockCluster(brokers=2, record=str(path), record_clients_only=True) as cluster:
        ports = [int(a.rsplit(":", 1)[1]) for a in cluster.bootstrap_servers.split(",")]
        ports.append(cluster.cluster.controller_node.port)
        cluster.create_topic("only", partitions=1, replication_factor=2)
        _produce(cluster, "only", 20)
    rows = decode_capture(str(path), broker_ports=ports)
    apis = Counter(r["api_name"] for r in rows.pdus)
    assert rows.issues == []
    assert apis["Produce"] >= 2
    assert {"BrokerRegistration", "BrokerHeartbeat", "Fetch"} & set(apis) == set()


def test_max_bytes_rotates_into_whole_pcapng_files(tmp_path):
    path = tmp_path / "rotated.pcapng"
    with MockCluster(brokers=1, record=str(path), record_max_bytes=20_000) as cluster:
        ports = [int(cluster.bootstrap_servers.rsplit(":", 1)[1])]
        ports.append(cluster.cluster.controller_node.port)
        cluster.create_topic("rot", partitions=1)
        for _ in range(5):
            _produce(cluster, "rot", 100, size=200)
        recorder = cluster.cluster.recorder
    files = recorder.files
    assert len(files) >= 3
    assert files[:2] == [str(path), f"{path}1"]
    for name in files:
        with open(name, "rb") as f:
            data = f.read()
        assert data[:4] == b"\x0a\x0d\x0d\x0a"  # each starts with its own section header
        assert decode_capture(name, broker_ports=ports).issues == []
    # each file but the last stopped growing once it held the limit (one write past it at most)
    assert all(os.path.getsize(name) >= 20_000 for name in files[:-1])
