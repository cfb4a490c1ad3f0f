"""ApiVersions under the default preset (Kafka 4.4.0): the ranges, the finalized features, and
KIP-1242's ClusterId/NodeId check of v5 requests (test_every_4_4_request sends every version)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka_wire import WireClient

from kipwire.codec import APIS, ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster, Semantics
from kipwire.mockbroker.controller.features import FEATURE_NEEDS, fresh_features
from kipwire.mockbroker.handlers.registry import listed
from kipwire.mockbroker.handlers.releases import CLIENT_TELEMETRY, KAFKA_4_4_BROKER_VERSIONS

CLIENT = {"client_software_name": "kipwire-tests", "client_software_version": "1"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    """A two-broker cluster under the default preset."""
    with MockCluster(brokers=2) as running:
        yield running


def _first(cluster: MockCluster) -> str:
    return cluster.bootstrap_servers.split(",")[0]


def _ranges(body: dict) -> dict[int, tuple[int, int]]:
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}


def test_the_default_preset_is_kafka_4_4(cluster: MockCluster) -> None:
    assert cluster.controller.semantics is Semantics.KAFKA_4_4
    with WireClient(_first(cluster)) as client:
        body = client.call(ApiKey.API_VERSIONS, 5, CLIENT)
    assert body["error_code"] == ErrorCode.NONE
    # exactly Kafka 4.4.0's range for every API the mock serves, and KIP-714's, which Kafka
    # lists once a client-telemetry receiver is configured (the mock always has one)
    ranges = _ranges(body)
    kafka = {**KAFKA_4_4_BROKER_VERSIONS, **CLIENT_TELEMETRY}
    assert ranges == {k: v for k, v in kafka.items() if k in ranges}
    assert ranges[ApiKey.GET_TELEMETRY_SUBSCRIPTIONS] == ranges[ApiKey.PUSH_TELEMETRY] == (0, 0)
    for key, newest in [
        (ApiKey.LIST_OFFSETS, 11),
        (ApiKey.OFFSET_COMMIT, 10),
        (ApiKey.OFFSET_FETCH, 10),
        (ApiKey.TXN_OFFSET_COMMIT, 6),
        (ApiKey.DELETE_GROUPS, 3),
        (ApiKey.END_TXN, 5),
        (ApiKey.API_VERSIONS, 5),
    ]:
        assert ranges[key][1] == newest, APIS[key].name


def test_kafka_4_1_presets_keep_their_ranges() -> None:
    ranges = {h.api_key: (h.advertised_min, h.max_version) for h in listed("4.1")}
    assert ranges[ApiKey.LIST_OFFSETS] == (1, 10) and ranges[ApiKey.OFFSET_COMMIT] == (2, 9)
    assert ranges[ApiKey.API_VERSIONS] == (0, 4)
    # the mock's EndTxn stayed at v4 under 4.1 (releases.HELD_BACK)
    assert ranges[ApiKey.END_TXN] == (0, 4)
    with (
        MockCluster(brokers=1, semantics=Semantics.KAFKA_4_1) as old,
        WireClient(old.bootstrap_servers) as client,
    ):
        assert _ranges(client.call(ApiKey.API_VERSIONS, 4, CLIENT)) == ranges


def test_the_4_4_table_is_within_the_codecs_versions() -> None:
    for key, (low, high) in KAFKA_4_4_BROKER_VERSIONS.items():
        api = APIS[key]
        assert api.versions[0] <= low <= high <= api.versions[1], api.name


# ---------------------------------------------------------------- features


def test_finalized_features_under_4_4(cluster: MockCluster) -> None:
    with WireClient(_first(cluster)) as client:
        body = client.call(ApiKey.API_VERSIONS, 5, CLIENT)
    finalized = {f["name"]: f["max_version_level"] for f in body["finalized_features"]}
    supported = {
        f["name"]: (f["min_version"], f["max_version"]) for f in body["supported_features"]
    }
    # metadata.version 4.4-IV2; ELR on, KIP-848 consumer groups (group.version 1), share groups
    # v2 and streams groups, as Kafka 4.4 finalizes them for a fresh cluster (the mock serves
    # the consumer, share and streams APIs)
    assert finalized == {
        "metadata.version": 33,
        "eligible.leader.replicas.version": 1,
        "group.version": 1,
        "share.version": 2,
        "streams.version": 1,
    }
    assert supported["share.version"] == (0, 2) and supported["streams.version"] == (0, 1)
    ranges = _ranges(body)
    for name in ("group.version", "share.version", "streams.version"):
        needs = FEATURE_NEEDS[name]
        assert needs is not None and needs <= set(ranges), name
    # Kafka 4.4 finalizes transactions v2 too; the mock leaves it unset (it needs the
    # coordinator's transactions v2, not an API), so no client negotiates it
    assert "transaction.version" not in finalized and FEATURE_NEEDS["transaction.version"] is None


def test_a_feature_is_finalized_once_its_apis_are_served() -> None:
    served = {h.api_key for h in listed("4.4")}
    assert fresh_features("4.4", served) == {
        "eligible.leader.replicas.version": 1,
        "group.version": 1,  # ConsumerGroupHeartbeat and ConsumerGroupDescribe are served
        "share.version": 2,
        "streams.version": 1,
    }
    share = FEATURE_NEEDS["share.version"]
    assert share is not None
    assert "share.version" not in fresh_features("4.4", served - share)
    # transactions v2 needs the coordinator, not an API: never finalized by the mock
    assert "transaction.version" not in fresh_features("4.4", set(KAFKA_4_4_BROKER_VERSIONS))


# ---------------------------------------------------------------- KIP-1242


def _identity_check(cluster: MockCluster, cluster_id: str | None, node_id: int) -> dict:
    with WireClient(_first(cluster)) as client:
        return client.call(
            ApiKey.API_VERSIONS, 5, {**CLIENT, "cluster_id": cluster_id, "node_id": node_id}
        )


@pytest.mark.parametrize(
    ("cluster_id", "node_id", "error"),
    [
        ("kipwire-mock", 1, ErrorCode.NONE),  # the cluster and node the client meant
        (None, -1, ErrorCode.NONE),  # neither given: nothing to check
        ("other", 1, ErrorCode.REBOOTSTRAP_REQUIRED),  # another cluster
        ("kipwire-mock", 2, ErrorCode.REBOOTSTRAP_REQUIRED),  # another node of this cluster
        ("kipwire-mock", -1, ErrorCode.INVALID_REQUEST),  # one without the other (isValid)
        (None, 1, ErrorCode.INVALID_REQUEST),
    ],
    ids=["match", "null", "other-cluster", "other-node", "cluster-alone", "node-alone"],
)
def test_api_versions_v5_checks_cluster_and_node(
    cluster: MockCluster, cluster_id: str | None, node_id: int, error: int
) -> None:
    body = _identity_check(cluster, cluster_id, node_id)
    assert body["error_code"] == error
    # a refused request gets the error alone, as Kafka's getErrorResponse answers
    assert bool(body["api_keys"]) == (error == ErrorCode.NONE)


def test_api_versions_v4_carries_no_identity_and_is_not_checked(cluster: MockCluster) -> None:
    with WireClient(_first(cluster)) as client:
        body = client.call(ApiKey.API_VERSIONS, 4, CLIENT)
    assert body["error_code"] == ErrorCode.NONE and body["api_keys"]
