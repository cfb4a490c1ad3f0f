"""Kafka 4.4.0's own Java clients on the wire: the producer and consumer
(`java/ProduceConsume.java`, `group.protocol=classic`, and `consumer` against real Kafka only: the
mock's group coordinator speaks the classic protocol) and a Kafka Streams word count
(`java/WordCount.java`, `group.protocol=streams`, KIP-1071, against real Kafka and the mock).

Against real Kafka 4.4.0 tcpdump records the broker listener; against the mock, its own recorder
(`MockCluster(record=...)`). Every PDU of every capture decodes `ok` with kipwire.captures (no
malformed or unsupported row), every frame encodes back byte for byte through the codec, and
tshark reads the same requests.
The apps run with the single-file source launcher on kafka-streams 4.4.0's jars (fetched once per
machine); without a JDK, tcpdump or the jars, the tests skip with the reason.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka_capture import record, reencode, tshark_requests
from kafka_dist import KafkaDist, KafkaUnavailable, ensure_kafka_streams
from kafka_harness import KafkaCluster

from kipwire.captures import decode_capture
from kipwire.codec import ErrorCode
from kipwire.mockbroker import MockCluster

JAVA = Path(__file__).parent / "java"
APP_TIMEOUT_S = 180.0
RECORDS = 200
MOCK_BROKERS = 3
#: every API each run must show, beyond ApiVersions and Metadata
CLIENT_APIS = {"CreateTopics", "InitProducerId", "Produce", "FindCoordinator", "Fetch"}
PROTOCOL_APIS = {
    "classic": {"JoinGroup", "SyncGroup", "OffsetFetch", "OffsetCommit", "LeaveGroup"},
    "consumer": {"ConsumerGroupHeartbeat", "OffsetFetch", "OffsetCommit"},
    "streams": {"StreamsGroupHeartbeat", "OffsetFetch", "OffsetCommit", "ListOffsets"},
}
WORD_COUNTS = {
    "a": 1,
    "brown": 1,
    "dog": 2,
    "fox": 2,
    "jumps": 1,
    "lazy": 1,
    "over": 1,
    "quick": 1,
    "runs": 1,
    "sleeps": 1,
    "the": 3,
}


@dataclass
class JavaCapture:
    """One Java app's run: the capture, the ports it was decoded for, its rows and the output."""

    where: str  # "real" (Kafka 4.4.0) or "mock"
    protocol: str
    path: Path
    ports: list[int]  # the broker listeners the clients connected to
    rows: Any
    stdout: str


@pytest.fixture(scope="module")
def streams_jars() -> KafkaDist:
    """kafka-streams 4.4.0 and kafka-clients 4.4.0, or a skip that says why not."""
    try:
        jars = ensure_kafka_streams()
    except KafkaUnavailable as e:
        pytest.skip(f"kafka-streams unavailable: {e}")
    modules = subprocess.run(
        [jars.java, "--list-modules"], capture_output=True, text=True, timeout=60, check=False
    )
    if "jdk.compiler@" not in modules.stdout:
        pytest.skip(f"{jars.java} has no jdk.compiler: the single-file source launcher needs it")
    return jars


def run_app(jars: KafkaDist, source: str, *args: str) -> str:
    """Run one of java/'s apps to its end; its stdout."""
    done = subprocess.run(
        [jars.java, "-cp", jars.classpath, str(JAVA / source), *args],
        capture_output=True,
        text=True,
        timeout=APP_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"{source} exit {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


def app_args(protocol: str, bootstrap: str, name: str, state: Path) -> tuple[str, ...]:
    """The app and its arguments for a group protocol."""
    if protocol == "streams":
        return ("WordCount.java", bootstrap, name, protocol, str(state))
    return ("ProduceConsume.java", bootstrap, name, f"{name}-group", protocol, str(RECORDS))


@pytest.fixture(
    scope="module",
    params=["real-classic", "real-consumer", "real-streams", "mock-classic", "mock-streams"],
)
def java_capture(
    request: pytest.FixtureRequest,
    streams_jars: KafkaDist,
    tmp_path_factory: pytest.TempPathFactory,
) -> JavaCapture:
    """The app of one group protocol against real Kafka 4.4.0 or the mock, captured and decoded."""
    where, protocol = request.param.split("-")
    tmp = tmp_path_factory.mktemp(f"java-{request.param}")
    name = f"java-{request.param}"
    if where == "mock":
        path = tmp / "mock.pcapng"
        with MockCluster(brokers=MOCK_BROKERS, record=str(path)) as cluster:
            bootstrap = cluster.bootstrap_servers
            stdout = run_app(streams_jars, *app_args(protocol, bootstrap, name, tmp / "state"))
        ports = [int(a.rsplit(":", 1)[1]) for a in bootstrap.split(",")]
    else:
        kafka: KafkaCluster = request.getfixturevalue("kafka_single")
        assert kafka.dist.version == streams_jars.version == "4.4.0"
        path = tmp / "kafka44.pcap"
        ports = [kafka.nodes[0].broker_port]
        with record(path, ports) as recording:
            stdout = run_app(
                streams_jars, *app_args(protocol, kafka.bootstrap(), name, tmp / "state")
            )
        if recording.path is None:
            pytest.skip(recording.missing)
    rows = decode_capture(path, broker_ports=ports)
    return JavaCapture(where, protocol, path, ports, rows, stdout)


def test_the_app_did_its_work(java_capture: JavaCapture) -> None:
    if java_capture.protocol == "streams":
        counts = dict(line.split() for line in java_capture.stdout.splitlines())
        assert {word: int(n) for word, n in counts.items()} == WORD_COUNTS
    else:
        assert java_capture.stdout.split() == ["produced", str(RECORDS), "consumed", str(RECORDS)]


def test_every_pdu_decodes(java_capture: JavaCapture) -> None:
    rows = java_capture.rows
    statuses = Counter(r["decode_status"] for r in rows.pdus)
    assert statuses == {"ok": statuses["ok"]}
    assert statuses["ok"] > 50
    assert not rows.issues and rows.stats.truncated == 0


def test_every_frame_reencodes_byte_for_byte(java_capture: JavaCapture) -> None:
    got = reencode(java_capture.path)
    assert got.differing == [] and got.trailing == []
    assert got.frames > 50


def test_tshark_agrees_on_every_request(java_capture: JavaCapture) -> None:
    theirs = tshark_requests(java_capture.path, java_capture.ports)
    if theirs is None:
        pytest.skip("tshark is not installed (Debian package tshark)")
    ours = Counter(
        (r["api_key"], r["api_version"], r["correlation_id"])
        for r in java_capture.rows.pdus
        if r["direction"] == "request" and r["resp_p"] in java_capture.ports
    )
    assert theirs == ours
    assert sum(ours.values()) > 20


def test_the_client_spoke_its_group_protocol(java_capture: JavaCapture) -> None:
    names = {r["api_name"] for r in java_capture.rows.pdus}
    assert {"ApiVersions", "Metadata"} | CLIENT_APIS | PROTOCOL_APIS[java_capture.protocol] <= names
    if java_capture.protocol != "classic":
        assert not names & {"JoinGroup", "SyncGroup", "Heartbeat"}


def test_every_client_connection_opens_with_api_versions_5(java_capture: JavaCapture) -> None:
    first: dict[str, dict] = {}
    for r in java_capture.rows.pdus:
        if r["resp_p"] not in java_capture.ports or r["direction"] != "request":
            continue  # the mock's own brokers talking to its controller
        seen = first.get(r["flow_uid"])
        if seen is None or r["stream_offset"] < seen["stream_offset"]:
            first[r["flow_uid"]] = r
    # KIP-1242: a Kafka 4.4 client opens every connection with ApiVersions v5
    assert {(r["api_name"], r["api_version"]) for r in first.values()} == {("ApiVersions", 5)}
    assert len(first) >= 3  # bootstrap, then each broker as the client learns of it
    answers = {
        (r["flow_uid"], r["correlation_id"]): r["error_code"]
        for r in java_capture.rows.pdus
        if r["direction"] == "response"
    }
    # Kafka 4.4.0, and the mock under its default preset KAFKA_4_4, answer v5 at once
    errors = {answers[r["flow_uid"], r["correlation_id"]] for r in first.values()}
    assert errors == {ErrorCode.NONE}
