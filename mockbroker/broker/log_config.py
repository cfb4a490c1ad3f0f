"""The topic configs a partition's log acts on: segment rolls, retention and compaction.

Resolved as Kafka's LogConfig is: the topic's own value, else the cluster default (Kafka's
`log.*` broker configs, which the controller stores under the topic config's name), else
Kafka's default. A broker keeps one `LogConfig` per topic and builds it anew when a config
changes (`BrokerState.configs_changed`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..controller.configs import KNOWN
from .metadata_image import MetadataImage

#: Kafka's defaults of the configs below (the controller's table of topic configs).
_DEFAULT = {name: default for name, (default, _) in KNOWN.items()}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A topic's segment, retention and compaction settings (Kafka's defaults unless given)."""

    segment_bytes: int = int(_DEFAULT["segment.bytes"])
    segment_ms: int = int(_DEFAULT["segment.ms"])
    retention_ms: int = int(_DEFAULT["retention.ms"])
    retention_bytes: int = int(_DEFAULT["retention.bytes"])
    #: cleanup.policy holds `delete`: retention deletes old segments.
    delete: bool = True
    #: cleanup.policy holds `compact`: the cleaner keeps the latest record per key.
    compact: bool = False
    delete_retention_ms: int = int(_DEFAULT["delete.retention.ms"])
    min_cleanable_dirty_ratio: float = float(_DEFAULT["min.cleanable.dirty.ratio"])
    min_compaction_lag_ms: int = int(_DEFAULT["min.compaction.lag.ms"])
    max_compaction_lag_ms: int = int(_DEFAULT["max.compaction.lag.ms"])

    @classmethod
    def of_topic(cls, image: MetadataImage, topic: str) -> LogConfig:
        """A topic's settings from the metadata image: topic, then cluster default, then Kafka."""

        def get(name: str) -> str:
            return image.topic_config(topic, name, _DEFAULT[name]).strip()

        policies = {p.strip() for p in get("cleanup.policy").split(",")}
        return cls(
            segment_bytes=int(get("segment.bytes")),
            segment_ms=int(get("segment.ms")),
            retention_ms=int(get("retention.ms")),
            retention_bytes=int(get("retention.bytes")),
            delete="delete" in policies,
            compact="compact" in policies,
            delete_retention_ms=int(get("delete.retention.ms")),
            min_cleanable_dirty_ratio=float(get("min.cleanable.dirty.ratio")),
            min_compaction_lag_ms=int(get("min.compaction.lag.ms")),
            max_compaction_lag_ms=int(get("max.compaction.lag.ms")),
        )


DEFAULT_LOG_CONFIG = LogConfig()
