"""The API versions a broker or controller advertises, from the generated index (`APIS`)."""

from __future__ import annotations

from .messages import APIS

LISTENERS = frozenset(x for api in APIS.values() for x in api.listeners)


def api_versions(
    listener: str = "broker", include_unstable: bool = False, include_extensions: bool = False
) -> list[dict]:
    """The ApiVersions response's `api_keys` for a node serving `listener`, in key order.

    Like Kafka, versions a schema marks unstable are left out unless `include_unstable` (Kafka's
    `unstable.api.versions.enable`), and an API with no stable version is left out entirely.
    Versions the project adds beyond shipped Kafka (KIP-966's ElectLeaders v3) are advertised
    only with `include_extensions`, so that by default the answer matches Kafka's.
    """
    if listener not in LISTENERS:
        raise ValueError(f"unknown listener {listener!r}; one of {', '.join(sorted(LISTENERS))}")
    out = []
    for key, api in APIS.items():
        if listener not in api.listeners:
            continue
        lo, hi = api.versions
        if api.extension is not None and not include_extensions:
            hi = api.extension[0] - 1
        if not include_unstable:
            while hi >= lo and hi in api.unstable:
                hi -= 1
        if hi >= lo:
            out.append({"api_key": key, "min_version": lo, "max_version": hi})
    return out
