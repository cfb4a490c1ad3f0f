"""OffsetForLeaderEpoch (23): the end offset of the largest leader epoch <= the one asked."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.log import LogError
from .registry import RequestContext, handles, per_partition_error

_fail = per_partition_error("topics", "partitions", "topic", "partition", "topics", "partitions")


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, fail=_fail)
async def offset_for_leader_epoch(ctx: RequestContext, body: Any) -> dict:
    """Answer each partition from its leader-epoch history."""
    broker = ctx.broker
    topics = []
    for topic in body["topics"]:
        parts = []
        for request in topic["partitions"]:
            index = request["partition"]
            try:
                log = broker.partition_log(
                    topic["topic"], index, request.get("current_leader_epoch", -1)
                )
                epoch, end = log.end_offset_for_epoch(request["leader_epoch"])
                parts.append(
                    {
                        "error_code": ErrorCode.NONE,
                        "partition": index,
                        "leader_epoch": epoch,
                        "end_offset": end,
                    }
                )
            except LogError as exc:
                parts.append({"error_code": exc.code, "partition": index})
        topics.append({"topic": topic["topic"], "partitions": parts})
    return {"topics": topics}
