"""DescribeQuorum (55): forwarded to the controller, which leads the metadata quorum
(`controller/quorum.py`), as Kafka's brokers forward it."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey

from .registry import RequestContext, handles


@handles(ApiKey.DESCRIBE_QUORUM)
async def describe_quorum(ctx: RequestContext, body: Any) -> dict:
    """The controller's answer: leader, epoch, high watermark, voters and observers."""
    return await ctx.broker.forward(ApiKey.DESCRIBE_QUORUM, ctx.api_version, body)
