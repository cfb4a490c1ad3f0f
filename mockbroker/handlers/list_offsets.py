"""ListOffsets (2): earliest, latest (HWM, or LSO for read_committed), max timestamp, by time."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode, IsolationLevel, OffsetSpec

from ..broker.log import LogError
from .registry import PartitionShape, RequestContext, handles

LEADER_EPOCH_FROM = 4
#: Offset specs that name tiered-storage offsets (KIP-1005 v9, KIP-1023 v11).
_TIERED_ONLY = (OffsetSpec.LATEST_TIERED, OffsetSpec.EARLIEST_PENDING_UPLOAD)

_SHAPE = PartitionShape("topics", "partitions", "name", "partition_index", "topics", "partitions")


@handles(ApiKey.LIST_OFFSETS, min_version=1, fail=_SHAPE)
async def list_offsets(ctx: RequestContext, body: Any) -> dict:
    """One offset per requested partition."""
    broker = ctx.broker
    committed = body.get("isolation_level", 0) == IsolationLevel.READ_COMMITTED
    topics = []
    for topic in body["topics"]:
        parts = []
        for request in topic["partitions"]:
            index = request["partition_index"]
            try:
                log = broker.partition(
                    topic["name"], index, request.get("current_leader_epoch", -1)
                ).log
                timestamp = request["timestamp"]
                if timestamp == OffsetSpec.EARLIEST_LOCAL:
                    # no tiered storage: the local log is the whole log
                    timestamp = OffsetSpec.EARLIEST
                if timestamp in _TIERED_ONLY:
                    # no tiered storage: no tiered offset, nothing pending upload (v9, v11)
                    offset, found, epoch = -1, -1, -1
                elif timestamp == OffsetSpec.LATEST and committed:
                    offset, found, epoch = log.last_stable_offset, -1, log.leader_epoch
                else:
                    offset, found, epoch = log.offset_for_time(timestamp)
                part = {
                    "partition_index": index,
                    "error_code": ErrorCode.NONE,
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
