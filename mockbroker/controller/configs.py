"""Topic and cluster configs: the ones the mock knows, their checks and their resolution.

The config APIs and D.19's ClearElrRecord are in config_apis.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from kipwire.codec import ConfigResourceType, ConfigSource, UncleanRecoveryStrategy

from .state import ClusterState

MIN_ISR = "min.insync.replicas"
UNCLEAN_ELECTION = "unclean.leader.election.enable"
RECOVERY_STRATEGY = "unclean.recovery.strategy"
RECOVERY_TIMEOUT = "unclean.recovery.timeout.ms"
STRATEGIES = (
    UncleanRecoveryStrategy.AGGRESSIVE,
    UncleanRecoveryStrategy.BALANCED,
    UncleanRecoveryStrategy.NONE,
)

INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1
_PAIR = re.compile(r"\d+:\d+")
CLEANUP_POLICIES = ("compact", "delete")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _number_in(low: int, high: int) -> Callable[[str], str | None]:
    # Java's parseInt/parseLong after a trim: digits with an optional sign, nothing else
    def check(value: str) -> str | None:
        text = value.strip()
        digits = text[1:] if text[:1] in "+-" else text
        ok = digits.isascii() and digits.isdigit() and low <= int(text) <= high
        return None if ok else f"must be an integer in [{low}, {high}]"

    return check


def _int_at_least(low: int) -> Callable[[str], str | None]:
    return _number_in(low, INT_MAX)


def _long_at_least(low: int) -> Callable[[str], str | None]:
    return _number_in(low, LONG_MAX)


def _ratio(value: str) -> str | None:
    try:
        ratio = float(value.strip())
    except ValueError:
        ratio = math.nan
    return None if 0.0 <= ratio <= 1.0 else "must be a number in [0, 1]"


def _throttled_replicas(value: str) -> str | None:
    # ThrottledReplicaListValidator: "*", or partition:broker pairs
    items = [item.strip() for item in value.split(",")] if value.strip() else []
    if items == ["*"] or all(_PAIR.fullmatch(item) for item in items):
        return None
    return "must be * or a list of partition:broker pairs"


def _off(value: str) -> str | None:
    # remote.storage.enable: the mock, like a broker without remote.log.storage.system.enable,
    # has no tiered storage to turn on
    problem = _bool(value)
    if problem is None and value.strip().lower() == "true":
        return "remote log storage is not enabled on this cluster"
    return problem


def _bool(value: str) -> str | None:
    return None if value.strip().lower() in ("true", "false") else "must be true or false"


def _one_of(choices: tuple[str, ...]) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value.strip() in choices else f"must be one of {', '.join(choices)}"

    return check


def _gzip_level(value: str) -> str | None:
    # gzip levels are 1-9, or -1 for the library's default
    problem = _number_in(-1, 9)(value)
    if problem is None and int(value.strip()) == 0:
        problem = "must be -1 or in [1, 9]"
    return problem


def _cleanup_policy(value: str) -> str | None:
    # a list config: every comma-separated item must be a policy Kafka knows
    items = [item.strip() for item in value.split(",")] if value.strip() else []
    bad = [item for item in items if item not in CLEANUP_POLICIES]
    return f"{bad[0]!r} is not one of {', '.join(CLEANUP_POLICIES)}" if bad else None


# The configs the mock knows, with Kafka's default and the check Kafka's ConfigDef applies.
KNOWN: dict[str, tuple[str, Callable[[str], str | None]]] = {
    MIN_ISR: ("1", _int_at_least(1)),
    UNCLEAN_ELECTION: ("false", _bool),
    RECOVERY_STRATEGY: (UncleanRecoveryStrategy.BALANCED.value, _one_of(STRATEGIES)),
    RECOVERY_TIMEOUT: ("300000", _long_at_least(0)),
    "retention.ms": ("604800000", _long_at_least(-1)),
    "retention.bytes": ("-1", _long_at_least(-1)),
    "segment.bytes": ("1073741824", _int_at_least(1024 * 1024)),
    "max.message.bytes": ("1048588", _int_at_least(0)),
    # the broker's flush policy; an unclean shutdown loses what was not flushed
    "flush.messages": ("9223372036854775807", _long_at_least(1)),
    "flush.ms": ("9223372036854775807", _long_at_least(0)),
    "cleanup.policy": ("delete", _cleanup_policy),
    "compression.type": ("producer", _one_of(COMPRESSION_TYPES)),
    "message.timestamp.type": ("CreateTime", _one_of(TIMESTAMP_TYPES)),
    # the rest of Kafka 4.1's topic configs: kept and described, not acted on by the mock
    "compression.gzip.level": ("-1", _gzip_level),
    "compression.lz4.level": ("9", _number_in(1, 17)),
    "compression.zstd.level": ("3", _number_in(-131072, 22)),
    "delete.retention.ms": ("86400000", _long_at_least(0)),
    "file.delete.delay.ms": ("60000", _long_at_least(0)),
    "follower.replication.throttled.replicas": ("", _throttled_replicas),
    "index.interval.bytes": ("4096", _int_at_least(0)),
    "leader.replication.throttled.replicas": ("", _throttled_replicas),
    "local.retention.bytes": ("-2", _long_at_least(-2)),
    "local.retention.ms": ("-2", _long_at_least(-2)),
    "max.compaction.lag.ms": ("9223372036854775807", _long_at_least(1)),
    "message.timestamp.after.max.ms": ("3600000", _long_at_least(0)),
    "message.timestamp.before.max.ms": ("9223372036854775807", _long_at_least(0)),
    "min.cleanable.dirty.ratio": ("0.5", _ratio),
    "min.compaction.lag.ms": ("0", _long_at_least(0)),
    "preallocate": ("false", _bool),
    "remote.log.copy.disable": ("false", _bool),
    "remote.log.delete.on.disable": ("false", _bool),
    "remote.storage.enable": ("false", _off),
    "segment.index.bytes": ("10485760", _int_at_least(4)),
    "segment.jitter.ms": ("0", _long_at_least(0)),
    "segment.ms": ("604800000", _long_at_least(1)),
}

#: The topic configs Kafka 4.2-4.4 added (kafka-storage 4.4.0's LogConfig, Kafka's defaults and
#: checks): known under the 4.4 release, kept and described, not acted on by the mock.
ADDED_BY_KAFKA_4_4: dict[str, tuple[str, Callable[[str], str | None]]] = {
    "errors.deadletterqueue.group.enable": ("false", _bool),
    "max.decompressed.message.bytes": ("2147483639", _number_in(1, 2147483639)),
    "remote.copy.lag.bytes": ("-1", _long_at_least(-1)),
    "remote.copy.lag.ms": ("0", _long_at_least(-1)),
}
_EVERY = {**KNOWN, **ADDED_BY_KAFKA_4_4}


def known(release: str) -> dict[str, tuple[str, Callable[[str], str | None]]]:
    """The configs a release knows: each with Kafka's default and its check."""
    return KNOWN if release == "4.1" else _EVERY


def resolve(state: ClusterState, topic: str, name: str) -> tuple[str, ConfigSource]:
    """A topic config's value and source: topic, then cluster default, then built-in default."""
    value = state.config(ConfigResourceType.TOPIC, topic, name)
    if value is not None:
        return value, ConfigSource.DYNAMIC_TOPIC_CONFIG
    value = state.config(ConfigResourceType.BROKER, "", name)
    if value is not None:
        return value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    return _EVERY[name][0], ConfigSource.DEFAULT_CONFIG


def min_insync_replicas(state: ClusterState, topic: str) -> int:
    """The topic's min.insync.replicas as configured (before D.13's min with the RF)."""
    return int(resolve(state, topic, MIN_ISR)[0])


def unclean_election_enabled(state: ClusterState, topic: str) -> bool:
    """Whether the topic's unclean.leader.election.enable is true."""
    return resolve(state, topic, UNCLEAN_ELECTION)[0].lower() == "true"


def recovery_strategy(state: ClusterState, topic: str) -> str:
    """The topic's unclean.recovery.strategy (the KIP's config)."""
    return resolve(state, topic, RECOVERY_STRATEGY)[0]


def recovery_timeout_ms(state: ClusterState, topic: str) -> int:
    """The topic's unclean.recovery.timeout.ms (the KIP's config)."""
    return int(resolve(state, topic, RECOVERY_TIMEOUT)[0])


def validate(name: str, value: str | None, release: str = "4.4") -> str | None:
    """Why a config value is refused under a release, or None."""
    entry = known(release).get(name)
    if entry is None:
        return f"unknown config {name!r}"
    if value is None:
        return None
    return entry[1](value)
