"""Transaction tooling (`kafka-transactions`): ListTransactions (66), DescribeTransactions (65),
DescribeProducers (61) and WriteTxnMarkers (27).

Behavior: ListTransactions and DescribeTransactions answer for the transactional ids this broker
coordinates (the admin client asks every broker, or the coordinator). DescribeProducers answers
for partitions this broker leads, from each partition's producer state: epoch, last sequence,
the wall-clock time of its last batch, and the first offset of its open transaction.
WriteTxnMarkers writes COMMIT or ABORT markers on partitions this broker leads: Kafka's
coordinator sends it, and so does `kafka-transactions abort` to end a hanging transaction (a
marker with an epoch older than the producer's is INVALID_PRODUCER_EPOCH).

Version notes: ListTransactions v1 adds DurationFilter, v2 TransactionalIdPattern (a Python
`re.fullmatch` where Kafka uses java.util.regex). WriteTxnMarkers v2 adds TransactionVersion.
"""

from __future__ import annotations

import re
import time
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.log import LogError
from .groups import not_coordinator
from .registry import RequestContext, handles

#: The states Kafka's TransactionState names (ListTransactions' state filters).
TRANSACTION_STATES = {
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
}


@handles(ApiKey.LIST_TRANSACTIONS)
async def list_transactions(ctx: RequestContext, body: Any) -> dict:
    """The transactional ids this broker coordinates, filtered by state, producer id, the
    time they have been running (v1) and a pattern on the id (v2)."""
    states = set(body["state_filters"])
    producers = set(body["producer_id_filters"])
    duration = body.get("duration_filter", -1)
    pattern_text = body.get("transactional_id_pattern")
    try:
        pattern = re.compile(pattern_text) if pattern_text else None
    except re.error:
        return {"error_code": ErrorCode.INVALID_REGULAR_EXPRESSION}
    now_ms = int(time.time() * 1000)
    listed = []
    for txn in ctx.broker.transactions.transactions.values():
        if not_coordinator(ctx, txn.transactional_id):
            continue
        if states and txn.state not in states:
            continue
        if producers and txn.producer_id not in producers:
            continue
        if duration >= 0 and txn.started_ms >= 0 and now_ms - txn.started_ms < duration:
            continue
        if pattern is not None and not pattern.fullmatch(txn.transactional_id):
            continue
        listed.append(
            {
                "transactional_id": txn.transactional_id,
                "producer_id": txn.producer_id,
                "transaction_state": txn.state,
            }
        )
    return {
        "error_code": ErrorCode.NONE,
        "unknown_state_filters": sorted(states - TRANSACTION_STATES),
        "transaction_states": listed,
    }


def _describe_fail(body: Any, code: int, version: int) -> dict:
    return {
        "transaction_states": [
            {"transactional_id": t, "error_code": code, "transaction_state": ""}
            for t in body["transactional_ids"]
        ]
    }


@handles(ApiKey.DESCRIBE_TRANSACTIONS, fail=_describe_fail)
async def describe_transactions(ctx: RequestContext, body: Any) -> dict:
    """Each transactional id's state, producer, timeout, start time and partitions."""
    described = []
    for txn_id in body["transactional_ids"]:
        txn = ctx.broker.transactions.transactions.get(txn_id)
        entry: dict[str, Any] = {"transactional_id": txn_id, "transaction_state": ""}
        if not_coordinator(ctx, txn_id):
            entry["error_code"] = ErrorCode.NOT_COORDINATOR
        elif txn is None:
            entry["error_code"] = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        else:
            topics: dict[str, list[int]] = {}
            for topic, index in sorted(txn.partitions):
                topics.setdefault(topic, []).append(index)
            entry.update(
                error_code=ErrorCode.NONE,
                transaction_state=txn.state,
                transaction_timeout_ms=txn.timeout_ms,
                # kept once the transaction completes, as Kafka's txnStartTimestamp is
                transaction_start_time_ms=txn.started_ms,
                producer_id=txn.producer_id,
                producer_epoch=txn.epoch,
                topics=[{"topic": t, "partitions": ps} for t, ps in topics.items()],
            )
        described.append(entry)
    return {"transaction_states": described}


def _producers_fail(body: Any, code: int, version: int) -> dict:
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p, "error_code": code} for p in t["partition_indexes"]
                ],
            }
            for t in body["topics"]
        ]
    }


@handles(ApiKey.DESCRIBE_PRODUCERS, fail=_producers_fail)
async def describe_producers(ctx: RequestContext, body: Any) -> dict:
    """The active producers of each partition this broker leads."""
    topics = []
    for topic in body["topics"]:
        parts = []
        for index in topic["partition_indexes"]:
            entry: dict[str, Any] = {"partition_index": index, "active_producers": []}
            try:
                log = ctx.broker.partition_log(topic["name"], index)
            except LogError as exc:
                entry.update(error_code=exc.code, error_message=str(exc))
            else:
                entry["error_code"] = ErrorCode.NONE
                entry["active_producers"] = [
                    {
                        "producer_id": pid,
                        "producer_epoch": epoch,
                        "last_sequence": sequence,
                        "last_timestamp": timestamp,
                        "coordinator_epoch": coordinator_epoch,
                        "current_txn_start_offset": log.open_txns.get(pid, -1),
                    }
                    for pid, epoch, sequence, timestamp, coordinator_epoch in (
                        log.producers.active()
                    )
                ]
            parts.append(entry)
        topics.append({"name": topic["name"], "partitions": parts})
    return {"topics": topics}


def _markers_fail(body: Any, code: int, version: int) -> dict:
    return {
        "markers": [
            {
                "producer_id": m["producer_id"],
                "topics": [
                    {
                        "name": t["name"],
                        "partitions": [
                            {"partition_index": p, "error_code": code}
                            for p in t["partition_indexes"]
                        ],
                    }
                    for t in m["topics"]
                ],
            }
            for m in body["markers"]
        ]
    }


@handles(ApiKey.WRITE_TXN_MARKERS, fail=_markers_fail)
async def write_txn_markers(ctx: RequestContext, body: Any) -> dict:
    """Write each marker on the partitions it names that this broker leads."""
    markers = []
    for marker in body["markers"]:
        pid, epoch = marker["producer_id"], marker["producer_epoch"]
        topics = []
        for topic in marker["topics"]:
            parts = []
            for index in topic["partition_indexes"]:
                parts.append(
                    {
                        "partition_index": index,
                        "error_code": _write_marker(
                            ctx, topic["name"], index, pid, epoch, marker["transaction_result"]
                        ),
                    }
                )
            topics.append({"name": topic["name"], "partitions": parts})
        markers.append({"producer_id": pid, "topics": topics})
    return {"markers": markers}


def _write_marker(
    ctx: RequestContext, topic: str, index: int, pid: int, epoch: int, commit: bool
) -> int:
    try:
        partition = ctx.broker.partition(topic, index)
    except LogError as exc:
        return exc.code
    current = partition.log.producers.epoch_of(pid)
    if current is not None and epoch < current:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    partition.append_marker(pid, epoch, commit)
    return ErrorCode.NONE
