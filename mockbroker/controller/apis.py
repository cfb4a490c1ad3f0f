"""Which APIs the controller serves, at which versions, and the dispatch with its error paths."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from construct import Container

from kipwire.codec import APIS, DecodeError, EncodeError, ErrorCode, message
from kipwire.codec.errors import UnsupportedVersionError

from . import (
    alter_partition,
    brokers,
    configs,
    elect_leaders,
    features,
    reassignments,
    topics,
    update_features,
)
from .features import METADATA_VERSION

if TYPE_CHECKING:
    from .controller import Controller


class Api(NamedTuple):
    """One served API: its versions and the function that answers it."""

    name: str
    min_version: int
    max_version: int
    handler: Callable[[Controller, int, Any], Any]


def _api_versions(ctl: Controller, version: int, body: Any) -> dict:
    """ApiVersions v0-v4: the APIs served here, and (v3+) the finalized features."""
    keys = [
        {"api_key": key, "min_version": api.min_version, "max_version": max_version(ctl, key)}
        for key, api in sorted(SERVED.items())
    ]
    epoch = max((e.offset for e in ctl.log if e.name == "FeatureLevelRecord"), default=-1)
    return {
        "error_code": ErrorCode.NONE,
        "api_keys": keys,
        "supported_features": [
            {"name": name, "min_version": lo, "max_version": hi}
            for name, (lo, hi) in sorted(features.SUPPORTED_FEATURES.items())
        ],
        "finalized_features_epoch": epoch,
        "finalized_features": [
            {"name": name, "max_version_level": level, "min_version_level": level}
            for name, level in sorted(
                {METADATA_VERSION: ctl.state.metadata_version, **ctl.state.features}.items()
            )
        ],
    }


SERVED: dict[int, Api] = {
    18: Api("ApiVersions", 0, 4, _api_versions),
    19: Api("CreateTopics", 0, 7, topics.handle_create_topics),
    20: Api("DeleteTopics", 0, 6, topics.handle_delete_topics),
    32: Api("DescribeConfigs", 0, 4, configs.handle_describe),
    33: Api("AlterConfigs", 0, 2, configs.handle_alter),
    37: Api("CreatePartitions", 0, 3, topics.handle_create_partitions),
    43: Api("ElectLeaders", 0, 3, elect_leaders.handle),
    44: Api("IncrementalAlterConfigs", 0, 1, configs.handle_incremental_alter),
    45: Api("AlterPartitionReassignments", 0, 1, reassignments.handle_alter),
    46: Api("ListPartitionReassignments", 0, 0, reassignments.handle_list),
    56: Api("AlterPartition", 0, 3, alter_partition.handle),
    57: Api("UpdateFeatures", 0, 2, update_features.handle_update),
    62: Api("BrokerRegistration", 0, 4, brokers.handle_registration),
    63: Api("BrokerHeartbeat", 0, 1, brokers.handle_heartbeat),
    64: Api("UnregisterBroker", 0, 0, brokers.handle_unregister),
}


def max_version(ctl: Controller, api_key: int) -> int:
    """The highest version served; ElectLeaders v3 (DesiredLeaders) only with designation on."""
    if api_key == 43 and not ctl.semantics.elect_leaders_designation:
        return 2
    return SERVED[api_key].max_version


def error_body(api_key: int, version: int, code: int) -> Any:
    """A response carrying `code` at the top level when the response has the field there."""
    api = APIS.get(api_key)
    if api is None:
        return {"error_code": code}
    try:
        codec = message(api.response, version)
        return codec.parse(codec.build({"error_code": code}))
    except (EncodeError, UnsupportedVersionError):
        return {"error_code": code}


@cache
def _request_fields(name: str, version: int) -> frozenset[str]:
    codec = message(f"{name}Request", version)
    return frozenset(codec.parse(codec.build({})).keys())


def _normalise(name: str, version: int, body: Mapping[str, Any] | None) -> Any:
    """The request as the codec decodes it: defaults filled, unknown fields refused. A body the
    codec decoded at this version (it has every field) is taken as it is."""
    if isinstance(body, Container) and body.keys() >= _request_fields(name, version):
        return body
    codec = message(f"{name}Request", version)
    return codec.parse(codec.build(dict(body or {})))


def dispatch(ctl: Controller, api_key: int, version: int, body: Mapping[str, Any] | None) -> Any:
    """Answer one request; bad versions and bodies get protocol errors."""
    api = SERVED.get(api_key)
    if api is None or not api.min_version <= version <= max_version(ctl, api_key):
        if api_key == 18:
            # Kafka answers an ApiVersions it cannot parse in v0, with its own range.
            return {
                "error_code": ErrorCode.UNSUPPORTED_VERSION,
                "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
            }
        return error_body(api_key, version, ErrorCode.UNSUPPORTED_VERSION)
    try:
        request = _normalise(api.name, version, body)
    except (EncodeError, DecodeError, TypeError, ValueError):
        return error_body(api_key, version, ErrorCode.INVALID_REQUEST)
    response = api.handler(ctl, version, request)
    codec = message(f"{api.name}Response", version)
    return codec.parse(codec.build(response))
