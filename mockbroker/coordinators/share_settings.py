"""A share group's settings: its own `share.*` group config (IncrementalAlterConfigs on a GROUP
resource), else the cluster's `group.share.*` broker config, else Kafka 4.4's default."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kipwire.codec import ConfigResourceType

from ..broker.metadata_image import MetadataImage

#: (group config, broker config, Kafka 4.4's default) of each setting the mock acts on.
SETTINGS = {
    "session_timeout_ms": (
        "share.session.timeout.ms",
        "group.share.session.timeout.ms",
        "45000",
    ),
    "heartbeat_interval_ms": (
        "share.heartbeat.interval.ms",
        "group.share.heartbeat.interval.ms",
        "5000",
    ),
    "record_lock_duration_ms": (
        "share.record.lock.duration.ms",
        "group.share.record.lock.duration.ms",
        "30000",
    ),
    "delivery_count_limit": (
        "share.delivery.count.limit",
        "group.share.delivery.count.limit",
        "5",
    ),
    "max_record_locks": (
        "share.partition.max.record.locks",
        "group.share.partition.max.record.locks",
        "2000",
    ),
    "max_size": ("", "group.share.max.size", "200"),
}
AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"


class OffsetReset(enum.Enum):
    """`share.auto.offset.reset`: where a share partition starts when it has no state."""

    EARLIEST = "earliest"
    LATEST = "latest"


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

    @classmethod
    def of(cls, image: MetadataImage, group_id: str) -> ShareSettings:
        """The settings of `group_id` from a broker's metadata image."""
        own = image.configs.get((ConfigResourceType.GROUP, group_id), {})
        values = {}
        for attr, (group_key, broker_key, default) in SETTINGS.items():
            value = own.get(group_key) if group_key else None
            values[attr] = int(
                value if value is not None else image.cluster_config(broker_key, default)
            )
        reset = own.get(AUTO_OFFSET_RESET, OffsetReset.LATEST.value).strip().lower()
        return cls(
            **values,
            auto_offset_reset=(
                OffsetReset.EARLIEST if reset == OffsetReset.EARLIEST.value else OffsetReset.LATEST
            ),
            read_committed=own.get(ISOLATION_LEVEL, "").strip() == "read_committed",
        )
