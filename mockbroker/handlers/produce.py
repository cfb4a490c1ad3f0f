"""Produce (0): append record batches to the logs this broker leads; acks 0, 1 and all."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ErrorCode

from ..broker.log import LogError
from .registry import RequestContext, handles, per_partition_error
from .topics import topic_id, topic_name

ACKS_ALL = -1

_fail = per_partition_error(
    "topic_data", "partition_data", "name", "index", "responses", "partition_responses"
)


@handles(0, min_version=3, fail=_fail)
async def produce(ctx: RequestContext, body: Any) -> dict | None:
    """Validate and append each partition's batches; acks=0 gets no response at all."""
    broker = ctx.broker
    image = broker.image
    acks = body["acks"]
    responses = []
    appended = False
    for topic in body["topic_data"]:
        name = topic_name(image, topic)
        parts = []
        for data in topic["partition_data"]:
            index = data["index"]
            try:
                if name is None:
                    raise LogError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
                log = broker.partition_log(name, index)
                if acks == ACKS_ALL:
                    _check_min_isr(broker, name, index)
                if data["records"] is None:
                    raise LogError(ErrorCode.INVALID_RECORD, "a produce without records")
                result = log.append(data["records"])
                appended = True
                parts.append(
                    {
                        "index": index,
                        "error_code": 0,
                        "base_offset": result.base_offset,
                        "log_start_offset": log.log_start_offset,
                    }
                )
            except LogError as exc:
                parts.append(
                    {
                        "index": index,
                        "error_code": exc.code,
                        "base_offset": -1,
                        "error_message": str(exc),
                    }
                )
        responses.append(
            {
                "name": topic.get("name"),
                "topic_id": topic_id(image, name),
                "partition_responses": parts,
            }
        )
    if appended:
        broker.data_arrived()
    if acks == 0:
        return None
    return {"responses": responses}


def _check_min_isr(broker: Any, topic: str, index: int) -> None:
    part = broker.image.partition(topic, index)
    wanted = int(broker.image.topic_config(topic, "min.insync.replicas", "1"))
    if part is not None and len(part.isr) < wanted:
        raise LogError(
            ErrorCode.NOT_ENOUGH_REPLICAS, f"ISR {part.isr} is smaller than min.insync.replicas"
        )
