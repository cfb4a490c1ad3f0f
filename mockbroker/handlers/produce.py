"""Produce (0): append record batches to the logs this broker leads; acks 0, 1 and all.

Each partition's append is `broker.partition.Partition.append`, which owns the acks=all rule
(kip-rules A.3: the min-ISR gate, the wait for the high watermark, NOT_ENOUGH_REPLICAS and
NOT_ENOUGH_REPLICAS_AFTER_APPEND); the partitions of one request append and wait side by side.
"""

from __future__ import annotations

from typing import Any

import trio

from kipwire.codec import ApiKey, ErrorCode

from ..broker.log import LogError
from ..broker.topic_names import response_topic, topic_name
from .registry import PartitionShape, RequestContext, handles

#: Produce names topics by id from this version on (KIP-516), by name before it.
TOPIC_IDS_SINCE = 13
#: Produce's request timeout when a version lacks one (v0 always carries it).
DEFAULT_TIMEOUT_MS = 30000

_SHAPE = PartitionShape(
    "topic_data", "partition_data", "name", "index", "responses", "partition_responses"
)


@handles(ApiKey.PRODUCE, min_version=3, fail=_SHAPE)
async def produce(ctx: RequestContext, body: Any) -> dict | None:
    """Append each partition's batches; acks=0 gets no response at all."""
    broker = ctx.broker
    image = broker.image
    acks = body["acks"]
    timeout_ms = body.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    by_id = ctx.api_version >= TOPIC_IDS_SINCE
    responses = []
    async with trio.open_nursery() as nursery:
        for topic in body["topic_data"]:
            name = topic_name(image, topic)
            parts: list[dict] = []
            for data in topic["partition_data"]:
                part: dict = {"index": data["index"]}
                parts.append(part)
                nursery.start_soon(_append, ctx, name, data, acks, timeout_ms, part)
            responses.append(
                {**response_topic(image, name, by_id=by_id), "partition_responses": parts}
            )
    if acks == 0:
        return None
    return {"responses": responses}


async def _append(
    ctx: RequestContext, name: str | None, data: Any, acks: int, timeout_ms: int, part: dict
) -> None:
    """One partition's append; its answer (or error) fills `part`."""
    index = data["index"]
    try:
        if name is None:
            raise LogError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
        appended = await ctx.broker.partition(name, index).append(data["records"], acks, timeout_ms)
        part.update(
            error_code=ErrorCode.NONE,
            base_offset=appended.base_offset,
            log_start_offset=appended.log_start_offset,
            log_append_time_ms=appended.log_append_time,
        )
    except LogError as exc:
        part.update(error_code=exc.code, base_offset=-1, error_message=str(exc))
