"""ListOffsets (2): earliest, latest (HWM, or LSO for read_committed), max timestamp, by time."""

from __future__ import annotations

from typing import Any

from ..broker.log import LATEST, LogError
from .registry import RequestContext, handles, per_partition_error

READ_COMMITTED = 1
EARLIEST_LOCAL = -4
LEADER_EPOCH_FROM = 4

_fail = per_partition_error(
    "topics", "partitions", "name", "partition_index", "topics", "partitions"
)


@handles(2, min_version=1, fail=_fail)
async def list_offsets(ctx: RequestContext, body: Any) -> dict:
    """One offset per requested partition."""
    broker = ctx.broker
    committed = body.get("isolation_level", 0) == READ_COMMITTED
    topics = []
    for topic in body["topics"]:
        parts = []
        for request in topic["partitions"]:
            index = request["partition_index"]
            try:
                log = broker.partition_log(
                    topic["name"], index, request.get("current_leader_epoch", -1)
                )
                timestamp = request["timestamp"]
                if timestamp == EARLIEST_LOCAL:
                    timestamp = -2  # no tiered storage: the local log is the whole log
                if timestamp == LATEST and committed:
                    offset, found, epoch = log.last_stable_offset, -1, log.leader_epoch
                else:
                    offset, found, epoch = log.offset_for_time(timestamp)
                part = {
                    "partition_index": index,
                    "error_code": 0,
                    "timestamp": found,
                    "offset": offset,
                }
                if ctx.api_version >= LEADER_EPOCH_FROM:
                    part["leader_epoch"] = epoch
                parts.append(part)
            except LogError as exc:
                parts.append({"partition_index": index, "error_code": exc.code})
        topics.append({"name": topic["name"], "partitions": parts})
    return {"topics": topics}
