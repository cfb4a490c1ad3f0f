"""The group.consumer.* configs and the topics a KIP-848 coordinator works with, read from a
broker's metadata image (for ConsumerGroupHeartbeat and the classic APIs on consumer groups).

The session timeout and heartbeat interval are group configs too (`consumer.session.timeout.ms`,
`consumer.heartbeat.interval.ms`): `controller/group_configs.py` defines them once, with the
broker configs they default to, and a group's own value wins, as in Kafka's GroupConfigManager.
"""

from __future__ import annotations

from ..broker.metadata_image import MetadataImage
from ..coordinators.assignors import DEFAULT_ASSIGNORS, configured_assignors
from ..coordinators.consumer_group import Topics
from ..coordinators.consumer_groups import GroupSettings
from ..coordinators.share_settings import group_setting

#: Kafka's defaults for the group.consumer.* broker configs that no group config overrides.
DEFAULTS = {
    "group.consumer.assignors": DEFAULT_ASSIGNORS,
    "group.consumer.max.size": str(2**31 - 1),
}


def group_settings(image: MetadataImage, group_id: str = "") -> GroupSettings:
    """The consumer group settings in force for `group_id`: its group configs, else the
    cluster-level group.consumer.* configs, else Kafka's defaults."""

    def config(name: str) -> str:
        return image.cluster_config(name, DEFAULTS[name])

    return GroupSettings(
        heartbeat_interval_ms=int(group_setting(image, group_id, "consumer.heartbeat.interval.ms")),
        session_timeout_ms=int(group_setting(image, group_id, "consumer.session.timeout.ms")),
        assignors=tuple(configured_assignors(config("group.consumer.assignors"))),
        max_size=int(config("group.consumer.max.size")),
    )


def image_topics(image: MetadataImage) -> Topics:
    """Every topic of the image: name -> (topic id, partition count)."""
    return {name: (info.topic_id, len(info.partitions)) for name, info in image.topics.items()}
