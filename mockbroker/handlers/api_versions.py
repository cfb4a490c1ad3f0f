"""ApiVersions (18): the versions this broker serves, from the codec's schemas (KIP-511)."""

from __future__ import annotations

from kipwire.codec import encode_response

from ..controller.features import METADATA_VERSION, MV_LATEST
from .registry import HANDLERS, KAFKA_4_1_BROKER_VERSIONS, RequestContext, handles

API_VERSIONS, UNSUPPORTED_VERSION = 18, 35
#: What a Kafka 4.1 broker reports it supports, beside the finalized levels.
SUPPORTED_FEATURES = {
    "metadata.version": (7, 27),
    "kraft.version": (0, 1),
    "transaction.version": (0, 2),
    "group.version": (0, 1),
    "eligible.leader.replicas.version": (0, 1),
}


def api_ranges() -> list[dict]:
    """(key, min, max) of every API served, in key order, as Kafka 4.1 lists them."""
    return [
        {"api_key": h.api_key, "min_version": h.advertised_min, "max_version": h.max_version}
        for _, h in sorted(HANDLERS.items())
        # served for the controller (GetReplicaLogInfo), never listed: Kafka 4.1 does not ship it
        if h.api_key in KAFKA_4_1_BROKER_VERSIONS
    ]


def unsupported_version_reply(correlation_id: int) -> bytes:
    """The v0 answer to an ApiVersions version the broker lacks: the error and, as Kafka 4.1
    answers (ApiVersionsRequest#getErrorResponse), ApiVersions' own range alone."""
    own = next(r for r in api_ranges() if r["api_key"] == API_VERSIONS)
    body = {"error_code": UNSUPPORTED_VERSION, "api_keys": [own]}
    return encode_response(API_VERSIONS, 0, body, correlation_id=correlation_id)


@handles(API_VERSIONS)
async def api_versions(ctx: RequestContext, body: object) -> dict:
    """The API ranges, supported features and finalized feature levels."""
    image = ctx.broker.image
    # Kafka always finalizes metadata.version; the mock's controller works at MV_LATEST until a
    # level is replayed, so that is the level in force
    finalized = {METADATA_VERSION: MV_LATEST, **image.features}
    return {
        "error_code": 0,
        "api_keys": api_ranges(),
        "supported_features": [
            {"name": name, "min_version": low, "max_version": high}
            for name, (low, high) in SUPPORTED_FEATURES.items()
        ],
        "finalized_features_epoch": image.offset,
        "finalized_features": [
            {"name": name, "max_version_level": level, "min_version_level": level}
            for name, level in sorted(finalized.items())
        ],
    }
