"""ApiVersions (18): the versions this broker serves, as its Kafka release lists them (KIP-511),
and from v5 the check that the client reached the cluster and node it meant to (KIP-1242)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kipwire.codec import ApiKey, ErrorCode, encode_response

from ..broker.client_metrics import CLIENT_SOFTWARE
from ..controller.features import BROKER_FEATURES, LATEST_METADATA_VERSION, METADATA_VERSION
from .registry import Handler, RequestContext, handles, listed

#: The first version whose request names the cluster and node it is meant for (KIP-1242).
IDENTITY_VERSION = 5
#: The first version whose request names the client software (KIP-511).
CLIENT_SOFTWARE_VERSION = 3


def api_ranges(release: str, handlers: Mapping[int, Handler] | None = None) -> list[dict]:
    """(key, min, max) of every API served (by `handlers`, else by a broker of the release), in
    key order, as Kafka `release` lists them."""
    return [
        {"api_key": h.api_key, "min_version": h.advertised_min, "max_version": h.max_version}
        for h in listed(release, handlers)
    ]


def unsupported_version_reply(release: str, correlation_id: int) -> bytes:
    """The v0 answer to an ApiVersions version the broker lacks: the error and, as Kafka
    answers (ApiVersionsRequest#getErrorResponse), ApiVersions' own range alone."""
    own = next(r for r in api_ranges(release) if r["api_key"] == ApiKey.API_VERSIONS)
    body = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": [own]}
    return encode_response(ApiKey.API_VERSIONS, 0, body, correlation_id=correlation_id)


def identity_error(version: int, body: Any, cluster_id: str, node_id: int) -> int:
    """KIP-1242 as Kafka 4.4 checks a v5+ request: ClusterId and NodeId come together or not at
    all (one without the other is INVALID_REQUEST, ApiVersionsRequest#isValid); when given, a
    cluster or node other than this one is REBOOTSTRAP_REQUIRED; absent, nothing is checked."""
    if version < IDENTITY_VERSION:
        return ErrorCode.NONE
    cluster, node = body["cluster_id"], body["node_id"]
    if (cluster is None) != (node == -1):
        return ErrorCode.INVALID_REQUEST
    if cluster is not None and (cluster != cluster_id or node != node_id):
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return ErrorCode.NONE


@handles(ApiKey.API_VERSIONS, unsupported=unsupported_version_reply)
async def api_versions(ctx: RequestContext, body: Any) -> dict:
    """The API ranges, supported features and finalized feature levels."""
    broker = ctx.broker
    if ctx.api_version >= CLIENT_SOFTWARE_VERSION:
        # the connection's client, as KIP-714's client-metrics `match` selects it
        CLIENT_SOFTWARE.set((body["client_software_name"], body["client_software_version"]))
    error = identity_error(ctx.api_version, body, broker.cluster_id, broker.node_id)
    if error != ErrorCode.NONE:
        # Kafka answers a refused ApiVersions with the error alone (getErrorResponse)
        return {"error_code": error}
    image = broker.image
    # Kafka always finalizes metadata.version; until the metadata log sets a level, the mock's
    # controller works at the release's latest, so that is the level in force
    finalized = {METADATA_VERSION: LATEST_METADATA_VERSION[broker.release], **image.features}
    return {
        "error_code": ErrorCode.NONE,
        "api_keys": api_ranges(broker.release, broker.handlers),
        "supported_features": [
            {"name": name, "min_version": low, "max_version": high}
            for name, (low, high) in BROKER_FEATURES[broker.release].items()
        ],
        "finalized_features_epoch": image.offset,
        "finalized_features": [
            {"name": name, "max_version_level": level, "min_version_level": level}
            for name, level in sorted(finalized.items())
        ],
    }
