"""Fetch (1): records up to the high watermark (or LSO), long-polled with MaxWaitMs/MinBytes.

Fetch sessions (KIP-227) are answered the way a broker with a full session cache answers them:
session id 0, so every fetch is a full fetch, which clients handle; an unknown session id gets
FETCH_SESSION_ID_NOT_FOUND.

A fetch from a follower (ReplicaState.ReplicaId, or ReplicaId before v15, >= 0) reads up to the
log end and tells the leader's ISR state machine the follower's offset and broker epoch. Under
`Semantics.KIP` a leader still RECOVERING (KIP-704) answers consumers NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

from typing import Any

import trio

from kipwire.codec import ApiKey, ErrorCode, IsolationLevel

from ..broker.log import LogError
from ..broker.topic_names import topic_id, topic_name
from .registry import BrokerView, PartitionShape, RequestContext, handles

_SHAPE = PartitionShape(
    "topics",
    "partitions",
    "topic",
    "partition",
    "responses",
    "partitions",
    out_index="partition_index",
    extra={"error_code": ErrorCode.NONE, "session_id": 0},
    wait_key="max_wait_ms",
)


@handles(ApiKey.FETCH, min_version=4, fail=_SHAPE)
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
    replica_id, replica_epoch = _replica(body)
    if replica_id >= 0:
        _record_follower_fetch(broker, body, replica_id, replica_epoch)
    while True:
        responses, size, failed = _read(broker, body, replica_id >= 0)
        if failed or size >= body["min_bytes"] or trio.current_time() >= deadline:
            return {"error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}
        with trio.move_on_at(deadline):
            await broker.wait_for_data()


def _replica(body: Any) -> tuple[int, int]:
    """(replica id, broker epoch) of a follower's fetch; (-1, -1) for a consumer."""
    state = body.get("replica_state")
    if state is not None and state.get("replica_id", -1) >= 0:
        return state["replica_id"], state.get("replica_epoch", -1)
    return body.get("replica_id", -1), -1


def _record_follower_fetch(
    broker: BrokerView, body: Any, replica_id: int, replica_epoch: int
) -> None:
    """The follower's fetch offset is its log end: the leader's ISR and HWM decisions use it."""
    for topic in body["topics"]:
        name = topic_name(broker.image, topic, "topic")
        for request in topic["partitions"]:
            if name is not None:
                broker.replica(name, request["partition"]).follower_fetched(
                    replica_id, replica_epoch, request["fetch_offset"]
                )


def _read(broker: BrokerView, body: Any, replica: bool) -> tuple[list[dict], int, bool]:
    image = broker.image
    committed = body.get("isolation_level", 0) == IsolationLevel.READ_COMMITTED
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
                partition = broker.partition(name, index, request.get("current_leader_epoch", -1))
                log = partition.log
                if not replica and not partition.serves_fetches:
                    raise LogError(
                        ErrorCode.NOT_LEADER_OR_FOLLOWER, "the leader is RECOVERING (KIP-704)"
                    )
                offset = request["fetch_offset"]
                limit = min(request["partition_max_bytes"], budget - total)
                # KIP-74: until some bytes are read, a partition returns at least one whole batch
                records = log.read(
                    offset, limit, committed=committed, min_one=total == 0, replica=replica
                )
                total += len(records)
                part = {
                    "partition_index": index,
                    "error_code": ErrorCode.NONE,
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
