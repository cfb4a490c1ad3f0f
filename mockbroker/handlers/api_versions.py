"""ApiVersions (18): the versions this broker serves, from the codec's schemas (KIP-511)."""

from __future__ import annotations

from kipwire.codec import ApiKey, ErrorCode, encode_response

from .registry import HANDLERS, KAFKA_4_1_BROKER_VERSIONS, RequestContext, handles

METADATA_VERSION = "metadata.version"
#: What a Kafka 4.1 broker reports it supports, beside the finalized levels.
SUPPORTED_FEATURES = {
    METADATA_VERSION: (7, 27),
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
    own = next(r for r in api_ranges() if r["api_key"] == ApiKey.API_VERSIONS)
    body = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": [own]}
    return encode_response(ApiKey.API_VERSIONS, 0, body, correlation_id=correlation_id)


@handles(ApiKey.API_VERSIONS, unsupported=unsupported_version_reply)
async def api_versions(ctx: RequestContext, body: object) -> dict:
    """The API ranges, supported features and finalized feature levels."""
    image = ctx.broker.image
    # Kafka always finalizes metadata.version; until the metadata log sets a level, the mock's
    # controller works at the latest this broker supports, so that is the level in force
    finalized = {METADATA_VERSION: SUPPORTED_FEATURES[METADATA_VERSION][1], **image.features}
    return {
        "error_code": ErrorCode.NONE,
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
