"""Kafka 4.4.0's tools with `--bootstrap-controller` (KIP-919) against the mock's controller
listener, and the same commands against real Kafka's: `kafka-metadata-quorum describe`,
`kafka-features describe` and `upgrade`, `kafka-configs --describe --entity-type brokers` and
`kafka-cluster cluster-id`. The Admin client asks the controller for DescribeCluster with
EndpointType 2, then follows the endpoints it answers."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from kafka_dist import KafkaDist
from kafka_harness import KafkaCluster

from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.controller.quorum import CONTROLLER_NODE_ID

QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
CLUSTER = "org.apache.kafka.tools.ClusterTool"
#: Before KIP-919 was served the tools waited out their 40 s default API timeout; each run
#: here includes a JVM start.
TIMEOUT = 120
#: the synonym both list for the cluster default min.insync.replicas that ELR's format writes
ELR_MIN_ISR_SYNONYM = "DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1"
#: feature -> (Kafka 4.4.0's finalized level, the mock's, why they differ)
FINALIZED_DIFFERENCES = {
    "transaction.version": (
        2,
        0,
        "transactions v2 (KIP-890 part 2) is not served by the mock's brokers, so it is left "
        "unset (test_differential_api_versions.FEATURE_DIFFERENCES_4_4)",
    ),
}


def _tool(dist: KafkaDist, main: str, *args: str) -> str:
    return dist.tool_output(main, *args, timeout=TIMEOUT)


def _outputs(dist: KafkaDist, controller: str) -> dict[str, str]:
    """What each command prints against the controller listener at `controller`."""
    reach = ["--bootstrap-controller", controller]
    return {
        "status": _tool(dist, QUORUM, *reach, "describe", "--status"),
        "features": _tool(dist, FEATURES, *reach, "describe"),
        "configs": _tool(dist, CONFIGS, *reach, "--describe", "--entity-type", "brokers"),
        "cluster-id": _tool(dist, CLUSTER, "cluster-id", *reach),
    }


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as running:
        yield running


@pytest.fixture(scope="module")
def on_mock(kafka_dist: KafkaDist, mock: MockCluster) -> dict[str, str]:
    return _outputs(kafka_dist, mock.cluster.controller_node.address)


@pytest.fixture(scope="module")
def on_kafka(kafka_dist: KafkaDist, kafka_single: KafkaCluster) -> dict[str, str]:
    (node,) = kafka_single.nodes.values()
    return _outputs(kafka_dist, f"127.0.0.1:{node.controller_port}")


def _fields(output: str) -> dict[str, str]:
    """`Key:   value` lines as a dict."""
    pairs = (line.split(":", 1) for line in output.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _features(output: str) -> dict[str, tuple[str, str, str]]:
    """feature -> (SupportedMinVersion, SupportedMaxVersion, FinalizedVersionLevel)."""
    pattern = (
        r"Feature: (\S+)\s+SupportedMinVersion: (.+?)\s+SupportedMaxVersion: (\S+)\s+"
        r"FinalizedVersionLevel: (\S+)"
    )
    return {m[1]: (m[2], m[3], m[4]) for m in re.finditer(pattern, output)}


def test_the_tools_reach_the_mocks_controller(kafka_dist, mock, on_mock):
    port = mock.cluster.controller_node.port
    status = _fields(on_mock["status"])
    assert (status["ClusterId"], status["LeaderId"]) == ("kipwire-mock", str(CONTROLLER_NODE_ID))
    assert f'"endpoints": ["CONTROLLER://127.0.0.1:{port}"]' in status["CurrentVoters"]
    assert status["CurrentObservers"] == '[{"id": 1}, {"id": 2}, {"id": 3}]'
    replication = _tool(
        kafka_dist, QUORUM, "--bootstrap-controller", f"127.0.0.1:{port}", "describe",
        "--replication",
    )  # fmt: skip
    rows = [line.split() for line in replication.splitlines()[1:] if line.strip()]
    assert {(row[0], row[-1]) for row in rows} == {
        (str(CONTROLLER_NODE_ID), "Leader"),
        ("1", "Observer"),
        ("2", "Observer"),
        ("3", "Observer"),
    }
    assert _features(on_mock["features"])["metadata.version"] == ("3.3-IV3", "4.4-IV2", "4.4-IV2")
    upgraded = _tool(
        kafka_dist, FEATURES, "--bootstrap-controller", f"127.0.0.1:{port}", "upgrade",
        "--feature", "eligible.leader.replicas.version=1",
    )  # fmt: skip
    assert upgraded.strip() == "eligible.leader.replicas.version was upgraded to 1."
    configs = on_mock["configs"].splitlines()
    assert configs[0] == f"Dynamic configs for broker {CONTROLLER_NODE_ID} are:"
    assert "Default configs for brokers in the cluster are:" in configs
    # only what is set dynamically: the min.insync.replicas ELR's format writes (KIP-966)
    elr_min_isr = "min.insync.replicas=1 sensitive=false"
    assert f"  {elr_min_isr} synonyms={{{ELR_MIN_ISR_SYNONYM}}}" in configs
    assert not any(line.startswith("  num.partitions=") for line in configs)
    assert on_mock["cluster-id"].strip() == "Cluster ID: kipwire-mock"


def test_the_same_commands_answer_alike_on_kafka_and_the_mock(on_kafka, on_mock):
    kafka_status, mock_status = _fields(on_kafka["status"]), _fields(on_mock["status"])
    assert kafka_status.keys() == mock_status.keys()
    assert kafka_status["LeaderEpoch"] == mock_status["LeaderEpoch"] == "1"
    # real Kafka's single node is its own broker: no observers; the mock's brokers observe
    assert kafka_status["CurrentObservers"] == "[]"

    kafka_features, mock_features = _features(on_kafka["features"]), _features(on_mock["features"])
    assert kafka_features.keys() == mock_features.keys()
    for name, (kafka_level, mock_level, _why) in FINALIZED_DIFFERENCES.items():
        assert (kafka_features[name][2], mock_features[name][2]) == (
            str(kafka_level),
            str(mock_level),
        )
        assert kafka_features[name][:2] == mock_features[name][:2]
    same = set(kafka_features) - set(FINALIZED_DIFFERENCES)
    assert {n: kafka_features[n] for n in same} == {n: mock_features[n] for n in same}

    for output in (on_kafka["configs"], on_mock["configs"]):
        lines = output.splitlines()
        assert re.fullmatch(r"Dynamic configs for broker \d+ are:", lines[0])
        assert "Default configs for brokers in the cluster are:" in lines
    # both list a cluster default with itself as its synonym
    for output in (on_kafka["configs"], on_mock["configs"]):
        assert f"synonyms={{{ELR_MIN_ISR_SYNONYM}}}" in output

    for output in (on_kafka["cluster-id"], on_mock["cluster-id"]):
        assert re.fullmatch(r"Cluster ID: \S+\n", output)
