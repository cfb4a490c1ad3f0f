"""DescribeTopicPartitions (75): partitions with ELR and LastKnownElr, paged by a cursor
exactly as kip-rules H.32-H.33 describe Kafka's handler."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.topic_names import ZERO_UUID
from .metadata import describe_topic
from .registry import RequestContext, handles

#: max.request.partition.size.limit's default
MAX_PARTITIONS = 2000
_LEGAL = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _valid_name(name: str) -> bool:
    return 0 < len(name) <= 249 and name not in (".", "..") and set(name) <= _LEGAL


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
async def describe_topic_partitions(ctx: RequestContext, body: Any) -> dict:
    """Topics sorted by name from the cursor, at most the partition limit of them (H.32-33)."""
    image = ctx.broker.image
    limit = max(min(MAX_PARTITIONS, body["response_partition_limit"]), 1)
    cursor = body["cursor"]
    listed = [t["name"] for t in body["topics"]]
    start_topic, start_partition = (
        (cursor["topic_name"], cursor["partition_index"]) if cursor else ("", 0)
    )
    if cursor is not None and (start_partition < 0 or (listed and start_topic not in listed)):
        # the handler's InvalidRequestException: every listed topic carries the error
        invalid = ErrorCode.INVALID_REQUEST
        return {
            "topics": [
                {"error_code": invalid, "name": n, "topic_id": ZERO_UUID, "partitions": []}
                for n in listed
            ],
            "next_cursor": None,
        }
    names = sorted(n for n in (listed or image.topics) if n >= start_topic)
    topics: list[dict] = []
    next_cursor = None
    budget = limit
    for position, name in enumerate(names):
        if name not in image.topics:
            if listed:
                code = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if _valid_name(name)
                    else ErrorCode.INVALID_TOPIC_EXCEPTION
                )
                topics.append(
                    {"error_code": code, "name": name, "topic_id": ZERO_UUID, "partitions": []}
                )
            continue
        if budget == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        first = start_partition if name == start_topic else 0
        described = describe_topic(image, name)
        info = image.topics[name]
        parts = []
        for part in described["partitions"]:
            if part["partition_index"] < first:
                continue
            if budget == 0:
                next_cursor = {"topic_name": name, "partition_index": part["partition_index"]}
                break
            state = info.partitions[part["partition_index"]]
            parts.append(
                {
                    **part,
                    "eligible_leader_replicas": state.elr,
                    "last_known_elr": state.last_known_elr,
                }
            )
            budget -= 1
        described["partitions"] = parts
        topics.append(described)
        if next_cursor is not None:
            break
        if (
            budget == 0
            and position + 1 < len(names)
            and any(n in image.topics for n in names[position + 1 :])
        ):
            next_cursor = {
                "topic_name": next(n for n in names[position + 1 :] if n in image.topics),
                "partition_index": 0,
            }
            break
    return {"topics": topics, "next_cursor": next_cursor}
