"""GetTelemetrySubscriptions (71) and PushTelemetry (72): client telemetry (KIP-714).

Behavior: answered by the broker's client-metrics manager (`broker/client_metrics.py`) from the
client-metrics subscriptions in its metadata image; pushed OTLP metrics are decoded and shown
in `cluster.metrics()["client_telemetry"]`. Kafka's broker lists these APIs only with a
client-telemetry receiver plugin configured; the mock always has one.

Version notes: v0 only.
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey

from .registry import RequestContext, handles


@handles(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
async def get_telemetry_subscriptions(ctx: RequestContext, body: Any) -> dict:
    """The client's instance id and subscription."""
    return ctx.broker.client_metrics.get_subscriptions(body, ctx.client_id)


@handles(ApiKey.PUSH_TELEMETRY)
async def push_telemetry(ctx: RequestContext, body: Any) -> dict:
    """The client's metrics, checked and kept."""
    return ctx.broker.client_metrics.push(body, ctx.client_id)
