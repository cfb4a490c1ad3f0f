"""Produce (0): append record batches to the logs this broker leads; acks 0, 1 and all."""

from __future__ import annotations

import struct
from typing import Any

from kipwire.codec import ErrorCode

from ..broker.log import LogError
from .registry import RequestContext, handles, per_partition_error
from .topics import topic_id, topic_name

ACKS_ALL = -1
#: Kafka's message.max.bytes default: the largest record batch a topic accepts.
DEFAULT_MAX_MESSAGE_BYTES = "1048588"
_BATCH_LENGTH = struct.Struct(">i")
_BATCH_LENGTH_AT, _BATCH_OVERHEAD = 8, 12

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
                check_batch_sizes(image, name, data["records"])
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


def check_batch_sizes(image: Any, topic: str, records: bytes) -> None:
    """MESSAGE_TOO_LARGE when a batch exceeds the topic's max.message.bytes, as Kafka answers."""
    default = image.topic_config(topic, "message.max.bytes", DEFAULT_MAX_MESSAGE_BYTES)
    limit = int(image.topic_config(topic, "max.message.bytes", default))
    view = memoryview(records)
    pos = 0
    # only the length fields are read: a truncated or corrupt batch is the log's to report
    while pos + _BATCH_OVERHEAD <= len(view):
        size = _BATCH_OVERHEAD + _BATCH_LENGTH.unpack_from(view, pos + _BATCH_LENGTH_AT)[0]
        if size > limit:
            raise LogError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"the record batch size in the append to {topic} is {size} bytes, which exceeds"
                f" the maximum configured value of {limit}",
            )
        if size <= _BATCH_OVERHEAD:
            return
        pos += size
