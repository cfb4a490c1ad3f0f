"""Real Kafka's traffic recorded with tcpdump on loopback and decoded by kipwire's in-process
capture pipeline: clients to the broker listener and the node's own broker-to-controller and
KRaft traffic on the controller listener. Every PDU decodes; tshark agrees on the requests."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import data_plane_scenarios as scenarios
import pytest
from kafka_capture import record, reencode, tshark_requests
from kafka_harness import KafkaCluster
from kip966_story import StoryRun

from kipwire.captures import decode_capture
from kipwire.codec import ApiKey


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
    ports = kafka_single.listener_ports()
    path = tmp_path_factory.mktemp("realkafka-capture") / "kafka41.pcap"
    with record(path, ports) as recording:
        workload(kafka_single.bootstrap())
    if recording.path is None:
        pytest.skip(recording.missing)
    return {"path": path, "rows": decode_capture(path, broker_ports=ports), "ports": ports}


@pytest.fixture(scope="module")
def story_capture(kafka_elr: KafkaCluster, kip966_run: StoryRun) -> dict:
    """The ELR cluster's traffic during the KIP-966 story, decoded."""
    recording = kip966_run.recording
    if recording.path is None:
        pytest.skip(recording.missing)
    ports = kafka_elr.listener_ports()
    rows = decode_capture(recording.path, broker_ports=ports)
    return {"path": recording.path, "rows": rows, "ports": ports}


def _not_ok(rows: Any) -> list[tuple]:
    """(status, direction, API, error) of every PDU that is not ok, but capture-window cuts.

    Brokers keep connections to the controller open from before tcpdump starts, so the first
    response on such a connection has no captured request; and a broker that stops drops its
    connection while the controller is still writing, so that connection's last response is cut.
    Neither is a decoding matter: these two, exactly there, are not reported.
    """
    by_flow: dict[str, list[dict]] = {}
    for r in rows.pdus:
        by_flow.setdefault(r["flow_uid"], []).append(r)
    out = []
    for pdus in by_flow.values():
        pdus.sort(key=lambda r: r["stream_offset"] if r["direction"] == "response" else -1)
        responses = [r for r in pdus if r["direction"] == "response"]
        for r in pdus:
            status = r["decode_status"]
            if status == "ok":
                continue
            if status == "request_missing" and responses and r is responses[0]:
                continue
            if status == "truncated" and responses and r is responses[-1]:
                continue
            out.append((status, r["direction"], r["api_name"], r["decode_error"]))
    return out


@pytest.mark.parametrize("which", ["captured", "story_capture"])
def test_every_frame_reencodes_byte_for_byte(which: str, request: pytest.FixtureRequest) -> None:
    # DESIGN: decode -> encode is byte-identical; here on frames real Kafka and real clients wrote
    got = reencode(request.getfixturevalue(which)["path"])
    assert got.differing == []
    # librdkafka's all-topics Metadata v13 carries 3 bytes after the body, which Kafka ignores: a
    # mock broker must ignore them too
    assert set(got.trailing) <= {(ApiKey.METADATA, 13, "rdkafka", 3)}
    assert got.frames > 300


def test_every_pdu_decodes(captured: dict) -> None:
    rows = captured["rows"]
    statuses = Counter(r["decode_status"] for r in rows.pdus)
    assert statuses == {"ok": statuses["ok"]}
    assert statuses["ok"] > 200
    assert not rows.issues and rows.stats.truncated == 0


def test_every_pdu_of_the_story_decodes(story_capture: dict) -> None:
    rows = story_capture["rows"]
    assert _not_ok(rows) == []
    assert sum(r["decode_status"] == "ok" for r in rows.pdus) > 200
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


@pytest.mark.parametrize("which", ["captured", "story_capture"])
def test_tshark_agrees_on_every_request(which: str, request: pytest.FixtureRequest) -> None:
    captured = request.getfixturevalue(which)
    theirs = tshark_requests(captured["path"], captured["ports"])
    if theirs is None:
        pytest.skip("tshark is not installed (Debian package tshark)")
    ours = Counter(
        (r["api_key"], r["api_version"], r["correlation_id"])
        for r in captured["rows"].pdus
        if r["direction"] == "request"
    )
    assert theirs == ours
    assert sum(ours.values()) > 100


def _requests(rows: list[dict], api_name: str) -> list[dict]:
    return [
        json.loads(r["body_json"])
        for r in rows
        if r["direction"] == "request" and r["api_name"] == api_name
    ]


def test_story_capture_has_the_kraft_apis(story_capture: dict) -> None:
    names = {r["api_name"] for r in story_capture["rows"].pdus}
    # brokers 1-3 reach the controller over the wire: registration, heartbeats, the raft Fetch
    # of the metadata log, and the leaders' AlterPartition when an ISR changes
    assert {"BrokerRegistration", "BrokerHeartbeat", "Fetch", "AlterPartition"} <= names
    assert "DescribeTopicPartitions" in names


def test_restarted_brokers_tell_how_they_stopped(story_capture: dict) -> None:
    # KIP-966: BrokerRegistration v3+ carries PreviousBrokerEpoch, the epoch a cleanly stopped
    # broker wrote to its clean-shutdown file, or -1 after a crash (kip-rules D.18)
    registrations: dict[int, list[int]] = {}
    for body in _requests(story_capture["rows"].pdus, "BrokerRegistration"):
        registrations.setdefault(body["broker_id"], []).append(body["previous_broker_epoch"])
    # the story restarts 2 (stopped cleanly), then 1 (killed), then 3 (stopped cleanly)
    assert registrations[2][-1] > 0
    assert registrations[1][-1] == -1
    assert registrations[3][-1] > 0
