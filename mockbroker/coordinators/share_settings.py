"""A share group's settings: its own `share.*` group config (IncrementalAlterConfigs on a GROUP
resource), else the cluster's `group.share.*` broker config, else Kafka 4.4's default."""

from __future__ import annotations

import enum
import re
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
    BY_DURATION = "by_duration"


# java.time.Duration's ISO-8601 form as KIP-1106's by_duration takes it: PnDTnHnMn.nS
_DURATION = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)


def duration_ms(text: str) -> int | None:
    """Milliseconds of an ISO-8601 duration (PT1H, P1DT30M, PT0.5S), None if it is not one."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.groupdict().values()):
        return None
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    return int(((parts["d"] * 24 + parts["h"]) * 60 + parts["m"]) * 60_000 + parts["s"] * 1000)


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
        own = image.configs.get((ConfigResourceType.GROUP, group_id), {})
        values = {}
        for attr, (group_key, broker_key, default) in SETTINGS.items():
            value = own.get(group_key) if group_key else None
            values[attr] = int(
                value if value is not None else image.cluster_config(broker_key, default)
            )
        reset = own.get(AUTO_OFFSET_RESET, OffsetReset.LATEST.value).strip()
        kind, _, duration = reset.partition(":")
        back = duration_ms(duration) if kind.lower() == OffsetReset.BY_DURATION.value else None
        if back is not None:
            mode = OffsetReset.BY_DURATION
        elif kind.lower() == OffsetReset.EARLIEST.value:
            mode = OffsetReset.EARLIEST
        else:
            mode = OffsetReset.LATEST
        return cls(
            **values,
            auto_offset_reset=mode,
            read_committed=own.get(ISOLATION_LEVEL, "").strip() == "read_committed",
            reset_duration_ms=back or 0,
        )
