"""ApiVersions of real Kafka 4.1 (sent and decoded with kipwire.codec) against the codec's own
version ranges: every difference is listed here with the reason for it.

The observed ranges are kept in data/api_versions_kafka_4_1.json so the mock broker's tests can
compare against them without a JVM; the live cluster must still answer exactly that file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka_harness import KafkaCluster
from realkafka_wire import call

from kipwire.codec import APIS, MESSAGES, ApiKey, ErrorCode

RECORDED = Path(__file__).parent / "data" / "api_versions_kafka_4_1.json"

KIP_896 = "Kafka 4.0 removed these old versions (KIP-896); the codec keeps them to read old traffic"
KAFKA_4_2 = (
    "the codec's schema is the newer one kafka-python 3.0.12 vendors; Kafka 4.1 does not "
    "advertise that version (it ships in 4.2)"
)
KAFKA_4_4 = "the codec knows every version through Kafka 4.4.0; Kafka 4.1 stops one lower"
EARLY_ACCESS = "KIP-932's early-access v0 (Kafka 4.0), withdrawn in 4.1: decoded, never advertised"

# api key -> (Kafka 4.1's range, the codec's range, why they differ)
RANGE_DIFFERENCES: dict[int, tuple[tuple[int, int], tuple[int, int], str]] = {
    1: ((4, 18), (0, 18), KIP_896),
    2: ((1, 10), (0, 11), KIP_896 + "; " + KAFKA_4_2),
    8: ((2, 9), (0, 10), KIP_896 + "; " + KAFKA_4_2),
    9: ((1, 9), (0, 10), KIP_896 + "; " + KAFKA_4_2),
    19: ((2, 7), (0, 7), KIP_896),
    18: ((0, 4), (0, 5), KAFKA_4_4 + " (ApiVersions v5, KIP-1242)"),
    20: ((1, 6), (0, 6), KIP_896),
    22: ((0, 5), (0, 6), "InitProducerId v6 (KIP-939, two-phase commit) is unstable in 4.1"),
    23: ((2, 4), (0, 4), KIP_896),
    27: ((1, 1), (0, 2), KIP_896 + "; " + KAFKA_4_2),
    28: ((0, 5), (0, 6), KAFKA_4_4 + " (TxnOffsetCommit v6, topic ids)"),
    29: ((1, 3), (0, 3), KIP_896),
    30: ((1, 3), (0, 3), KIP_896),
    31: ((1, 3), (0, 3), KIP_896),
    32: ((1, 4), (0, 4), KIP_896),
    34: ((1, 2), (0, 2), KIP_896),
    35: ((1, 4), (0, 5), KIP_896 + "; " + KAFKA_4_2),
    38: ((1, 3), (0, 3), KIP_896),
    39: ((1, 2), (0, 2), KIP_896),
    40: ((1, 2), (0, 2), KIP_896),
    41: ((1, 3), (0, 3), KIP_896),
    42: ((0, 2), (0, 3), KAFKA_4_4),
    43: ((0, 2), (0, 3), "ElectLeaders v3 is kipwire's marked extension (KIP-966 DesiredLeaders)"),
    56: ((2, 3), (0, 3), KIP_896),
    63: ((0, 1), (0, 2), KAFKA_4_4 + " (BrokerHeartbeat v2, CordonedLogDirs)"),
    76: ((1, 1), (0, 1), EARLY_ACCESS),
    77: ((1, 1), (0, 1), EARLY_ACCESS),
    78: ((1, 1), (0, 2), EARLY_ACCESS + "; " + KAFKA_4_4),
    79: ((1, 1), (0, 2), EARLY_ACCESS + "; " + KAFKA_4_4),
    80: ((0, 0), (0, 1), KAFKA_4_4 + " (AddRaftVoter v1)"),
    85: ((0, 0), (0, 1), KAFKA_4_4 + " (KIP-1226)"),
    87: ((0, 0), (0, 1), KAFKA_4_4 + " (KIP-1226)"),
    90: ((0, 0), (0, 1), KAFKA_4_4 + " (KIP-1226)"),
}

# APIs Kafka 4.1 advertises that the codec does not know at all
KAFKA_ONLY: dict[int, str] = {}

# APIs the codec knows that neither listener of Kafka 4.1 advertises
NOT_ADVERTISED: dict[int, str] = {
    4: "LeaderAndIsr: ZooKeeper-era controller request, removed in Kafka 4.0",
    5: "StopReplica: ZooKeeper-era controller request, removed in Kafka 4.0",
    6: "UpdateMetadata: ZooKeeper-era controller request, removed in Kafka 4.0",
    7: "ControlledShutdown: ZooKeeper-era, KRaft brokers use BrokerHeartbeat; removed in 4.0",
    71: "GetTelemetrySubscriptions: advertised only with a client-metrics reporter configured",
    72: "PushTelemetry: advertised only with a client-metrics reporter configured",
    88: "StreamsGroupHeartbeat: KIP-1071 early access, off unless the streams protocol is enabled",
    89: "StreamsGroupDescribe: KIP-1071 early access, off unless the streams protocol is enabled",
    93: "StreamsGroupTopologyDescriptionUpdate: new in Kafka 4.4 (KIP-1331)",
    94: "UnregisterController: new in Kafka 4.4",
    ApiKey.GET_REPLICA_LOG_INFO: "GetReplicaLogInfo: a kipwire extension (KIP-966), never shipped",
}


def codec_ranges() -> dict[int, tuple[int, int]]:
    """The request version range of every API the codec knows."""
    return {key: versions for _m, kind, key, versions in MESSAGES.values() if kind == "request"}


def advertised(port: int) -> dict[int, tuple[int, int]]:
    """ApiVersions v4 sent with kipwire.codec: api key -> (min, max)."""
    body = call(
        port,
        ApiKey.API_VERSIONS,
        4,
        {"client_software_name": "kipwire-tests", "client_software_version": "0"},
    )
    assert body.error_code == ErrorCode.NONE
    return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}


@pytest.fixture(scope="module")
def listeners(kafka_single: KafkaCluster) -> dict[str, dict[int, tuple[int, int]]]:
    """What the combined node advertises on its broker and on its controller listener."""
    node = kafka_single.nodes[0]
    return {
        "broker_listener": advertised(node.broker_port),
        "controller_listener": advertised(node.controller_port),
    }


def test_live_cluster_matches_the_recorded_file(listeners: dict) -> None:
    recorded = json.loads(RECORDED.read_text())
    for listener, ranges in listeners.items():
        assert {int(k): tuple(v) for k, v in recorded[listener].items()} == ranges, listener


@pytest.mark.parametrize("listener", ["broker_listener", "controller_listener"])
def test_every_advertised_range_matches_the_codec_or_is_explained(
    listeners: dict, listener: str
) -> None:
    ours = codec_ranges()
    unexplained = {}
    for key, theirs in listeners[listener].items():
        if key in KAFKA_ONLY:
            assert key not in ours, f"{key} is listed as a codec gap but the codec knows it"
            continue
        if key not in ours:
            unexplained[key] = (theirs, None)
        elif ours[key] != theirs and RANGE_DIFFERENCES.get(key, ())[:2] != (theirs, ours[key]):
            unexplained[key] = (theirs, ours[key])
    assert unexplained == {}, "differences with no entry in the tables above"


def test_no_stale_explanation(listeners: dict) -> None:
    seen: dict[int, tuple[int, int]] = {}
    for ranges in listeners.values():
        seen.update(ranges)
    ours = codec_ranges()
    for key, (theirs, codec, _why) in RANGE_DIFFERENCES.items():
        assert seen.get(key) == theirs and ours.get(key) == codec, APIS.get(key, key)
    assert set(KAFKA_ONLY) <= set(seen)
    assert not set(NOT_ADVERTISED) & set(seen)


def test_every_codec_api_is_advertised_or_explained(listeners: dict) -> None:
    seen = set(listeners["broker_listener"]) | set(listeners["controller_listener"])
    assert set(codec_ranges()) - seen == set(NOT_ADVERTISED)


def test_controller_listener_serves_the_kraft_apis(listeners: dict) -> None:
    # what a mock controller must answer and a mock broker must not advertise
    controller_only = set(listeners["controller_listener"]) - set(listeners["broker_listener"])
    names = {APIS[key][0] for key in controller_only}
    assert names == {
        "AllocateProducerIds",
        "AlterPartition",
        "AssignReplicasToDirs",
        "BeginQuorumEpoch",
        "BrokerHeartbeat",
        "BrokerRegistration",
        "ControllerRegistration",
        "EndQuorumEpoch",
        "Envelope",
        "FetchSnapshot",
        "UpdateRaftVoter",
        "Vote",
    }


def test_finalized_features_have_elr_on(kafka_single: KafkaCluster) -> None:
    body = call(
        kafka_single.nodes[0].broker_port,
        ApiKey.API_VERSIONS,
        4,
        {"client_software_name": "kipwire-tests", "client_software_version": "0"},
    )
    finalized = {
        f.name: (f.min_version_level, f.max_version_level) for f in body.finalized_features
    }
    assert finalized["eligible.leader.replicas.version"] == (1, 1)
    assert finalized["metadata.version"][0] >= 27  # 4.1-IV1, which StorageTool formatted
