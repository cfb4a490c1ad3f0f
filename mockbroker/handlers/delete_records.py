"""DeleteRecords (21): move a partition's log start offset forward."""

from __future__ import annotations

from typing import Any

from ..broker.log import LogError
from .registry import RequestContext, handles, per_partition_error

_fail = per_partition_error(
    "topics", "partitions", "name", "partition_index", "topics", "partitions"
)


@handles(21, fail=_fail)
async def delete_records(ctx: RequestContext, body: Any) -> dict:
    """The new low watermark of each partition (this broker must lead it)."""
    broker = ctx.broker
    topics = []
    for topic in body["topics"]:
        parts = []
        for p in topic["partitions"]:
            index = p["partition_index"]
            try:
                low = broker.partition_log(topic["name"], index).delete_before(p["offset"])
                parts.append({"partition_index": index, "low_watermark": low, "error_code": 0})
            except LogError as exc:
                parts.append(
                    {"partition_index": index, "low_watermark": -1, "error_code": exc.code}
                )
        topics.append({"name": topic["name"], "partitions": parts})
    broker.data_arrived()
    return {"topics": topics}
