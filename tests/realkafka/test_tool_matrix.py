"""The tool matrix: each Kafka 4.4.0 command-line tool that talks to a cluster runs against real
Kafka 4.4.0 and against `MockCluster(brokers=3)`, and what it prints is compared step by step
after masking (tool_matrix.py). Both clusters have the same layout, a controller with node id
CONTROLLER_NODE_ID and brokers 1-3, and the same topics, records and groups prepared.

Every step must print the same on both, unless `EXPECTED_DIFFERENCES` names it: then the test
asserts the difference is still there (the mock's text and Kafka's), so a fixed one fails
loudly and its entry goes. The real and mock side of each tool run at once (two threads).

kafka-acls runs in test_acl_tool_matrix.py, on secured clusters; test_differential_security.py
compares the ACLs' effect (its authorization matrix) on a secured real Kafka and mock, and
test_java_tools_on_secured_mock.py runs Kafka's tools over SASL_SSL and mTLS. The slower tools
(the perf tests and the verifiable producer and consumer, counts only) run with
KIPWIRE_TOOL_MATRIX=full.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import pytest
from confluent_kafka import Producer
from kafka_dist import KafkaDist, KafkaUnavailable, ensure_kafka_clients
from kafka_harness import JVM_OPTS, KafkaCluster, NodeSpec
from scenario_kit import create_topic
from tool_matrix import Side, mask
from tool_matrix_tools import RECORDS, TOOLS

from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.controller.quorum import CONTROLLER_NODE_ID

#: the mock's layout: a controller of its own and brokers 1-3
LAYOUT = [NodeSpec(CONTROLLER_NODE_ID, controller=True, broker=False)] + [
    NodeSpec(i, controller=False, broker=True) for i in (1, 2, 3)
]
#: the share coordinator's state topic as small as the harness makes the other internal topics
#: (50 partitions by default cost a first share consumer many seconds on 2 shared cores)
SHARE_STATE = {
    "share.coordinator.state.topic.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}
#: the harness's server.properties, where it differs from the mock's defaults
MOCK_CONFIG = {"auto.create.topics.enable": "false", "default.replication.factor": "3"}


class Difference(NamedTuple):
    """A step that prints differently: what the mock prints, what Kafka prints, and why."""

    mock: str
    kafka: str
    reason: str


#: "tool/step" -> the difference that step shows, with the reason naming what Kafka does
EXPECTED_DIFFERENCES: dict[str, Difference] = {
    "kafka-configs/broker-alter-static": Difference(
        "InvalidConfigurationException: Cannot update these configs dynamically: Set(log.dirs)",
        "InvalidRequestException: Cannot update these configs dynamically: [log.dirs]",
        "Kafka 4.4 refuses a static broker config with INVALID_REQUEST and a Java set's text; "
        "the mock answers INVALID_CONFIG with the Scala text earlier releases had "
        "(controller/broker_configs.dynamic_problem, asserted by test_broker_configs and "
        "test_realkafka_tools_on_mock)",
    ),
    "kafka-features/describe": Difference(
        "transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 "
        "FinalizedVersionLevel: 0",
        "transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 "
        "FinalizedVersionLevel: 2",
        "Kafka 4.4 finalizes transaction.version 2 (transactions v2, KIP-890 part 2); the "
        "mock's coordinator does transactions v1 (test_differential_api_versions "
        "FEATURE_DIFFERENCES_4_4)",
    ),
    "kafka-features/describe-controller": Difference(
        "transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 "
        "FinalizedVersionLevel: 0",
        "transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 "
        "FinalizedVersionLevel: 2",
        "as describe: the controller lists the same finalized levels",
    ),
    "kafka-metadata-quorum/describe-status": Difference(
        'CurrentObservers: [{"id": 1}, {"id": 2}, {"id": 3}]',
        'CurrentObservers: [{"id": 1, "directoryId": "<id>"}',
        "with kraft.version 0 Kafka's static voter has no directory id and each observer "
        "reports its own (Fetch v17 ReplicaDirectoryId); the mock gives its voter one and its "
        "observers none",
    ),
    "kafka-metadata-quorum/describe-status-controller": Difference(
        'CurrentObservers: [{"id": 1}, {"id": 2}, {"id": 3}]',
        'CurrentObservers: [{"id": 1, "directoryId": "<id>"}',
        "as describe-status: the controller answers DescribeQuorum the same way",
    ),
    "kafka-metadata-quorum/describe-replication": Difference(
        "1 AAAAAAAAAAAAAAAAAAAAAA <n> <n> <n> <n> Observer",
        "3000 AAAAAAAAAAAAAAAAAAAAAA <n> <n> <n> <n> Leader",
        "the same directory ids as describe --status, in the replication table",
    ),
    "kafka-get-offsets/all-topics": Difference(
        "tm-console:0:",
        "__consumer_offsets:0:",
        "Kafka lists its internal topics (__consumer_offsets, __share_group_state, "
        "__transaction_state) with the others; the mock keeps group, share and transaction "
        "state in its coordinators, not in topics",
    ),
}


# ------------------------------------------------------------------ the clusters


def _prepare(bootstrap: str) -> None:
    """The topics and records every tool below finds, the same on both clusters."""
    for name, partitions in (
        ("tm-data", 2),
        ("tm-tx", 1),
        ("tm-del", 1),
        ("tm-console", 1),
        ("tm-share", 1),
        ("tm-reassign", 1),
        ("tm-perf", 1),
    ):
        create_topic(bootstrap, name, partitions, replication=3)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(RECORDS):
        producer.produce("tm-data", b"v%d" % i, b"k%d" % i, partition=i % 2)
    for i in range(10):
        producer.produce("tm-del", b"d%d" % i)
    for i in range(5):
        producer.produce("tm-share", b"s%d" % i)
    assert producer.flush(30) == 0
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tm-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce("tm-tx", b"committed")
    txn.commit_transaction(30)


@pytest.fixture(scope="module")
def sides(
    kafka_dist: KafkaDist, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Side]]:
    """Real Kafka 4.4.0 (a controller and brokers 1-3) and the mock, both prepared alike."""
    workdir = tmp_path_factory.mktemp("tool-matrix")
    try:
        real = KafkaCluster.start(kafka_dist, workdir / "real", LAYOUT, SHARE_STATE)
    except KafkaUnavailable as e:
        pytest.skip(f"real Kafka did not start: {e}")
    try:
        with MockCluster(brokers=3, config=MOCK_CONFIG) as mock:
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(_prepare, [real.bootstrap(), mock.bootstrap_servers]))
            controller = f"127.0.0.1:{real.nodes[CONTROLLER_NODE_ID].controller_port}"
            both = {
                "real": Side(
                    "real", real.bootstrap(), kafka_dist, workdir / "real-tools", controller
                ),
                "mock": Side(
                    "mock",
                    mock.bootstrap_servers,
                    kafka_dist,
                    workdir / "mock-tools",
                    mock.cluster.controller_node.address,
                ),
            }
            try:
                yield both
            finally:
                for side in both.values():
                    side.close()
    finally:
        real.stop()


def _tool_id(tool: Callable[[Side], None]) -> str:
    return tool.__name__.replace("_", "-")


def _run(tool: Callable[[Side], None], side: Side) -> dict[str, str]:
    side.steps = {}
    tool(side)
    return dict(side.steps)


@pytest.mark.parametrize("tool", TOOLS, ids=_tool_id)
def test_tool_prints_the_same_on_kafka_and_the_mock(tool, sides):
    with ThreadPoolExecutor(2) as pool:
        real, mock = pool.map(lambda side: _run(tool, side), [sides["real"], sides["mock"]])
    name = _tool_id(tool)
    assert list(real) == list(mock)
    problems = []
    for step, kafka_text in real.items():
        key, mock_text = f"{name}/{step}", mock[step]
        expected = EXPECTED_DIFFERENCES.get(key)
        if expected is None:
            if mock_text != kafka_text:
                problems.append(f"{key} differs:\n--- kafka\n{kafka_text}\n--- mock\n{mock_text}")
        elif not (
            mock_text != kafka_text and expected.mock in mock_text and expected.kafka in kafka_text
        ):
            problems.append(
                f"{key} no longer shows the expected difference (fixed? drop its entry):\n"
                f"--- kafka\n{kafka_text}\n--- mock\n{mock_text}"
            )
    stale = [
        k for k in EXPECTED_DIFFERENCES if k.startswith(name + "/") and k.split("/")[1] not in real
    ]
    assert not stale, f"expected differences for steps that no longer run: {stale}"
    assert not problems, "\n\n".join(problems)


def test_every_expected_difference_names_a_tool_of_the_matrix():
    tools = {_tool_id(t) for t in TOOLS}
    assert {key.split("/")[0] for key in EXPECTED_DIFFERENCES} <= tools
    assert all(d.reason for d in EXPECTED_DIFFERENCES.values())


# ------------------------------------------------------------------ the Java clients

CLIENT_MATRIX = Path(__file__).parent / "java" / "ClientMatrix.java"
CLIENT_TIMEOUT_S = 400.0

#: "section/key" of ClientMatrix's JSON -> the difference it shows, with the reason
EXPECTED_CLIENT_DIFFERENCES: dict[str, Difference] = {}


def _client_matrix(side: Side, clients: KafkaDist) -> dict[str, object]:
    """ClientMatrix.java's JSON against one cluster, flattened to "section/key" entries."""
    cmd = [clients.java, *JVM_OPTS, "-cp", clients.classpath, str(CLIENT_MATRIX), side.bootstrap]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False)
    assert run.returncode == 0, f"{side.name}: {run.stderr[-3000:]}"
    out = json.loads(run.stdout.strip().splitlines()[-1])
    flat: dict[str, object] = {}
    for section, value in out.items():
        if isinstance(value, dict):
            flat.update((f"{section}/{key}", item) for key, item in value.items())
        else:
            flat[section] = value
    return flat


def test_java_clients_see_the_same_on_kafka_and_the_mock(sides):
    try:
        clients = ensure_kafka_clients()
    except KafkaUnavailable as e:
        pytest.skip(f"kafka-clients unavailable: {e}")
    with ThreadPoolExecutor(2) as pool:
        real, mock = pool.map(
            lambda side: _client_matrix(side, clients), [sides["real"], sides["mock"]]
        )
    assert sorted(real) == sorted(mock)
    problems = []
    for key, kafka_value in real.items():
        expected = EXPECTED_CLIENT_DIFFERENCES.get(key)
        kafka_text, mock_text = mask(json.dumps(kafka_value)), mask(json.dumps(mock[key]))
        if expected is None and kafka_text != mock_text:
            problems.append(f"{key}: kafka {kafka_text}, mock {mock_text}")
        elif expected is not None and not (
            kafka_text != mock_text and expected.mock in mock_text and expected.kafka in kafka_text
        ):
            problems.append(f"{key} no longer differs as expected: {kafka_text} / {mock_text}")
    assert not problems, "\n".join(problems)
    # what each client did, beyond agreeing: every record back, through every kind of consumer
    produced = real["produced"]
    assert isinstance(produced, list) and len(produced) == 20
    for consumer in ("consumer-classic", "consumer-consumer", "share-consumer"):
        assert len(real[f"{consumer}/records"]) == 20, consumer
