"""A group's settings as a broker resolves them from its metadata image: the group's own config
(IncrementalAlterConfigs on a GROUP resource), else the cluster's `group.*` broker config, else
Kafka 4.4's default (`controller/group_configs.py` holds the names and defaults)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kipwire.codec import ConfigResourceType

from ..broker.metadata_image import MetadataImage
from ..controller.group_configs import duration_ms, group_config

#: The share group configs the mock acts on, by ShareSettings field.
_SHARE_CONFIGS = {
    "session_timeout_ms": "share.session.timeout.ms",
    "heartbeat_interval_ms": "share.heartbeat.interval.ms",
    "record_lock_duration_ms": "share.record.lock.duration.ms",
    "delivery_count_limit": "share.delivery.count.limit",
    "max_record_locks": "share.partition.max.record.locks",
}
#: A broker config only: no group overrides it.
MAX_SIZE = ("group.share.max.size", "200")


class OffsetReset(enum.Enum):
    """`share.auto.offset.reset`: where a share partition starts when it has no state."""

    EARLIEST = "earliest"
    LATEST = "latest"
    BY_DURATION = "by_duration"


def group_setting(image: MetadataImage, group_id: str, name: str) -> str:
    """The group config `name` in force for `group_id` on a broker with this image."""
    own = image.configs.get((ConfigResourceType.GROUP, group_id), {})
    cluster = image.configs.get((ConfigResourceType.BROKER, ""), {})
    return group_config(own, cluster, name)


@dataclass(frozen=True, slots=True)
class ShareSettings:
    """The settings in force for one share group."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    record_lock_duration_ms: int
    delivery_count_limit: int
    max_record_locks: int
    max_size: int
    auto_offset_reset: OffsetReset
    read_committed: bool
    #: for BY_DURATION: how far back from now a new share partition starts
    reset_duration_ms: int = 0

    @classmethod
    def of(cls, image: MetadataImage, group_id: str) -> ShareSettings:
        """The settings of `group_id` from a broker's metadata image."""
        values = {
            attr: int(group_setting(image, group_id, name)) for attr, name in _SHARE_CONFIGS.items()
        }
        reset = group_setting(image, group_id, "share.auto.offset.reset").strip()
        kind, _, duration = reset.partition(":")
        back = duration_ms(duration) if kind.lower() == OffsetReset.BY_DURATION.value else None
        if back is not None:
            mode = OffsetReset.BY_DURATION
        elif kind.lower() == OffsetReset.EARLIEST.value:
            mode = OffsetReset.EARLIEST
        else:
            mode = OffsetReset.LATEST
        isolation = group_setting(image, group_id, "share.isolation.level").strip()
        return cls(
            **values,
            max_size=int(image.cluster_config(*MAX_SIZE)),
            auto_offset_reset=mode,
            read_committed=isolation == "read_committed",
            reset_duration_ms=back or 0,
        )
