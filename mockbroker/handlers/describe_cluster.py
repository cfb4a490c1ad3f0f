"""DescribeCluster (60): cluster id, a controller id for clients, the brokers."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .registry import RequestContext, handles


@handles(ApiKey.DESCRIBE_CLUSTER)
async def describe_cluster(ctx: RequestContext, body: Any) -> dict:
    """The live brokers (fenced ones too when asked, v2+)."""
    image = ctx.broker.image
    with_fenced = body.get("include_fenced_brokers", False)
    brokers = [
        {
            "broker_id": b.node_id,
            "host": b.host,
            "port": b.port,
            "rack": b.rack,
            "is_fenced": b.fenced,
        }
        for _, b in sorted(image.brokers.items())
        if with_fenced or not b.fenced
    ]
    live = image.live_brokers()
    return {
        "error_code": ErrorCode.NONE,
        "cluster_id": ctx.broker.cluster_id,
        "controller_id": live[0].node_id if live else -1,
        "brokers": brokers,
    }
