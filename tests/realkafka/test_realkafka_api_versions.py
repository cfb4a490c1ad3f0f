"""ApiVersions of real Kafka 4.4.0, the codec's reference release, and of Kafka 4.1.2, which the
mock's KAFKA_4_1 preset follows (sent and decoded with kipwire.codec), against the codec's own
version ranges: every difference is listed here with the reason for it.

The observed ranges are kept in data/api_versions_kafka_4_4.json and api_versions_kafka_4_1.json
so the mock broker's tests can compare against them without a JVM; the live clusters must still
answer exactly those files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka_harness import KafkaCluster
from realkafka_wire import call

from kipwire.codec import APIS, MESSAGES, ApiKey, ErrorCode

DATA = Path(__file__).parent / "data"

KIP_896 = "Kafka 4.0 removed these old versions (KIP-896); the codec keeps them to read old traffic"
KAFKA_4_2 = (
    "the codec's schema is the newer one kafka-python 3.0.12 vendors; Kafka 4.1 does not "
    "advertise that version (it ships in 4.2)"
)
KAFKA_4_4 = "the codec knows every version through Kafka 4.4.0; Kafka 4.1 stops one lower"
EARLY_ACCESS = "KIP-932's early-access v0 (Kafka 4.0), withdrawn in 4.1: decoded, never advertised"
KIP_939 = "InitProducerId v6 (KIP-939, two-phase commit) is latestVersionUnstable in Kafka {}"
EXTENSION = "ElectLeaders v3 is kipwire's marked extension (KIP-966 DesiredLeaders)"
STREAMS_EARLY_ACCESS = "KIP-1071 early access in 4.1, off unless the streams protocol is enabled"
ZOOKEEPER_ERA: dict[int, str] = {
    4: "LeaderAndIsr: ZooKeeper-era controller request, removed in Kafka 4.0",
    5: "StopReplica: ZooKeeper-era controller request, removed in Kafka 4.0",
    6: "UpdateMetadata: ZooKeeper-era controller request, removed in Kafka 4.0",
    7: "ControlledShutdown: ZooKeeper-era, KRaft brokers use BrokerHeartbeat; removed in 4.0",
    71: "GetTelemetrySubscriptions: advertised only with a client-metrics reporter configured",
    72: "PushTelemetry: advertised only with a client-metrics reporter configured",
    ApiKey.GET_REPLICA_LOG_INFO: "GetReplicaLogInfo: a kipwire extension (KIP-966), never shipped",
}


@dataclass(frozen=True)
class Release:
    """What one Kafka release advertises against the codec, and why it differs."""

    recorded: Path
    # api key -> (Kafka's range, the codec's range, why they differ)
    range_differences: dict[int, tuple[tuple[int, int], tuple[int, int], str]]
    # APIs the codec knows that neither listener of the release advertises
    not_advertised: dict[int, str]


#: Kafka 4.4.0: the codec's reference, so only the versions Kafka removed or never shipped
KAFKA_4_4_0 = Release(
    DATA / "api_versions_kafka_4_4.json",
    {
        1: ((4, 18), (0, 18), KIP_896),
        2: ((1, 11), (0, 11), KIP_896),
        8: ((2, 10), (0, 10), KIP_896),
        9: ((1, 10), (0, 10), KIP_896),
        19: ((2, 7), (0, 7), KIP_896),
        20: ((1, 6), (0, 6), KIP_896),
        22: ((0, 5), (0, 6), KIP_939.format("4.4.0")),
        23: ((2, 4), (0, 4), KIP_896),
        27: ((1, 2), (0, 2), KIP_896),
        29: ((1, 3), (0, 3), KIP_896),
        30: ((1, 3), (0, 3), KIP_896),
        31: ((1, 3), (0, 3), KIP_896),
        32: ((1, 4), (0, 4), KIP_896),
        34: ((1, 2), (0, 2), KIP_896),
        35: ((1, 5), (0, 5), KIP_896),
        38: ((1, 3), (0, 3), KIP_896),
        39: ((1, 2), (0, 2), KIP_896),
        40: ((1, 2), (0, 2), KIP_896),
        41: ((1, 3), (0, 3), KIP_896),
        43: ((0, 2), (0, 3), EXTENSION),
        56: ((2, 3), (0, 3), KIP_896),
        76: ((1, 1), (0, 1), EARLY_ACCESS),
        77: ((1, 1), (0, 1), EARLY_ACCESS),
        78: ((1, 2), (0, 2), EARLY_ACCESS),
        79: ((1, 2), (0, 2), EARLY_ACCESS),
    },
    ZOOKEEPER_ERA,
)

#: Kafka 4.1.2, the KAFKA_4_1 preset's release: also every version added since
KAFKA_4_1_2 = Release(
    DATA / "api_versions_kafka_4_1.json",
    {
        **{k: v for k, v in KAFKA_4_4_0.range_differences.items() if v[2] == KIP_896},
        2: ((1, 10), (0, 11), KIP_896 + "; " + KAFKA_4_2),
        8: ((2, 9), (0, 10), KIP_896 + "; " + KAFKA_4_2),
        9: ((1, 9), (0, 10), KIP_896 + "; " + KAFKA_4_2),
        18: ((0, 4), (0, 5), KAFKA_4_4 + " (ApiVersions v5, KIP-1242)"),
        22: ((0, 5), (0, 6), KIP_939.format("4.1.2")),
        27: ((1, 1), (0, 2), KIP_896 + "; " + KAFKA_4_2),
        28: ((0, 5), (0, 6), KAFKA_4_4 + " (TxnOffsetCommit v6, topic ids)"),
        35: ((1, 4), (0, 5), KIP_896 + "; " + KAFKA_4_2),
        42: ((0, 2), (0, 3), KAFKA_4_4),
        43: ((0, 2), (0, 3), EXTENSION),
        63: ((0, 1), (0, 2), KAFKA_4_4 + " (BrokerHeartbeat v2, CordonedLogDirs)"),
        76: ((1, 1), (0, 1), EARLY_ACCESS),
        77: ((1, 1), (0, 1), EARLY_ACCESS),
        78: ((1, 1), (0, 2), EARLY_ACCESS + "; " + KAFKA_4_4),
        79: ((1, 1), (0, 2), EARLY_ACCESS + "; " + KAFKA_4_4),
        80: ((0, 0), (0, 1), KAFKA_4_4 + " (AddRaftVoter v1)"),
        85: ((0, 0), (0, 1), KAFKA_4_4 + " (KIP-1226)"),
        87: ((0, 0), (0, 1), KAFKA_4_4 + " (KIP-1226)"),
        90: ((0, 0), (0, 1), KAFKA_4_4 + " (KIP-1226)"),
    },
    {
        **ZOOKEEPER_ERA,
        88: "StreamsGroupHeartbeat: " + STREAMS_EARLY_ACCESS,
        89: "StreamsGroupDescribe: " + STREAMS_EARLY_ACCESS,
        93: "StreamsGroupTopologyDescriptionUpdate: new in Kafka 4.4 (KIP-1331)",
        94: "UnregisterController: new in Kafka 4.4",
    },
)

RELEASES = {"4.4.0": KAFKA_4_4_0, "4.1.2": KAFKA_4_1_2}
CLUSTERS = {"4.4.0": "kafka_single", "4.1.2": "kafka_single_4_1"}


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


@pytest.fixture(scope="module", params=sorted(RELEASES))
def release(request: pytest.FixtureRequest) -> tuple[Release, dict[str, dict]]:
    """A release's table, and what its combined node advertises on the broker and on the
    controller listener."""
    cluster: KafkaCluster = request.getfixturevalue(CLUSTERS[request.param])
    assert cluster.dist.version == request.param
    node = cluster.nodes[0]
    listeners = {
        "broker_listener": advertised(node.broker_port),
        "controller_listener": advertised(node.controller_port),
    }
    return RELEASES[request.param], listeners


def test_live_cluster_matches_the_recorded_file(release: tuple[Release, dict]) -> None:
    table, listeners = release
    recorded = json.loads(table.recorded.read_text())
    for listener, ranges in listeners.items():
        assert {int(k): tuple(v) for k, v in recorded[listener].items()} == ranges, listener


@pytest.mark.parametrize("listener", ["broker_listener", "controller_listener"])
def test_every_advertised_range_matches_the_codec_or_is_explained(
    release: tuple[Release, dict], listener: str
) -> None:
    table, listeners = release
    ours = codec_ranges()
    unexplained = {}
    for key, theirs in listeners[listener].items():
        if key not in ours:
            unexplained[key] = (theirs, None)
        elif ours[key] != theirs and table.range_differences.get(key, ())[:2] != (
            theirs,
            ours[key],
        ):
            unexplained[key] = (theirs, ours[key])
    assert unexplained == {}, "differences with no entry in the tables above"


def test_no_stale_explanation(release: tuple[Release, dict]) -> None:
    table, listeners = release
    seen: dict[int, tuple[int, int]] = {}
    for ranges in listeners.values():
        seen.update(ranges)
    ours = codec_ranges()
    for key, (theirs, codec, _why) in table.range_differences.items():
        assert seen.get(key) == theirs and ours.get(key) == codec, APIS.get(key, key)
    assert not set(table.not_advertised) & set(seen)


def test_every_codec_api_is_advertised_or_explained(release: tuple[Release, dict]) -> None:
    table, listeners = release
    seen = set(listeners["broker_listener"]) | set(listeners["controller_listener"])
    assert set(codec_ranges()) - seen == set(table.not_advertised)


def test_controller_listener_serves_the_kraft_apis(release: tuple[Release, dict]) -> None:
    # what a mock controller must answer and a mock broker must not advertise
    _table, listeners = release
    controller_only = set(listeners["controller_listener"]) - set(listeners["broker_listener"])
    names = {APIS[key][0] for key in controller_only}
    # Kafka 4.4's UnregisterController is not among them: brokers advertise it and forward it
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
    # Kafka 4.4.0 formats at its latest production level, 4.4-IV2, with share groups and the
    # streams rebalance protocol on (both production features since 4.2)
    assert finalized["metadata.version"] == (33, 33)
    assert finalized["share.version"] == (2, 2) and finalized["streams.version"] == (1, 1)
