"""Which APIs the controller serves, at which versions, the rule that answers each, and the
error paths. Requests arrive decoded (a codec Container, as `kipwire.codec.decode_request`
gives it); the node encodes the response body once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from types import MappingProxyType
from typing import Any, NamedTuple

from construct import Container

from kipwire.codec import ApiKey, DecodeError, EncodeError, ErrorCode, message

from . import (
    alter_partition,
    brokers,
    client_quotas,
    config_apis,
    dir_assignment,
    elect_leaders,
    features,
    quorum,
    reassignments,
    security_apis,
    topics,
    update_features,
)
from .features import METADATA_VERSION
from .result import ControllerResult, ControllerView
from .semantics import Semantics

Rule = Callable[[ControllerView, int, Any], ControllerResult]
#: The first ApiVersions version whose request names a cluster and node (KIP-1242).
IDENTITY_VERSION = 5


class Api(NamedTuple):
    """One served API: its versions and the rule that answers it."""

    name: str
    min_version: int
    max_version: int
    rule: Rule


def api_versions(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """ApiVersions v0-v5: the APIs served here, and (v3+) the finalized features. Kafka 4.4's
    controller checks a v5 request's identity only for completeness (ApiVersionsRequest#isValid:
    ClusterId and NodeId together or neither); comparing them is the brokers' (KIP-1242)."""
    if version >= IDENTITY_VERSION and (body["cluster_id"] is None) != (body["node_id"] == -1):
        return ControllerResult(response=error_body(ErrorCode.INVALID_REQUEST))
    state = view.state
    ranges = {
        **NODE_ANSWERED,
        **{
            key: (api.min_version, max_version(view.settings.semantics, key))
            for key, api in served(view.settings.semantics).items()
        },
    }
    keys = [
        {"api_key": key, "min_version": low, "max_version": high}
        for key, (low, high) in sorted(ranges.items())
    ]
    finalized = {METADATA_VERSION: state.metadata_version, **state.features}
    return ControllerResult(
        response={
            "error_code": ErrorCode.NONE,
            "api_keys": keys,
            "supported_features": [
                {"name": name, "min_version": lo, "max_version": hi}
                for name, (lo, hi) in sorted(
                    # a KRaft controller supports its release's features as its brokers do
                    # (what `kafka-features --bootstrap-controller describe` lists)
                    features.BROKER_FEATURES[view.settings.semantics.release].items()
                )
            ],
            "finalized_features_epoch": state.features_epoch,
            "finalized_features": [
                {"name": name, "max_version_level": level, "min_version_level": level}
                for name, level in sorted(finalized.items())
            ],
        }
    )


def add_raft_voter(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """AddRaftVoter: refused as Kafka's static quorum refuses it (`quorum.add_raft_voter`)."""
    return ControllerResult(response=quorum.add_raft_voter(view.settings.cluster_id, body))


def remove_raft_voter(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """RemoveRaftVoter: refused as Kafka's static quorum refuses it."""
    return ControllerResult(response=quorum.remove_raft_voter(view.settings.cluster_id, body))


def unregister_controller(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """UnregisterController: the one controller is active, no other is registered."""
    return ControllerResult(response=quorum.unregister_controller(body))


SERVED: dict[int, Api] = {
    ApiKey.API_VERSIONS: Api("ApiVersions", 0, 5, api_versions),
    ApiKey.CREATE_TOPICS: Api("CreateTopics", 0, 7, topics.create_topics),
    ApiKey.DELETE_TOPICS: Api("DeleteTopics", 0, 6, topics.delete_topics),
    ApiKey.DESCRIBE_CONFIGS: Api("DescribeConfigs", 0, 4, config_apis.describe_configs),
    ApiKey.ALTER_CONFIGS: Api("AlterConfigs", 0, 2, config_apis.alter_configs),
    ApiKey.CREATE_PARTITIONS: Api("CreatePartitions", 0, 3, topics.create_partitions),
    ApiKey.ELECT_LEADERS: Api("ElectLeaders", 0, 3, elect_leaders.elect_leaders),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Api(
        "IncrementalAlterConfigs", 0, 1, config_apis.incremental_alter_configs
    ),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Api(
        "AlterPartitionReassignments", 0, 1, reassignments.alter_partition_reassignments
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Api(
        "ListPartitionReassignments", 0, 0, reassignments.list_partition_reassignments
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: Api("AlterClientQuotas", 0, 1, client_quotas.alter_client_quotas),
    ApiKey.ALTER_PARTITION: Api("AlterPartition", 0, 3, alter_partition.alter_partition),
    ApiKey.UPDATE_FEATURES: Api("UpdateFeatures", 0, 2, update_features.update_features),
    ApiKey.BROKER_REGISTRATION: Api("BrokerRegistration", 0, 4, brokers.register_broker),
    ApiKey.BROKER_HEARTBEAT: Api("BrokerHeartbeat", 0, 2, brokers.broker_heartbeat),
    ApiKey.UNREGISTER_BROKER: Api("UnregisterBroker", 0, 0, brokers.unregister_broker),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: Api(
        "AssignReplicasToDirs", 0, 0, dir_assignment.assign_replicas_to_dirs
    ),
    ApiKey.CREATE_ACLS: Api("CreateAcls", 1, 3, security_apis.create_acls),
    ApiKey.DELETE_ACLS: Api("DeleteAcls", 1, 3, security_apis.delete_acls),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Api(
        "AlterUserScramCredentials", 0, 0, security_apis.alter_user_scram_credentials
    ),
    ApiKey.CREATE_DELEGATION_TOKEN: Api(
        "CreateDelegationToken", 1, 3, security_apis.create_delegation_token
    ),
    ApiKey.RENEW_DELEGATION_TOKEN: Api(
        "RenewDelegationToken", 1, 2, security_apis.renew_delegation_token
    ),
    ApiKey.EXPIRE_DELEGATION_TOKEN: Api(
        "ExpireDelegationToken", 1, 2, security_apis.expire_delegation_token
    ),
    ApiKey.ADD_RAFT_VOTER: Api("AddRaftVoter", 0, 1, add_raft_voter),
    ApiKey.REMOVE_RAFT_VOTER: Api("RemoveRaftVoter", 0, 0, remove_raft_voter),
    ApiKey.UNREGISTER_CONTROLLER: Api("UnregisterController", 0, 0, unregister_controller),
}


#: APIs the controller node answers itself rather than a rule here, as they need its listener or
#: the quorum's fetch state (`controller_node`), and the versions its ApiVersions lists for them,
#: Kafka 4.1's and 4.4's alike: what `--bootstrap-controller` tools need (KIP-919).
NODE_ANSWERED: dict[int, tuple[int, int]] = {
    ApiKey.DESCRIBE_QUORUM: (0, 2),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.UPDATE_RAFT_VOTER: (0, 0),
}


#: release -> the versions added since that release's controller listener, held back under it.
RELEASE_MAX_VERSIONS: Mapping[str, Mapping[int, int]] = {
    "4.1": {ApiKey.API_VERSIONS: 4, ApiKey.BROKER_HEARTBEAT: 1, ApiKey.ADD_RAFT_VOTER: 0},
    "4.4": {},
}

#: release -> the APIs added since that release's controller listener, not served under it.
RELEASE_UNSERVED: Mapping[str, frozenset[int]] = {
    "4.1": frozenset({ApiKey.UNREGISTER_CONTROLLER}),
    "4.4": frozenset(),
}


def served(semantics: Semantics) -> Mapping[int, Api]:
    """The APIs served under a preset's release."""
    return _served_in(semantics.release)


@cache
def _served_in(release: str) -> Mapping[int, Api]:
    unserved = RELEASE_UNSERVED[release]
    return MappingProxyType({key: api for key, api in SERVED.items() if key not in unserved})


def max_version(semantics: Semantics, api_key: int) -> int:
    """The highest version served under a preset's release; ElectLeaders v3 (DesiredLeaders)
    only with designation on."""
    if api_key == ApiKey.ELECT_LEADERS and not semantics.elect_leaders_designation:
        return 2
    return RELEASE_MAX_VERSIONS[semantics.release].get(api_key, SERVED[api_key].max_version)


def error_body(code: int) -> dict:
    """A response carrying `code` at the top level; the node encodes it at the request's
    version (a response without a top-level error code cannot carry it, and fails to encode)."""
    return {"error_code": code}


@cache
def _fields(name: str, version: int) -> frozenset[str]:
    # The top-level fields of a message version, found once per (name, version).
    codec = message(name, version)
    return frozenset(codec.parse(codec.build({})).keys())


def decode_at_node_boundary(name: str, version: int, body: Mapping[str, Any] | None) -> Any:
    """A message (`AlterPartitionRequest`, `GetReplicaLogInfoResponse`, ...) as the node
    decodes it from the wire: a Container decoded at this version passes as it is; anything
    else (a plain dict from a caller that skips the wire) is encoded and decoded here, the one
    place that does it, so defaults are filled and unknown fields refused."""
    if isinstance(body, Container) and body.keys() >= _fields(name, version):
        return body
    codec = message(name, version)
    return codec.parse(codec.build(dict(body or {})))


def handle(view: ControllerView, api_key: int, version: int, body: Any) -> ControllerResult:
    """Answer one request with its rule; bad versions and bodies get protocol errors."""
    api = served(view.settings.semantics).get(api_key)
    if api is None or not api.min_version <= version <= max_version(
        view.settings.semantics, api_key
    ):
        if api_key == ApiKey.API_VERSIONS:
            # Kafka answers an ApiVersions it cannot parse in v0, with its own range.
            api = SERVED[ApiKey.API_VERSIONS]
            return ControllerResult(
                response={
                    "error_code": ErrorCode.UNSUPPORTED_VERSION,
                    "api_keys": [
                        {
                            "api_key": ApiKey.API_VERSIONS,
                            "min_version": api.min_version,
                            "max_version": max_version(
                                view.settings.semantics, ApiKey.API_VERSIONS
                            ),
                        }
                    ],
                }
            )
        return ControllerResult(response=error_body(ErrorCode.UNSUPPORTED_VERSION))
    try:
        request = decode_at_node_boundary(f"{api.name}Request", version, body)
    except (EncodeError, DecodeError, TypeError, ValueError):
        return ControllerResult(response=error_body(ErrorCode.INVALID_REQUEST))
    return api.rule(view, version, request)
