"""Produce (0): append record batches to the logs this broker leads; acks 0, 1 and all.

Each partition's append is `broker.partition.Partition`'s, which owns the acks=all rule
(kip-rules A.3: the min-ISR gate, the wait for the high watermark, NOT_ENOUGH_REPLICAS and
NOT_ENOUGH_REPLICAS_AFTER_APPEND): every partition of a request is written first
(`Partition.write`), then the answer waits for each to be replicated (`Partition.replicated`)
under the request's one deadline; no task per partition.
"""

from __future__ import annotations

from typing import Any

import trio

from kipwire.codec import ApiKey, ErrorCode

from ..broker.log import LogError
from ..broker.partition import ACKS_ALL, Appended, Partition
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
    deadline = trio.current_time() + max(body.get("timeout_ms", DEFAULT_TIMEOUT_MS), 0) / 1000
    by_id = ctx.api_version >= TOPIC_IDS_SINCE
    responses = []
    waits: list[tuple[Partition, int, Appended, dict]] = []
    for topic in body["topic_data"]:
        name = topic_name(image, topic)
        parts: list[dict] = []
        for data in topic["partition_data"]:
            part: dict = {"index": data["index"]}
            parts.append(part)
            try:
                partition, appended, end = _write(ctx, name, data, acks)
            except LogError as exc:
                _failed(part, exc)
                continue
            if acks == ACKS_ALL:
                waits.append((partition, end, appended, part))
            else:
                _succeeded(part, appended)
        responses.append({**response_topic(image, name, by_id=by_id), "partition_responses": parts})
    # every partition is written before any waits; waiting for them one after another ends
    # when the last is replicated, as waiting side by side would, under the one deadline
    for partition, end, appended, part in waits:
        try:
            await partition.replicated(end, deadline)
        except LogError as exc:
            _failed(part, exc)
        else:
            _succeeded(part, appended)
    if acks == 0:
        return None
    return {"responses": responses}


def _write(
    ctx: RequestContext, name: str | None, data: Any, acks: int
) -> tuple[Partition, Appended, int]:
    """One partition's append: the partition, where the batches landed, and the log end an
    acks=all answer waits for."""
    if name is None:
        raise LogError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
    partition = ctx.broker.partition(name, data["index"])
    appended, end = partition.write(data["records"], acks)
    return partition, appended, end


def _succeeded(part: dict, appended: Appended) -> None:
    part.update(
        error_code=ErrorCode.NONE,
        base_offset=appended.base_offset,
        log_start_offset=appended.log_start_offset,
        log_append_time_ms=appended.log_append_time,
    )


def _failed(part: dict, exc: LogError) -> None:
    part.update(error_code=exc.code, base_offset=-1, error_message=str(exc))
