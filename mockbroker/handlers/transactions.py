"""Producers and transactions: InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn
(25), EndTxn (26), TxnOffsetCommit (28)."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.topic_names import topic_name
from ..coordinators.group_offsets import GroupOffsets
from ..coordinators.groups import CommittedOffset
from .groups import not_coordinator
from .offsets import commit_fail
from .registry import RequestContext, handles

#: EndTxn v5 is transactions v2: the coordinator bumps the epoch at every transaction's end.
BUMPING_END_TXN = 5
#: TxnOffsetCommit v6 names topics by id only (KIP-1319).
TXN_OFFSETS_BY_ID = 6

#: Kafka's transaction.max.timeout.ms default: the longest transaction timeout a producer may ask.
DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = "900000"


def _init_fail(body: Any, code: int, version: int) -> dict:
    return {"error_code": code, "producer_id": -1, "producer_epoch": -1}


@handles(ApiKey.INIT_PRODUCER_ID, fail=_init_fail)
async def init_producer_id(ctx: RequestContext, body: Any) -> dict:
    """A producer id for an idempotent producer, or the next epoch of a transactional id."""
    txn_id = body["transactional_id"]
    if txn_id is not None and not_coordinator(ctx, txn_id):
        return _init_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    max_timeout = ctx.broker.image.cluster_config(
        "transaction.max.timeout.ms", DEFAULT_TRANSACTION_MAX_TIMEOUT_MS
    )
    if txn_id is not None and not 0 < body["transaction_timeout_ms"] <= int(max_timeout):
        return _init_fail(body, ErrorCode.INVALID_TRANSACTION_TIMEOUT, ctx.api_version)
    code, pid, epoch = ctx.broker.transactions.init_producer_id(
        txn_id,
        body["transaction_timeout_ms"],
        body.get("producer_id", -1),
        body.get("producer_epoch", -1),
    )
    return {"error_code": code, "producer_id": pid, "producer_epoch": epoch}


def _add_partitions_fail(body: Any, code: int, version: int) -> dict:
    def topics(entries: list) -> list[dict]:
        return [
            {
                "name": t["name"],
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": code} for p in t["partitions"]
                ],
            }
            for t in entries
        ]

    if version >= 4:
        return {
            "error_code": ErrorCode.NONE,
            "results_by_transaction": [
                {"transactional_id": t["transactional_id"], "topic_results": topics(t["topics"])}
                for t in body["transactions"]
            ],
        }
    return {"results_by_topic_v3_and_below": topics(body["v3_and_below_topics"])}


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, fail=_add_partitions_fail)
async def add_partitions_to_txn(ctx: RequestContext, body: Any) -> dict:
    """Partitions join a transaction (v0-3 from the producer; v4+ batched, as brokers send)."""
    if ctx.api_version >= 4:
        results = []
        for txn in body["transactions"]:
            code = _add(
                ctx,
                txn["transactional_id"],
                txn["producer_id"],
                txn["producer_epoch"],
                txn["topics"],
                txn.get("verify_only", False),
            )
            one = _add_partitions_fail({"transactions": [txn]}, code, ctx.api_version)
            results += one["results_by_transaction"]
        return {"error_code": ErrorCode.NONE, "results_by_transaction": results}
    code = _add(
        ctx,
        body["v3_and_below_transactional_id"],
        body["v3_and_below_producer_id"],
        body["v3_and_below_producer_epoch"],
        body["v3_and_below_topics"],
        False,
    )
    return _add_partitions_fail(body, code, ctx.api_version)


def _add(
    ctx: RequestContext, txn_id: str, pid: int, epoch: int, topics: list, verify_only: bool
) -> int:
    if not_coordinator(ctx, txn_id):
        return ErrorCode.NOT_COORDINATOR
    image = ctx.broker.image
    partitions = [(t["name"], p) for t in topics for p in t["partitions"]]
    if any(image.partition(name, p) is None for name, p in partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    coordinator = ctx.broker.transactions
    if verify_only:
        txn = coordinator.transactions.get(txn_id)
        ok = txn is not None and set(partitions) <= txn.partitions
        return ErrorCode.NONE if ok else ErrorCode.INVALID_TXN_STATE
    return coordinator.add_partitions(txn_id, pid, epoch, partitions)


@handles(ApiKey.ADD_OFFSETS_TO_TXN)
async def add_offsets_to_txn(ctx: RequestContext, body: Any) -> dict:
    """A group's offsets join a transaction."""
    if not_coordinator(ctx, body["transactional_id"]):
        return {"error_code": ErrorCode.NOT_COORDINATOR}
    code = ctx.broker.transactions.add_offsets(
        body["transactional_id"], body["producer_id"], body["producer_epoch"], body["group_id"]
    )
    return {"error_code": code}


@handles(ApiKey.END_TXN)
async def end_txn(ctx: RequestContext, body: Any) -> dict:
    """Commit or abort: markers to every partition of the transaction; from v5 (transactions
    v2) the epoch is bumped and the response carries the producer's next id and epoch."""
    if not_coordinator(ctx, body["transactional_id"]):
        return {"error_code": ErrorCode.NOT_COORDINATOR}
    if ctx.api_version >= BUMPING_END_TXN:
        code, producer_id, epoch = ctx.broker.transactions.end_and_bump(
            body["transactional_id"], body["producer_id"], body["producer_epoch"], body["committed"]
        )
        return {"error_code": code, "producer_id": producer_id, "producer_epoch": epoch}
    code = ctx.broker.transactions.end(
        body["transactional_id"], body["producer_id"], body["producer_epoch"], body["committed"]
    )
    return {
        "error_code": code,
        "producer_id": body["producer_id"],
        "producer_epoch": body["producer_epoch"],
    }


@handles(ApiKey.TXN_OFFSET_COMMIT, fail=commit_fail)
async def txn_offset_commit(ctx: RequestContext, body: Any) -> dict:
    """Offsets committed inside a transaction, visible once it commits (group coordinator)."""
    if not_coordinator(ctx, body["group_id"]):
        return commit_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    names = [topic_name(ctx.broker.image, t) for t in body["topics"]]
    # v6 names topics by id: an unknown id fails its own partitions (UNKNOWN_TOPIC_ID, KIP-1319)
    known = [(n, t) for n, t in zip(names, body["topics"], strict=True) if n is not None]
    unknown = [t for n, t in zip(names, body["topics"], strict=True) if n is None]
    offsets = {
        (name, p["partition_index"]): CommittedOffset(
            p["committed_offset"], p.get("committed_leader_epoch", -1), p["committed_metadata"]
        )
        for name, t in known
        for p in t["partitions"]
    }
    image = ctx.broker.image
    partitions = [
        (image.topics[name].topic_id, index) for name, index in offsets if name in image.topics
    ]

    def check_member() -> int:
        # v3+ names the member (KIP-447); older versions commit as a producer without one
        groups = GroupOffsets(ctx.broker.consumer_groups, ctx.broker.streams_groups)
        return groups.check_txn_commit(
            body["group_id"],
            body.get("member_id", ""),
            body.get("group_instance_id"),
            body.get("generation_id_or_member_epoch", -1),
            partitions,
            ctx.api_version,
        )

    code = ctx.broker.transactions.commit_offsets(
        body["transactional_id"],
        body["producer_id"],
        body["producer_epoch"],
        body["group_id"],
        offsets,
        check_member,
    )
    if ctx.api_version < TXN_OFFSETS_BY_ID or not unknown:
        return commit_fail(body, code, ctx.api_version)
    answered = commit_fail({"topics": [t for _, t in known]}, code, ctx.api_version)
    missing = commit_fail({"topics": unknown}, ErrorCode.UNKNOWN_TOPIC_ID, ctx.api_version)
    return {"topics": answered["topics"] + missing["topics"]}
