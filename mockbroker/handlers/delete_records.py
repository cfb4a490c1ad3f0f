"""DeleteRecords (21): move a partition's log start offset forward."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.log import LogError
from .registry import PartitionShape, RequestContext, handles

_SHAPE = PartitionShape("topics", "partitions", "name", "partition_index", "topics", "partitions")


@handles(ApiKey.DELETE_RECORDS, fail=_SHAPE)
async def delete_records(ctx: RequestContext, body: Any) -> dict:
    """The new low watermark of each partition (this broker must lead it)."""
    broker = ctx.broker
    topics = []
    for topic in body["topics"]:
        parts = []
        for p in topic["partitions"]:
            index = p["partition_index"]
            try:
                low = broker.partition(topic["name"], index).log.delete_before(p["offset"])
                broker.data_arrived((topic["name"], index))
                parts.append(
                    {"partition_index": index, "low_watermark": low, "error_code": ErrorCode.NONE}
                )
            except LogError as exc:
                parts.append(
                    {"partition_index": index, "low_watermark": -1, "error_code": exc.code}
                )
        topics.append({"name": topic["name"], "partitions": parts})
    return {"topics": topics}
