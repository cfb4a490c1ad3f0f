"""ApiVersions of a kipwire mock broker against a real Kafka 4.1 broker listener: every range is
the same, or the difference is listed here with its reason; likewise the finalized features.

The mock advertises Kafka 4.1's ranges within the codec's stable ones
(`mockbroker.handlers.registry.KAFKA_4_1_BROKER_VERSIONS`), for the APIs it serves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka_harness import KafkaCluster
from mistake_scenarios import api_versions_unsupported_reply
from realkafka_wire import call

from kipwire.codec import APIS
from kipwire.mockbroker import MockCluster

API_VERSIONS = 18

_SASL = "the mock's listeners are PLAINTEXT only: no SASL"
_NO_AUTHORIZER = "the mock has no authorizer (Kafka without one answers SECURITY_DISABLED)"
_LOG_DIRS = "one in-memory log per partition: no log dirs to describe or move"
_QUORUM = "the mock controller is one node, not a Raft quorum"
_KIP_848 = "KIP-848 consumer groups: the mock's group coordinator speaks the classic protocol"
_KIP_932 = "KIP-932 share groups are not in the mock (nor their v1 schemas in the codec)"
_INTROSPECTION = "producer and transaction state introspection is not in the mock"
_QUOTAS = "the mock enforces no quotas"

#: API key -> why the mock does not serve what Kafka 4.1's broker listener advertises.
NOT_SERVED_BY_MOCK: dict[int, str] = {
    17: _SASL,
    27: "WriteTxnMarkers is inter-broker: the mock's transaction coordinator writes markers "
    "into the partition logs in-process",
    29: _NO_AUTHORIZER,
    30: _NO_AUTHORIZER,
    31: _NO_AUTHORIZER,
    34: _LOG_DIRS,
    35: _LOG_DIRS,
    36: _SASL,
    38: _SASL + " (delegation tokens authenticate over SASL)",
    39: _SASL + " (delegation tokens authenticate over SASL)",
    40: _SASL + " (delegation tokens authenticate over SASL)",
    41: _SASL + " (delegation tokens authenticate over SASL)",
    47: "OffsetDelete is not in the mock's group coordinator",
    48: _QUOTAS,
    49: _QUOTAS,
    50: _SASL + " (SCRAM credentials)",
    51: _SASL + " (SCRAM credentials)",
    55: _QUORUM,
    61: _INTROSPECTION,
    65: _INTROSPECTION,
    66: _INTROSPECTION,
    68: _KIP_848,
    69: _KIP_848,
    74: "client-metrics and config resources listing (KIP-714/KIP-1142) is not in the mock",
    76: _KIP_932,
    77: _KIP_932,
    78: _KIP_932,
    79: _KIP_932,
    80: _QUORUM,
    81: _QUORUM,
    83: _KIP_932,
    84: _KIP_932,
    85: _KIP_932,
    86: _KIP_932,
    87: _KIP_932,
    90: _KIP_932,
    91: _KIP_932,
    92: _KIP_932,
}

#: API key -> (Kafka 4.1's range, the mock's, why the mock's is narrower).
NARROWER_IN_MOCK: dict[int, tuple[tuple[int, int], tuple[int, int], str]] = {
    26: (
        (0, 5),
        (0, 4),
        "EndTxn v5 is transactions v2 (KIP-890 part 2, epoch bump per transaction): the "
        "codec's stable EndTxn stops at v4 and the mock's coordinator does transactions v1",
    ),
}

#: feature -> (Kafka 4.1's finalized level, the mock's, why they differ); None: not finalized.
FEATURE_DIFFERENCES: dict[str, tuple[int | None, int | None, str]] = {
    "group.version": (
        1,
        None,
        "group.version 1 turns on KIP-848 consumer groups; the mock serves only the classic "
        "protocol, so it leaves the level unset and clients stay on JoinGroup/SyncGroup",
    ),
    "transaction.version": (
        2,
        None,
        "transaction.version 2 is transactions v2 (KIP-890 part 2, EndTxn v5); the mock's "
        "coordinator does transactions v1, so clients must not be told to use v2",
    ),
}


def _api_versions(port: int) -> Any:
    return call(
        port,
        API_VERSIONS,
        4,
        {"client_software_name": "kipwire-tests", "client_software_version": "0"},
    )


def _view(body: Any) -> dict[str, Any]:
    assert body.error_code == 0
    return {
        "ranges": {k.api_key: (k.min_version, k.max_version) for k in body.api_keys},
        "finalized": {f.name: f.max_version_level for f in body.finalized_features},
    }


@pytest.fixture(scope="module")
def real(kafka_single: KafkaCluster) -> dict[str, Any]:
    """Real Kafka 4.1's broker listener: ranges and finalized feature levels."""
    return _view(_api_versions(kafka_single.nodes[0].broker_port))


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[MockCluster]:
    """A one-broker mock cluster."""
    with MockCluster(brokers=1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def mock(mock_cluster: MockCluster) -> dict[str, Any]:
    """A mock broker's ranges and finalized feature levels."""
    return _view(_api_versions(int(mock_cluster.bootstrap_servers.rsplit(":", 1)[1])))


@pytest.mark.parametrize("version", [5, 127])
def test_unsupported_api_versions_reply_alike(
    bootstrap: str, mock_cluster: MockCluster, version: int
) -> None:
    real = api_versions_unsupported_reply(bootstrap, version)
    mock = api_versions_unsupported_reply(mock_cluster.bootstrap_servers, version)
    # KIP-511: a v0 reply with the error and ApiVersions' own range, for the client's retry
    assert mock == real == {"version": 0, "error": "UNSUPPORTED_VERSION", "ranges": [(18, 0, 4)]}


def test_every_kafka_range_is_the_mocks_or_explained(real: dict, mock: dict) -> None:
    unexplained = {}
    for key, theirs in real["ranges"].items():
        ours = mock["ranges"].get(key)
        if ours is None and key in NOT_SERVED_BY_MOCK:
            continue
        if ours != theirs and NARROWER_IN_MOCK.get(key, ())[:2] != (theirs, ours):
            unexplained[APIS.get(key, (str(key),))[0]] = (theirs, ours)
    assert unexplained == {}, "differences with no entry in the tables above"


def test_the_mock_advertises_nothing_kafka_does_not(real: dict, mock: dict) -> None:
    assert set(mock["ranges"]) - set(real["ranges"]) == set()


def test_no_stale_explanation(real: dict, mock: dict) -> None:
    for key in NOT_SERVED_BY_MOCK:
        assert key in real["ranges"] and key not in mock["ranges"], key
    for key, (theirs, ours, _why) in NARROWER_IN_MOCK.items():
        assert (real["ranges"][key], mock["ranges"][key]) == (theirs, ours), key


def test_the_mock_serves_most_of_what_kafka_advertises(real: dict, mock: dict) -> None:
    # the data plane, groups, transactions and admin: everything a client needs to produce,
    # consume and administer topics, at Kafka's own ranges
    for name_key in (0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 19, 20, 22, 24, 25, 32, 37, 75):
        assert mock["ranges"][name_key] == real["ranges"][name_key], APIS[name_key][0]


def test_finalized_features_alike_or_explained(real: dict, mock: dict) -> None:
    names = set(real["finalized"]) | set(mock["finalized"])
    differing = {
        name: (real["finalized"].get(name), mock["finalized"].get(name))
        for name in names
        if real["finalized"].get(name) != mock["finalized"].get(name)
    }
    assert differing == {k: v[:2] for k, v in FEATURE_DIFFERENCES.items()}
    assert real["finalized"]["eligible.leader.replicas.version"] == 1
