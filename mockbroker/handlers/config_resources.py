"""ListConfigResources (74, KIP-1142; ListClientMetricsResources before 4.1): the config
resources of the cluster, from the broker's metadata image.

Behavior: v0 lists client-metrics subscriptions only; v1 lists the types asked for (none: every
type): topics, brokers and their loggers, client-metrics subscriptions and groups with
configs. A type Kafka does not list is UNSUPPORTED_VERSION, as Kafka 4.4.0 answers. Kafka lists
from hash maps; here each type is in name order.
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ConfigResourceType, ErrorCode

from .registry import RequestContext, handles

_LISTED = (
    ConfigResourceType.TOPIC,
    ConfigResourceType.BROKER,
    ConfigResourceType.BROKER_LOGGER,
    ConfigResourceType.CLIENT_METRICS,
    ConfigResourceType.GROUP,
)


def _names(ctx: RequestContext, rtype: int) -> list[str]:
    image = ctx.broker.image
    if rtype == ConfigResourceType.TOPIC:
        return sorted(image.topics)
    if rtype in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
        return [str(b) for b in sorted(image.brokers)]
    return sorted(name for (t, name), values in image.configs.items() if t == rtype and values)


@handles(ApiKey.LIST_CONFIG_RESOURCES)
async def list_config_resources(ctx: RequestContext, body: Any) -> dict:
    """The names of the config resources of the types asked for."""
    if ctx.api_version == 0:
        types = [ConfigResourceType.CLIENT_METRICS]
    else:
        types = list(body["resource_types"]) or list(_LISTED)
        if any(t not in _LISTED for t in types):
            return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "config_resources": []}
    resources = [
        {"resource_name": name, "resource_type": rtype}
        for rtype in sorted(set(types), key=_LISTED.index)
        for name in _names(ctx, rtype)
    ]
    return {"error_code": ErrorCode.NONE, "config_resources": resources}
