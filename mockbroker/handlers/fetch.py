"""Fetch (1): records up to the high watermark (or LSO), long-polled with MaxWaitMs/MinBytes.

Fetch sessions (KIP-227) are answered the way a broker with a full session cache answers them:
session id 0, so every fetch is a full fetch, which clients handle; an unknown session id gets
FETCH_SESSION_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

import trio

from kipwire.codec import ErrorCode

from ..broker.log import LogError
from .registry import RequestContext, handles, per_partition_error
from .topics import topic_id, topic_name

READ_COMMITTED = 1

_fail = per_partition_error(
    "topics", "partitions", "topic", "partition_index", "responses", "partitions"
)


def _fail_fetch(body: Any, code: int, version: int) -> dict:
    renamed = {
        "topics": [
            {
                "topic": t.get("topic"),
                "topic_id": t.get("topic_id"),
                "partitions": [{"partition_index": p["partition"]} for p in t["partitions"]],
            }
            for t in body["topics"]
        ]
    }
    return {"error_code": 0, "session_id": 0, **_fail(renamed, code, version)}


@handles(1, min_version=4, fail=_fail_fetch)
async def fetch(ctx: RequestContext, body: Any) -> dict:
    """Read every requested partition; wait for MinBytes until MaxWaitMs when there is less."""
    broker = ctx.broker
    if body.get("session_id", 0) != 0:
        return {
            "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            "session_id": 0,
            "responses": [],
        }
    deadline = trio.current_time() + max(body["max_wait_ms"], 0) / 1000
    while True:
        responses, size, failed = _read(broker, body)
        if failed or size >= body["min_bytes"] or trio.current_time() >= deadline:
            return {"error_code": 0, "session_id": 0, "responses": responses}
        with trio.move_on_at(deadline):
            await broker.wait_for_data()


def _read(broker: Any, body: Any) -> tuple[list[dict], int, bool]:
    image = broker.image
    committed = body.get("isolation_level", 0) == READ_COMMITTED
    budget = body.get("max_bytes", 0x7FFFFFFF)
    total = 0
    failed = False
    responses = []
    for topic in body["topics"]:
        name = topic_name(image, topic, "topic")
        parts = []
        for request in topic["partitions"]:
            index = request["partition"]
            try:
                if name is None:
                    raise LogError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
                log = broker.partition_log(name, index, request.get("current_leader_epoch", -1))
                offset = request["fetch_offset"]
                limit = min(request["partition_max_bytes"], budget - total)
                # KIP-74: until some bytes are read, a partition returns at least one whole batch
                records = log.read(offset, limit, committed=committed, min_one=total == 0)
                total += len(records)
                part = {
                    "partition_index": index,
                    "error_code": 0,
                    "high_watermark": log.high_watermark,
                    "last_stable_offset": log.last_stable_offset,
                    "log_start_offset": log.log_start_offset,
                    "records": records,
                }
                if committed:
                    part["aborted_transactions"] = [
                        {"producer_id": t.producer_id, "first_offset": t.first_offset}
                        for t in log.aborted_in(offset, log.last_stable_offset)
                    ]
                parts.append(part)
            except LogError as exc:
                failed = True
                parts.append(
                    {
                        "partition_index": index,
                        "error_code": exc.code,
                        "high_watermark": -1,
                        "records": b"",
                    }
                )
        responses.append(
            {"topic": topic.get("topic"), "topic_id": topic_id(image, name), "partitions": parts}
        )
    return responses, total, failed
