"""Committed offsets: OffsetCommit (8) and OffsetFetch (9), of classic, consumer and streams
groups.

A classic group checks generations (`coordinators/groups.py`); a KIP-848 consumer group and a
KIP-1071 streams group check member epochs alike (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID;
`coordinators/consumer_group.py`, `coordinators/streams_groups.py`), each keeping its own offsets.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Protocol

from kipwire.codec import ApiKey, ErrorCode

from ..broker.topic_names import topic_id, topic_name
from ..coordinators.groups import CommittedOffset
from .groups import not_coordinator
from .registry import RequestContext, handles

#: OffsetFetch v8 batches groups; its topic entries may carry ids (used from v10)
GROUPS_FROM = 8
#: OffsetCommit and OffsetFetch v10 name topics by id only (KIP-848).
BY_TOPIC_ID = 10


class EpochGroup(Protocol):
    """A group whose members commit and fetch with member epochs: a consumer or a streams one."""

    @property
    def offsets(self) -> MutableMapping[tuple[str, int], CommittedOffset]: ...

    def check_commit(self, member_id: str, member_epoch: int, version: int) -> int: ...

    def check_fetch(self, member_id: str | None, member_epoch: int) -> int: ...


def _epoch_group(ctx: RequestContext, group_id: str) -> EpochGroup | None:
    """The consumer or streams group holding the id; None for a classic group (or none)."""
    consumer = ctx.broker.consumer_groups.group(group_id)
    if consumer is not None:
        return consumer
    return ctx.broker.streams_groups.group(group_id)


def commit_fail(body: Any, code: int, version: int) -> dict:
    """OffsetCommit's (and TxnOffsetCommit's, the same shape) answer with `code` everywhere."""
    return {
        "topics": [
            {
                "name": t.get("name"),
                "topic_id": t.get("topic_id"),
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": code}
                    for p in t["partitions"]
                ],
            }
            for t in body["topics"]
        ]
    }


@handles(ApiKey.OFFSET_COMMIT, min_version=2, fail=commit_fail)
async def offset_commit(ctx: RequestContext, body: Any) -> dict:
    """Store offsets for a group's current generation (or a simple, memberless commit)."""
    if not_coordinator(ctx, body["group_id"]):
        return commit_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    image = ctx.broker.image
    epoch, member_id = body.get("generation_id_or_member_epoch", -1), body.get("member_id", "")
    epochs = _epoch_group(ctx, body["group_id"])
    offsets: MutableMapping | None
    if epochs is not None:
        code, offsets = epochs.check_commit(member_id, epoch, ctx.api_version), epochs.offsets
    else:
        code, group = ctx.broker.groups.check_commit(body["group_id"], epoch, member_id)
        offsets = group.offsets if group is not None else None
    topics = []
    for topic in body["topics"]:
        name = topic_name(image, topic)
        parts = []
        for p in topic["partitions"]:
            part_code = code
            if not part_code and name is None and ctx.api_version >= BY_TOPIC_ID:
                part_code = ErrorCode.UNKNOWN_TOPIC_ID
            elif not part_code and (
                name is None or image.partition(name, p["partition_index"]) is None
            ):
                part_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if not part_code:
                assert offsets is not None
                offsets[name, p["partition_index"]] = CommittedOffset(
                    p["committed_offset"],
                    p.get("committed_leader_epoch", -1),
                    p.get("committed_metadata"),
                )
            parts.append({"partition_index": p["partition_index"], "error_code": part_code})
        topics.append(
            {"name": topic.get("name"), "topic_id": topic.get("topic_id"), "partitions": parts}
        )
    return {"topics": topics}


def _fetch_fail(body: Any, code: int, version: int) -> dict:
    if version >= GROUPS_FROM:
        return {
            "groups": [
                {"group_id": g["group_id"], "topics": [], "error_code": code}
                for g in body["groups"]
            ]
        }
    return {"topics": [], "error_code": code}


@handles(ApiKey.OFFSET_FETCH, min_version=1, fail=_fetch_fail)
async def offset_fetch(ctx: RequestContext, body: Any) -> dict:
    """The committed offsets of the partitions asked (all the group has when null)."""
    if ctx.api_version < GROUPS_FROM:
        if not_coordinator(ctx, body["group_id"]):
            return _fetch_fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
        topics = _group_offsets(ctx, body["group_id"], body["topics"])
        return {"topics": topics, "error_code": ErrorCode.NONE}
    groups = []
    for request in body["groups"]:
        if not_coordinator(ctx, request["group_id"]):
            groups.append(
                {
                    "group_id": request["group_id"],
                    "topics": [],
                    "error_code": ErrorCode.NOT_COORDINATOR,
                }
            )
            continue
        epochs = _epoch_group(ctx, request["group_id"])
        if epochs is not None:
            code = epochs.check_fetch(request.get("member_id"), request.get("member_epoch", -1))
            if code:
                groups.append({"group_id": request["group_id"], "topics": [], "error_code": code})
                continue
        topics = _group_offsets(ctx, request["group_id"], request["topics"])
        groups.append(
            {"group_id": request["group_id"], "topics": topics, "error_code": ErrorCode.NONE}
        )
    return {"groups": groups}


def _group_offsets(ctx: RequestContext, group_id: str, requested: list | None) -> list[dict]:
    image = ctx.broker.image
    epochs = _epoch_group(ctx, group_id)
    group: Any = epochs if epochs is not None else ctx.broker.groups.group(group_id)
    offsets = group.offsets if group else {}
    if requested is None:
        wanted: dict[str, list[int]] = {}
        for name, index in sorted(offsets):
            wanted.setdefault(name, []).append(index)
        pairs = [(name, indexes) for name, indexes in wanted.items()]
    else:
        pairs = [(topic_name(image, t), list(t["partition_indexes"])) for t in requested]
    topics = []
    for name, indexes in pairs:
        parts = []
        for index in indexes:
            stored = offsets.get((name, index))
            parts.append(
                {
                    "partition_index": index,
                    "committed_offset": stored.offset if stored else -1,
                    "committed_leader_epoch": stored.leader_epoch if stored else -1,
                    "metadata": stored.metadata if stored else "",
                    "error_code": ErrorCode.NONE,
                }
            )
        topic = {"name": name or "", "partitions": parts}
        if ctx.api_version >= GROUPS_FROM:
            topic["topic_id"] = topic_id(image, name)
        topics.append(topic)
    return topics
