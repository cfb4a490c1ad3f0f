"""The group.consumer.* configs and the topics a KIP-848 coordinator works with, read from a
broker's metadata image (for ConsumerGroupHeartbeat and the classic APIs on consumer groups)."""

from __future__ import annotations

from ..broker.metadata_image import MetadataImage
from ..coordinators.assignors import DEFAULT_ASSIGNORS, configured_assignors
from ..coordinators.consumer_group import Topics
from ..coordinators.consumer_groups import GroupSettings

#: Kafka's defaults for the group.consumer.* broker configs.
DEFAULTS = {
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.assignors": DEFAULT_ASSIGNORS,
    "group.consumer.max.size": str(2**31 - 1),
}


def group_settings(image: MetadataImage) -> GroupSettings:
    """The group.consumer.* configs in force (cluster-level, else Kafka's defaults)."""

    def config(name: str) -> str:
        return image.cluster_config(name, DEFAULTS[name])

    return GroupSettings(
        heartbeat_interval_ms=int(config("group.consumer.heartbeat.interval.ms")),
        session_timeout_ms=int(config("group.consumer.session.timeout.ms")),
        assignors=tuple(configured_assignors(config("group.consumer.assignors"))),
        max_size=int(config("group.consumer.max.size")),
    )


def image_topics(image: MetadataImage) -> Topics:
    """Every topic of the image: name -> (topic id, partition count)."""
    return {name: (info.topic_id, len(info.partitions)) for name, info in image.topics.items()}
