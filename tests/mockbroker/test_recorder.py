"""`MockCluster(record=...)`: a pcapng that kipwire's capture decoder and tshark both read."""

from __future__ import annotations

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
