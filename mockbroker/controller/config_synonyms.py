"""Config synonyms as Kafka's DescribeConfigs lists them when IncludeSynonyms is set.

A config's synonyms are every place its value could come from, in Kafka's order: the topic's
own config, then for each broker name of it the broker's dynamic config, the cluster's dynamic
default, the static broker config (server.properties) and Kafka's default. The first one is the
config's source. The mock stores Kafka's `log.*` broker names under the topic config they
default (broker_configs.SYNONYMS), and its cluster config (`MockCluster(config=...)`) as the
cluster-level configs a formatted cluster starts with: those are its static broker configs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kipwire.codec import ConfigResourceType, ConfigSource

from .broker_configs import BROKER, SYNONYMS
from .state import ClusterState

_LONG_MAX = str(2**63 - 1)

#: a topic config -> its broker names with Kafka 4.4's default for each (None: no default),
#: in Kafka's order (ServerTopicConfigSynonyms)
TOPIC_SYNONYMS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "segment.bytes": (("log.segment.bytes", "1073741824"),),
    "segment.ms": (("log.roll.ms", None), ("log.roll.hours", "168")),
    "segment.jitter.ms": (("log.roll.jitter.ms", None), ("log.roll.jitter.hours", "0")),
    "segment.index.bytes": (("log.index.size.max.bytes", "10485760"),),
    "flush.messages": (("log.flush.interval.messages", _LONG_MAX),),
    "flush.ms": (("log.flush.interval.ms", None), ("log.flush.scheduler.interval.ms", _LONG_MAX)),
    "retention.bytes": (("log.retention.bytes", "-1"),),
    # Kafka 4.4 lists no default synonym for retention.ms (the tool matrix shows it)
    "retention.ms": (
        ("log.retention.ms", None),
        ("log.retention.minutes", None),
        ("log.retention.hours", None),
    ),
    "max.message.bytes": (("message.max.bytes", "1048588"),),
    "index.interval.bytes": (("log.index.interval.bytes", "4096"),),
    "delete.retention.ms": (("log.cleaner.delete.retention.ms", "86400000"),),
    "min.compaction.lag.ms": (("log.cleaner.min.compaction.lag.ms", "0"),),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms", _LONG_MAX),),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", "60000"),),
    "min.cleanable.dirty.ratio": (("log.cleaner.min.cleanable.ratio", "0.5"),),
    "cleanup.policy": (("log.cleanup.policy", "delete"),),
    "unclean.leader.election.enable": (("unclean.leader.election.enable", "false"),),
    "min.insync.replicas": (("min.insync.replicas", "1"),),
    "compression.type": (("compression.type", "producer"),),
    "compression.gzip.level": (("compression.gzip.level", "-1"),),
    "compression.lz4.level": (("compression.lz4.level", "9"),),
    "compression.zstd.level": (("compression.zstd.level", "3"),),
    "preallocate": (("log.preallocate", "false"),),
    "message.timestamp.type": (("log.message.timestamp.type", "CreateTime"),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", _LONG_MAX),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", "3600000"),),
    "local.retention.ms": (("log.local.retention.ms", "-2"),),
    "local.retention.bytes": (("log.local.retention.bytes", "-2"),),
}

#: a broker name -> the broker names of the same setting (log.retention.ms, .minutes, .hours)
_BROKER_GROUPS = {
    broker: tuple(name for name, _ in group)
    for group in TOPIC_SYNONYMS.values()
    for broker, _ in group
}
_KAFKA_DEFAULTS = {
    broker: default for group in TOPIC_SYNONYMS.values() for broker, default in group
}


#: a topic config the mock stores at the cluster level -> the broker name Kafka shows for it
_BROKER_NAMES = {target: broker for broker, (target, unit) in SYNONYMS.items() if unit == 1}


def broker_name(stored: str) -> str:
    """The broker config name Kafka shows for a cluster-level config the mock stores."""
    return _BROKER_NAMES.get(stored, stored)


def _stored_name(broker: str) -> str | None:
    """Where the mock stores a broker config: a log.* name under the topic config it defaults,
    none for one in hours or minutes (stored converted to ms under that topic config)."""
    if broker in SYNONYMS:
        target, unit = SYNONYMS[broker]
        return target if unit == 1 else None
    return broker


def _kafka_default(broker: str) -> str | None:
    if broker in _KAFKA_DEFAULTS:
        return _KAFKA_DEFAULTS[broker]
    config = BROKER.get(broker)
    return config.default if config is not None else None


def is_static(state: ClusterState, static: Mapping[str, str], stored: str) -> bool:
    """Whether a cluster-level config is still the value the cluster started with."""
    value = state.config(ConfigResourceType.BROKER, "", stored)
    return value is not None and static.get(stored) == value


def _cluster_value(
    state: ClusterState, static: Mapping[str, str], broker: str, dynamic: bool
) -> str | None:
    stored = _stored_name(broker)
    if stored is None or is_static(state, static, stored) == dynamic:
        return None
    return state.config(ConfigResourceType.BROKER, "", stored)


def broker_synonyms(
    state: ClusterState, static: Mapping[str, str], broker: str, node: str | None
) -> list[dict]:
    """Kafka's synonyms of a broker config: on broker `node`, on the cluster default resource
    (node ""; its dynamic default only, as Kafka lists it), or behind a topic config (None)."""
    names = _BROKER_GROUPS.get(broker, (broker,))
    found: list[dict] = []

    def add(source: int, value_of: Callable[[str], str | None]) -> None:
        for name in names:
            value = value_of(name)
            if value is not None:
                found.append({"name": name, "value": value, "source": source})

    if node:
        add(ConfigSource.DYNAMIC_BROKER_CONFIG, _per_broker(state, node))
    add(
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        lambda name: _cluster_value(state, static, name, dynamic=True),
    )
    if node != "":
        add(
            ConfigSource.STATIC_BROKER_CONFIG,
            lambda name: _cluster_value(state, static, name, dynamic=False),
        )
        add(ConfigSource.DEFAULT_CONFIG, _kafka_default)
    return found


def _per_broker(state: ClusterState, node: str) -> Callable[[str], str | None]:
    def value_of(name: str) -> str | None:
        stored = _stored_name(name)
        return None if stored is None else state.config(ConfigResourceType.BROKER, node, stored)

    return value_of


def topic_synonyms(
    state: ClusterState, static: Mapping[str, str], topic: str, name: str
) -> list[dict]:
    """Kafka's synonyms of a topic config: the topic's own value, then its broker names'."""
    found = []
    value = state.config(ConfigResourceType.TOPIC, topic, name)
    if value is not None:
        found.append({"name": name, "value": value, "source": ConfigSource.DYNAMIC_TOPIC_CONFIG})
    group = TOPIC_SYNONYMS.get(name)
    if group:
        found += broker_synonyms(state, static, group[0][0], None)
    return found
