"""DescribeLogDirs (35) and AlterReplicaLogDirs (34): a broker's log directories, the replicas
each holds, and moving a replica between them (KIP-113), answered as Kafka's ReplicaManager does.

Behavior: DescribeLogDirs lists every directory of the broker (`broker/replica_dirs.py`) with the
replicas it holds among those asked (all when Topics is null): the log's size in bytes (on disk,
its `.log` files' bytes and those not flushed yet, which Kafka's files already hold) and its
offset lag (high watermark minus log end offset, never below 0), IsFutureKey false (moves
complete at once). v4+ adds the volume's total and usable bytes, -1 (unknown) for an in-memory
directory; v5's IsCordoned is false (KIP-1066 cordoning is not modeled).
AlterReplicaLogDirs moves the replica, and on disk its partition directory, at once; it
answers per partition: LOG_DIR_NOT_FOUND for a path that is not one of the
broker's directories, UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata lacks,
REPLICA_NOT_AVAILABLE for one this broker holds no replica of (the directory is remembered for
when it arrives), INVALID_TOPIC_EXCEPTION when the future log's name would exceed 255 bytes.

Version notes: DescribeLogDirs v1-v5 (v3 adds the top-level ErrorCode, v4 TotalBytes and
UsableBytes, v5 IsCordoned); AlterReplicaLogDirs v1-v2 (v2 flexible).
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.replica_dirs import LogDir, future_name_too_long
from .registry import RequestContext, handles


def _size(ctx: RequestContext, key: tuple[str, int]) -> tuple[int, int]:
    """(bytes, offset lag) of this broker's log of a partition."""
    log = ctx.broker.logs.get(key)
    if log is None:
        return 0, 0
    size = sum(len(stored.data) for stored in log.batches)
    if ctx.broker.log_dirs.on_disk:
        # the files' bytes, and the unflushed batches Kafka would have in them already
        unflushed = (b for b in log.batches if b.last_offset >= log.flushed_offset)
        size = ctx.broker.log_dirs.size_on_disk(*key) + sum(len(b.data) for b in unflushed)
    return size, max(log.high_watermark - log.end_offset, 0)


def _describe_dir(ctx: RequestContext, log_dir: LogDir, asked: set[tuple[str, int]] | None) -> dict:
    topics: dict[str, list[dict]] = {}
    for key in ctx.broker.replica_dirs.replicas_in(log_dir):
        if asked is not None and key not in asked:
            continue
        size, lag = _size(ctx, key)
        topics.setdefault(key[0], []).append(
            {
                "partition_index": key[1],
                "partition_size": size,
                "offset_lag": lag,
                "is_future_key": False,
            }
        )
    total, usable = log_dir.space()
    return {
        "error_code": ErrorCode.NONE,
        "log_dir": log_dir.path,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
        "total_bytes": total,
        "usable_bytes": usable,
    }


@handles(ApiKey.DESCRIBE_LOG_DIRS)
async def describe_log_dirs(ctx: RequestContext, body: Any) -> dict:
    """Every log directory of this broker with the asked replicas it holds."""
    asked = None
    if body["topics"] is not None:
        asked = {(t["topic"], index) for t in body["topics"] for index in t["partitions"]}
    return {
        "error_code": ErrorCode.NONE,
        "results": [_describe_dir(ctx, d, asked) for d in ctx.broker.replica_dirs.dirs],
    }


def _alter_one(ctx: RequestContext, path: str, topic: str, index: int) -> int:
    dirs = ctx.broker.replica_dirs
    if future_name_too_long(topic, index):
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    target = dirs.by_path(path)
    if target is None:
        return ErrorCode.LOG_DIR_NOT_FOUND
    dirs.prefer(topic, index, target)
    if not dirs.hosts(topic, index):
        if ctx.broker.image.partition(topic, index) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # Kafka keeps REPLICA_NOT_AVAILABLE here for compatibility (not NOT_LEADER_OR_FOLLOWER)
        return ErrorCode.REPLICA_NOT_AVAILABLE
    ctx.broker.move_replica(topic, index, target)
    return ErrorCode.NONE


def _alter_fail(body: Any, code: int, version: int) -> dict:
    """Every partition of the request with `code` (CLUSTER_AUTHORIZATION_FAILED, faults)."""
    topics: dict[str, list[dict]] = {}
    for d in body.get("dirs") or []:
        for t in d["topics"]:
            topics.setdefault(t["name"], []).extend(
                {"partition_index": i, "error_code": code} for i in t["partitions"]
            )
    return {"results": [{"topic_name": n, "partitions": p} for n, p in topics.items()]}


@handles(ApiKey.ALTER_REPLICA_LOG_DIRS, fail=_alter_fail)
async def alter_replica_log_dirs(ctx: RequestContext, body: Any) -> dict:
    """Move replicas this broker holds to the named directories, per partition."""
    topics: dict[str, list[dict]] = {}
    for d in body["dirs"]:
        for t in d["topics"]:
            for index in t["partitions"]:
                code = _alter_one(ctx, d["path"], t["name"], index)
                topics.setdefault(t["name"], []).append(
                    {"partition_index": index, "error_code": code}
                )
    return {"results": [{"topic_name": n, "partitions": p} for n, p in topics.items()]}
