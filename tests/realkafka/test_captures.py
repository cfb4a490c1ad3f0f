"""Real Kafka's traffic recorded with tcpdump on loopback and decoded by kipwire's in-process
capture pipeline: clients to the broker listener and the node's own broker-to-controller and
KRaft traffic on the controller listener. Every PDU decodes; tshark agrees on the requests."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import scenarios
from kafka_harness import KafkaCluster

from kipwire.captures.pipeline import decode_capture

CAPTURES_TESTS = Path(__file__).parents[1] / "captures"
TSHARK = shutil.which("tshark")


def _capture_kit() -> ModuleType:
    # tests/captures owns the tcpdump wrapper; load it by path (tests are not a package)
    name = "real_clients_kit"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, CAPTURES_TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def workload(bootstrap: str) -> None:
    """Both clients, every compression, an idempotent and a transactional producer, a group."""
    for compression in scenarios.COMPRESSIONS:
        scenarios.compression_roundtrip(bootstrap, compression, "confluent", n=50)
    scenarios.compression_roundtrip(bootstrap, "zstd", "kafka-python", n=50)
    scenarios.idempotent_produce(bootstrap, n=50)
    scenarios.transactions(bootstrap)
    scenarios.group_rebalance(bootstrap, partitions=2)


@pytest.fixture(scope="module")
def captured(kafka_single: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The workload's pcap and its decoded rows."""
    kit = _capture_kit()
    node = kafka_single.nodes[0]
    ports = [node.broker_port, node.controller_port]
    path = tmp_path_factory.mktemp("realkafka-capture") / "kafka41.pcap"
    try:
        dump = kit.Tcpdump(path, ports).start()
    except kit.CaptureUnavailable as e:
        pytest.skip(str(e))
    try:
        workload(kafka_single.bootstrap())
    finally:
        dump.stop()
    rows = decode_capture(path, broker_ports=ports)
    return {"path": path, "rows": rows, "ports": ports}


def test_every_pdu_decodes(captured: dict) -> None:
    rows = captured["rows"]
    statuses = Counter(r["decode_status"] for r in rows.pdus)
    bad = [
        (r["direction"], r["api_name"], r["api_version"], r["decode_error"])
        for r in rows.pdus
        if r["decode_status"] != "ok"
    ]
    assert bad == [], statuses
    assert statuses["ok"] > 200
    assert not rows.issues and rows.stats.truncated == 0


def test_capture_saw_the_client_and_the_kraft_apis(captured: dict) -> None:
    names = {r["api_name"] for r in captured["rows"].pdus}
    client_apis = {"ApiVersions", "Metadata", "Produce", "Fetch", "InitProducerId", "EndTxn"}
    client_apis |= {"JoinGroup", "SyncGroup", "Heartbeat", "FindCoordinator"}
    # node 0 is its own controller: its broker heartbeats and the raft Fetch cross the wire too
    assert client_apis | {"BrokerHeartbeat"} <= names


def test_every_request_is_answered(captured: dict) -> None:
    status = Counter(p["status"] for p in captured["rows"].pairs)
    assert status["orphan_response"] == 0
    assert status["answered"] > 100


def _fields(path: Path, ports: list[int], *fields: str) -> list[list[str]]:
    cmd = [TSHARK, "-r", str(path), "-T", "fields"]
    for p in ports:
        cmd += ["-d", f"tcp.port=={p},kafka"]
    for f in fields:
        cmd += ["-e", f]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [
        (line.split("\t") + [""] * len(fields))[: len(fields)] for line in done.stdout.splitlines()
    ]


def test_tshark_agrees_on_every_request(captured: dict) -> None:
    if TSHARK is None:
        pytest.skip("tshark is not installed (Debian package tshark)")
    theirs: Counter[Any] = Counter()
    for key, version, corr in _fields(
        captured["path"],
        captured["ports"],
        "kafka.request_key",
        "kafka.api_version",
        "kafka.correlation_id",
    ):
        if not key:
            continue  # a response (or no Kafka PDU in the packet)
        for k, v, c in zip(key.split(","), version.split(","), corr.split(","), strict=False):
            theirs[(int(k), int(v), int(c))] += 1
    ours = Counter(
        (r["api_key"], r["api_version"], r["correlation_id"])
        for r in captured["rows"].pdus
        if r["direction"] == "request"
    )
    assert theirs == ours
    assert sum(ours.values()) > 100
