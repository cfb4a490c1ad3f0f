"""Produce (0): append record batches to the logs this broker leads; acks 0, 1 and all.

acks=all follows kip-rules A.3: NOT_ENOUGH_REPLICAS before the append when the committed ISR
is below min ISR; otherwise the answer waits until the high watermark passes the batch (then
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR shrank below min ISR meanwhile), for at
most the request's timeout (REQUEST_TIMED_OUT).
"""

from __future__ import annotations

import struct
from typing import Any

import trio

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
    waiting: list[tuple[dict, str, int, int]] = []  # (response part, topic, index, last offset)
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
                end = log.end_offset
                result = log.append(data["records"])
                broker.replication.appended((name, index))
                appended = True
                part = {
                    "index": index,
                    "error_code": 0,
                    "base_offset": result.base_offset,
                    "log_start_offset": log.log_start_offset,
                }
                parts.append(part)
                if acks == ACKS_ALL:
                    # a repeated batch waits for the end it was first written below
                    waiting.append((part, name, index, max(log.end_offset, end)))
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
    if waiting:
        await _wait_for_replicas(broker, waiting, body.get("timeout_ms", 30000))
    return {"responses": responses}


def _check_min_isr(broker: Any, topic: str, index: int) -> None:
    """A.3: the committed ISR must reach min ISR before an acks=all append."""
    state = broker.replication.state((topic, index))
    part = broker.image.partition(topic, index)
    if state is None or part is None:
        raise LogError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {broker.node_id} does not lead")
    if not state.enough_replicas_to_append(broker.replication.min_isr(part)):
        raise LogError(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"ISR {list(state.isr)} is smaller than min.insync.replicas",
        )


async def _wait_for_replicas(
    broker: Any, waiting: list[tuple[dict, str, int, int]], timeout_ms: int
) -> None:
    """Hold the acks=all answer until each partition's HWM reaches its append (A.3)."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    pending = list(waiting)
    while True:
        still = []
        for entry in pending:
            part, topic, index, end = entry
            state = broker.replication.state((topic, index))
            info = broker.image.partition(topic, index)
            log = broker.logs.get((topic, index))
            if state is None or info is None or log is None:
                _fail_part(part, ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership moved")
            elif log.high_watermark >= end:
                if not state.enough_replicas_after_append(broker.replication.min_isr(info)):
                    _fail_part(
                        part,
                        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                        f"ISR {list(state.maximal_isr)} shrank below min.insync.replicas",
                    )
            else:
                still.append(entry)
        pending = still
        if not pending:
            return
        if trio.current_time() >= deadline:
            for part, *_ in pending:
                _fail_part(part, ErrorCode.REQUEST_TIMED_OUT, "replicas did not catch up in time")
            return
        with trio.move_on_at(deadline):
            await broker.wait_for_data()


def _fail_part(part: dict, code: ErrorCode, message: str) -> None:
    part.update(error_code=code, base_offset=-1, error_message=message)


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
