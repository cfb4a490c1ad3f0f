"""Group configs (KIP-848, KIP-932: ConfigResourceType.GROUP), as `kafka-configs --entity-type
groups` and `Admin.incrementalAlterConfigs` set them: ConfigRecords on the group's resource, which
brokers replay and the share coordinator reads (`coordinators/share_settings.py`).

Kafka's GroupConfig defines them with the broker's `group.*` configs as defaults; an unknown name
is INVALID_CONFIG, as Kafka's GroupConfig.validate answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from kipwire.codec import ConfigResourceType, ConfigSource, ConfigType

from .configs import _number_in, _one_of
from .state import ClusterState

INT_MAX = 2**31 - 1
#: DescribeConfigs v3 adds ConfigType and Documentation
CONFIG_TYPE_VERSION = 3
#: the group configs Kafka's GroupConfig types as strings; every other one is an int
_STRINGS = {"share.auto.offset.reset", "share.isolation.level"}
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


def _offset_reset(value: str) -> str | None:
    # earliest, latest, or by_duration:<ISO-8601 duration> (KIP-1106)
    kind, colon, duration = value.strip().partition(":")
    if not colon and kind.lower() in ("earliest", "latest"):
        return None
    if kind.lower() == "by_duration" and duration_ms(duration) is not None:
        return None
    return "must be earliest, latest or by_duration:<ISO-8601 duration>"


#: Group config -> (the broker config it defaults to, Kafka 4.4's default, its check).
GROUP_CONFIGS: dict[str, tuple[str, str, Callable[[str], str | None]]] = {
    "consumer.session.timeout.ms": (
        "group.consumer.session.timeout.ms",
        "45000",
        _number_in(1, INT_MAX),
    ),
    "consumer.heartbeat.interval.ms": (
        "group.consumer.heartbeat.interval.ms",
        "5000",
        _number_in(1, INT_MAX),
    ),
    "share.session.timeout.ms": ("group.share.session.timeout.ms", "45000", _number_in(1, INT_MAX)),
    "share.heartbeat.interval.ms": (
        "group.share.heartbeat.interval.ms",
        "5000",
        _number_in(1, INT_MAX),
    ),
    "share.record.lock.duration.ms": (
        "group.share.record.lock.duration.ms",
        "30000",
        _number_in(1000, 3600000),
    ),
    "share.delivery.count.limit": (
        "group.share.delivery.count.limit",
        "5",
        _number_in(2, 10),
    ),
    "share.partition.max.record.locks": (
        "group.share.partition.max.record.locks",
        "2000",
        _number_in(100, 10000),
    ),
    "share.auto.offset.reset": ("", "latest", _offset_reset),
    "share.isolation.level": (
        "",
        "read_uncommitted",
        _one_of(("read_committed", "read_uncommitted")),
    ),
    "streams.session.timeout.ms": (
        "group.streams.session.timeout.ms",
        "45000",
        _number_in(1, INT_MAX),
    ),
    "streams.heartbeat.interval.ms": (
        "group.streams.heartbeat.interval.ms",
        "5000",
        _number_in(1, INT_MAX),
    ),
    "streams.num.standby.replicas": ("group.streams.num.standby.replicas", "0", _number_in(0, 2)),
    "streams.initial.rebalance.delay.ms": (
        "group.streams.initial.rebalance.delay.ms",
        "3000",
        _number_in(0, INT_MAX),
    ),
}


def group_config(own: Mapping[str, str], cluster: Mapping[str, str], name: str) -> str:
    """A group config in force: the group's own value, else the broker config it defaults to
    (cluster-wide), else Kafka 4.4's default."""
    value = own.get(name)
    if value is not None:
        return value
    broker_key, default, _ = GROUP_CONFIGS[name]
    return cluster.get(broker_key, default) if broker_key else default


def check_group_config(name: str, value: str | None) -> str | None:
    """Why a group config change is refused, or None."""
    known = GROUP_CONFIGS.get(name)
    if known is None:
        return f"Unknown group config name: {name}"
    problem = None if value is None else known[2](value)
    # ConfigException's wording, as Kafka answers a bad value
    return None if problem is None else f"Invalid value {value} for configuration {name}: {problem}"


def describe_group(
    state: ClusterState, version: int, group_id: str, keys: list[str] | None, synonyms: bool = False
) -> list[dict]:
    """A group's configs as DescribeConfigs lists them: set on the group, else the broker
    default it falls back to; as synonyms (Kafka's) the group's own value, then the default."""
    out = []
    for name in sorted(GROUP_CONFIGS):
        if keys is not None and name not in keys:
            continue
        broker_key, default, _ = GROUP_CONFIGS[name]
        value = state.config(ConfigResourceType.GROUP, group_id, name)
        source = ConfigSource.GROUP_CONFIG
        if value is None and broker_key:
            value = state.config(ConfigResourceType.BROKER, "", broker_key)
            source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if value is None:
            value, source = default, ConfigSource.DEFAULT_CONFIG
        entry = {"name": name, "value": value, "read_only": False, "is_sensitive": False}
        if version >= CONFIG_TYPE_VERSION:
            entry["config_type"] = ConfigType.STRING if name in _STRINGS else ConfigType.INT
            entry["documentation"] = None
        if version == 0:
            entry["is_default"] = source == ConfigSource.DEFAULT_CONFIG
        else:
            entry["config_source"] = source
            found = [{"name": name, "value": default, "source": ConfigSource.DEFAULT_CONFIG}]
            if source == ConfigSource.GROUP_CONFIG:
                found.insert(0, {"name": name, "value": value, "source": source})
            entry["synonyms"] = found if synonyms else []
        out.append(entry)
    return out
