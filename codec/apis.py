"""The API versions a broker or controller advertises, from the generated index (`APIS`).

`extensions` lists what the project adds beyond shipped Kafka (an API only a KIP defines, or a
KIP's version of a shipped API), each with the reason it exists.
"""

from __future__ import annotations

from types import MappingProxyType

from .messages import APIS
from .messages._enums import ApiKey

LISTENERS = frozenset(x for api in APIS.values() for x in api.listeners)

# Why each extension exists; a test checks these keys are exactly what `APIS` marks.
_REASONS = {
    ApiKey.GET_REPLICA_LOG_INFO: (
        "KIP-966 unclean recovery: the controller asks each live replica for its last written "
        "leader epoch and log end. Merged to Kafka's trunk as apiKey 93 and reverted before any "
        "release (Kafka 4.4.0 gives 93 to StreamsGroupTopologyDescriptionUpdate), so the project "
        "keeps it under a key Kafka never used"
    ),
    ApiKey.ELECT_LEADERS: (
        "KIP-966 designated leaders: v3 adds DesiredLeaders to each topic; Kafka ships up to v2"
    ),
}


def _extension_entries() -> dict[int, tuple[tuple[int, int], str]]:
    """API key -> (the extension's versions, why), for every API `APIS` marks."""
    out = {}
    for key, api in APIS.items():
        if api.extension is not None:
            out[key] = (api.extension, _REASONS.get(key, "undocumented extension"))
    return out


# API key -> ((oldest, newest) extension version, reason); a whole extension API spans every
# version it has. Read-only: the codec's facts are not a place to register anything.
extensions = MappingProxyType(_extension_entries())


def is_extension(api_key: int, api_version: int) -> bool:
    """True when (api_key, api_version) exists only as a project extension, never in Kafka."""
    entry = extensions.get(api_key)
    return entry is not None and entry[0][0] <= api_version <= entry[0][1]


def api_versions(
    listener: str = "broker", include_unstable: bool = False, include_extensions: bool = False
) -> list[dict]:
    """The ApiVersions response's `api_keys` for a node serving `listener`, in key order.

    Like Kafka, versions a schema marks unstable are left out unless `include_unstable` (Kafka's
    `unstable.api.versions.enable`), and an API with no stable version is left out entirely.
    Versions the project adds beyond shipped Kafka (KIP-966's ElectLeaders v3, GetReplicaLogInfo)
    are advertised only with `include_extensions`, so that by default the answer matches Kafka's.
    Early-access versions Kafka withdrew (the share-group v0s) are never advertised.
    """
    if listener not in LISTENERS:
        raise ValueError(f"unknown listener {listener!r}; one of {', '.join(sorted(LISTENERS))}")
    out = []
    for key, api in APIS.items():
        if listener not in api.listeners:
            continue
        lo, hi = api.versions
        if api.withdrawn is not None:
            lo = api.withdrawn[1] + 1
        if api.extension is not None and not include_extensions:
            hi = api.extension[0] - 1
        if not include_unstable:
            while hi >= lo and hi in api.unstable:
                hi -= 1
        if hi >= lo:
            out.append({"api_key": key, "min_version": lo, "max_version": hi})
    return out
