"""Metadata (3): brokers, controller, topics and partitions, from the broker's metadata image."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.metadata_image import MetadataImage
from ..broker.topic_names import ZERO_UUID
from .registry import RequestContext, handles


def broker_list(image: MetadataImage) -> list[dict]:
    """The live brokers as Metadata and DescribeCluster list them."""
    return [
        {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in image.live_brokers()
    ]


def describe_topic(image: MetadataImage, name: str) -> dict:
    """One topic's partitions as Metadata reports them."""
    info = image.topics[name]
    live = {b.node_id for b in image.live_brokers()}
    partitions = []
    for index, part in sorted(info.partitions.items()):
        partitions.append(
            {
                "error_code": ErrorCode.NONE
                if part.leader >= 0
                else ErrorCode.LEADER_NOT_AVAILABLE,
                "partition_index": index,
                "leader_id": part.leader,
                "leader_epoch": part.leader_epoch,
                "replica_nodes": part.replicas,
                "isr_nodes": part.isr,
                "offline_replicas": [r for r in part.replicas if r not in live],
            }
        )
    return {
        "error_code": ErrorCode.NONE,
        "name": name,
        "topic_id": info.topic_id,
        "is_internal": name.startswith("__"),
        "partitions": partitions,
    }


@handles(ApiKey.METADATA)
async def metadata(ctx: RequestContext, body: Any) -> dict:
    """Requested topics (all when null, or empty before v1), auto-created when allowed."""
    broker = ctx.broker
    image = broker.image
    requested = body["topics"]
    if requested is None or (ctx.api_version == 0 and not requested):
        names: list[str | None] = sorted(image.topics)
        ids = [ZERO_UUID] * len(names)
    else:
        names, ids = [], []
        for entry in requested:
            tid = entry.get("topic_id") or ZERO_UUID
            name = entry["name"]
            if name is None and tid != ZERO_UUID:
                info = image.topics_by_id.get(tid)
                name = info.name if info else None
            names.append(name)
            ids.append(tid)
    auto = body.get("allow_auto_topic_creation", True) and ctx.api_version >= 4
    missing = [n for n in names if n is not None and n not in image.topics]
    if missing and auto and broker.auto_create_topics:
        await broker.auto_create(missing)
    topics = []
    for name, tid in zip(names, ids, strict=True):
        if name is not None and name in image.topics:
            topics.append(describe_topic(image, name))
        else:
            code = (
                ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            topics.append({"error_code": code, "name": name, "topic_id": tid, "partitions": []})
    live = image.live_brokers()
    return {
        "brokers": broker_list(image),
        "cluster_id": broker.cluster_id,
        "controller_id": live[0].node_id if live else -1,
        "topics": topics,
    }
