"""ApiVersions of a kipwire mock broker against a real Kafka 4.1 broker listener: every range is
the same, or the difference is listed here with its reason; likewise the finalized features.

The mock advertises Kafka 4.1's ranges within the codec's stable ones
(`mockbroker.handlers.releases.KAFKA_4_1_BROKER_VERSIONS`) under `Semantics.KAFKA_4_1`, for the
APIs it serves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka_harness import KafkaCluster
from mistake_scenarios import api_versions_unsupported_reply
from realkafka_wire import call

from kipwire.codec import APIS, ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster, Semantics

_SASL = "the mock's listeners are PLAINTEXT only: no SASL"
_NO_AUTHORIZER = "the mock has no authorizer (Kafka without one answers SECURITY_DISABLED)"
_LOG_DIRS = "one in-memory log per partition: no log dirs to describe or move"
_QUORUM = "the mock controller is one node, not a Raft quorum"
_KIP_848 = "KIP-848 consumer groups: the mock's group coordinator speaks the classic protocol"
_KIP_932 = (
    "the share coordinator's state RPCs (KIP-932) go between brokers: the mock's share "
    "coordinator keeps share-partition state in-process"
)
_INTROSPECTION = "producer and transaction state introspection is not in the mock"
_QUOTAS = "the mock enforces no quotas"

#: API key -> why the mock does not serve what Kafka 4.1's broker listener advertises.
NOT_SERVED_BY_MOCK: dict[int, str] = {
    ApiKey.SASL_HANDSHAKE: _SASL,
    ApiKey.WRITE_TXN_MARKERS: "WriteTxnMarkers is inter-broker: the mock's transaction "
    "coordinator writes markers into the partition logs in-process",
    ApiKey.DESCRIBE_ACLS: _NO_AUTHORIZER,
    ApiKey.CREATE_ACLS: _NO_AUTHORIZER,
    ApiKey.DELETE_ACLS: _NO_AUTHORIZER,
    ApiKey.ALTER_REPLICA_LOG_DIRS: _LOG_DIRS,
    ApiKey.DESCRIBE_LOG_DIRS: _LOG_DIRS,
    ApiKey.SASL_AUTHENTICATE: _SASL,
    ApiKey.CREATE_DELEGATION_TOKEN: _SASL + " (delegation tokens authenticate over SASL)",
    ApiKey.RENEW_DELEGATION_TOKEN: _SASL + " (delegation tokens authenticate over SASL)",
    ApiKey.EXPIRE_DELEGATION_TOKEN: _SASL + " (delegation tokens authenticate over SASL)",
    ApiKey.DESCRIBE_DELEGATION_TOKEN: _SASL + " (delegation tokens authenticate over SASL)",
    ApiKey.OFFSET_DELETE: "OffsetDelete is not in the mock's group coordinator",
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _QUOTAS,
    ApiKey.ALTER_CLIENT_QUOTAS: _QUOTAS,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _SASL + " (SCRAM credentials)",
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _SASL + " (SCRAM credentials)",
    ApiKey.DESCRIBE_QUORUM: _QUORUM,
    ApiKey.DESCRIBE_PRODUCERS: _INTROSPECTION,
    ApiKey.DESCRIBE_TRANSACTIONS: _INTROSPECTION,
    ApiKey.LIST_TRANSACTIONS: _INTROSPECTION,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _KIP_848,
    ApiKey.CONSUMER_GROUP_DESCRIBE: _KIP_848,
    ApiKey.LIST_CONFIG_RESOURCES: "client-metrics and config resources listing "
    "(KIP-714/KIP-1142) is not in the mock",
    ApiKey.ADD_RAFT_VOTER: _QUORUM,
    ApiKey.REMOVE_RAFT_VOTER: _QUORUM,
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: _KIP_932,
    ApiKey.READ_SHARE_GROUP_STATE: _KIP_932,
    ApiKey.WRITE_SHARE_GROUP_STATE: _KIP_932,
    ApiKey.DELETE_SHARE_GROUP_STATE: _KIP_932,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: _KIP_932,
}

#: API key -> (Kafka 4.1's range, the mock's, why the mock's is narrower).
NARROWER_IN_MOCK: dict[int, tuple[tuple[int, int], tuple[int, int], str]] = {
    ApiKey.END_TXN: (
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
        ApiKey.API_VERSIONS,
        4,
        {"client_software_name": "kipwire-tests", "client_software_version": "0"},
    )


def _view(body: Any) -> dict[str, Any]:
    assert body.error_code == ErrorCode.NONE
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
    """A one-broker mock cluster presenting Kafka 4.1, the release this file compares with."""
    with MockCluster(brokers=1, semantics=Semantics.KAFKA_4_1) as cluster:
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
    ranges = [(ApiKey.API_VERSIONS, 0, 4)]
    assert mock == real == {"version": 0, "error": "UNSUPPORTED_VERSION", "ranges": ranges}


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
    for name_key in (
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.LIST_OFFSETS,
        ApiKey.METADATA,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.FIND_COORDINATOR,
        ApiKey.JOIN_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.LIST_GROUPS,
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    ):
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
