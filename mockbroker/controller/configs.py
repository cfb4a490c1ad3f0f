"""Topic and cluster configs: resolution, validation, ClearElrRecord (D.19), the config APIs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kipwire.codec import ErrorCode

from .state import BROKER_RESOURCE, TOPIC_RESOURCE, ClusterState

if TYPE_CHECKING:
    from .controller import Controller

MIN_ISR = "min.insync.replicas"
UNCLEAN_ELECTION = "unclean.leader.election.enable"
RECOVERY_STRATEGY = "unclean.recovery.strategy"
RECOVERY_TIMEOUT = "unclean.recovery.timeout.ms"
STRATEGIES = ("Aggressive", "Balanced", "None")

# ConfigSource values of DescribeConfigs.
SOURCE_TOPIC = 1
SOURCE_BROKER = 2
SOURCE_CLUSTER = 3
SOURCE_DEFAULT = 5

# IncrementalAlterConfigs operations; APPEND (2) and SUBTRACT (3) apply to list configs only,
# and the configs here are all scalars.
OP_SET, OP_DELETE = 0, 1


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
    RECOVERY_STRATEGY: ("Balanced", _one_of(STRATEGIES)),
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


def resolve(state: ClusterState, topic: str, name: str) -> tuple[str, int]:
    """A topic config's value and source: topic, then cluster default, then built-in default."""
    value = state.config(TOPIC_RESOURCE, topic, name)
    if value is not None:
        return value, SOURCE_TOPIC
    value = state.config(BROKER_RESOURCE, "", name)
    if value is not None:
        return value, SOURCE_CLUSTER
    return KNOWN[name][0], SOURCE_DEFAULT


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


def validate(name: str, value: str | None) -> str | None:
    """Why a config value is refused, or None."""
    known = KNOWN.get(name)
    if known is None:
        return f"unknown config {name!r}"
    if value is None:
        return None
    return known[1](value)


def write_configs(ctl: Controller, resource_type: int, resource_name: str, changes: dict) -> None:
    """ConfigRecords for `changes` (None deletes), then ClearElrRecord on a min ISR change.

    As Kafka's ConfigurationControlManager, a topic config set to its current value writes
    nothing, so the ELR stays; broker and cluster configs are always written (KAFKA-14136: the
    record makes brokers reload them).
    """
    if resource_type != BROKER_RESOURCE:
        current = ctl.state.configs.get((resource_type, resource_name), {})
        changes = {name: value for name, value in changes.items() if current.get(name) != value}
    for name, value in changes.items():
        ctl.append(
            "ConfigRecord",
            {
                "resource_type": resource_type,
                "resource_name": resource_name,
                "name": name,
                "value": value,
            },
        )
    if MIN_ISR in changes and ctl.semantics.clear_elr_on_min_isr_change and ctl.state.elr_enabled:
        topic = resource_name if resource_type == TOPIC_RESOURCE else ""
        ctl.append("ClearElrRecord", {"topic_name": topic})


def _check_resource(ctl: Controller, resource_type: int, name: str) -> tuple[int, str] | None:
    if resource_type == TOPIC_RESOURCE:
        if ctl.state.topic(name) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}"
        return None
    if resource_type == BROKER_RESOURCE:
        if name and not name.isdigit():
            return ErrorCode.INVALID_REQUEST, f"broker resource name {name!r} is not a broker id"
        return None
    return ErrorCode.INVALID_REQUEST, f"resource type {resource_type} has no configs here"


def _check_changes(
    ctl: Controller, resource_type: int, name: str, changes: Mapping[str, str | None]
) -> tuple[int, str] | None:
    for key, value in changes.items():
        problem = validate(key, value)
        if problem is not None:
            return ErrorCode.INVALID_CONFIG, f"{key}: {problem}"
        # D.19: while ELR is on, min ISR lives at the cluster level only, and stays there.
        if key == MIN_ISR and resource_type == BROKER_RESOURCE and ctl.state.elr_enabled:
            if name:
                return ErrorCode.INVALID_CONFIG, "broker-level min.insync.replicas with ELR on"
            if value is None:
                return ErrorCode.INVALID_CONFIG, "cluster min.insync.replicas cannot be deleted"
    return None


def _result(resource: Any, error: tuple[int, str] | None) -> dict:
    code, message = error if error is not None else (ErrorCode.NONE, None)
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
    }


def handle_incremental_alter(ctl: Controller, version: int, body: Any) -> dict:
    """IncrementalAlterConfigs v0-v1: SET and DELETE per config."""
    responses = []
    for res in body["resources"]:
        rtype, rname = res["resource_type"], res["resource_name"]
        error = _check_resource(ctl, rtype, rname)
        changes: dict[str, str | None] = {}
        for cfg in res["configs"] if error is None else ():
            op = cfg["config_operation"]
            if op == OP_SET:
                changes[cfg["name"]] = cfg["value"]
            elif op == OP_DELETE:
                changes[cfg["name"]] = None
            else:
                error = ErrorCode.INVALID_CONFIG, f"{cfg['name']} is not a list config"
                break
        if error is None:
            error = _check_changes(ctl, rtype, rname, changes)
        if error is None and not body["validate_only"]:
            write_configs(ctl, rtype, rname, changes)
        responses.append(_result(res, error))
    return {"responses": responses}


def handle_alter(ctl: Controller, version: int, body: Any) -> dict:
    """AlterConfigs v0-v2: the given set replaces the resource's configs."""
    responses = []
    for res in body["resources"]:
        rtype, rname = res["resource_type"], res["resource_name"]
        error = _check_resource(ctl, rtype, rname)
        changes: dict[str, str | None] = {c["name"]: c["value"] for c in res["configs"]}
        if error is None:
            for old in ctl.state.configs.get((rtype, rname), {}):
                changes.setdefault(old, None)
            error = _check_changes(ctl, rtype, rname, changes)
        if error is None and not body["validate_only"]:
            write_configs(ctl, rtype, rname, changes)
        responses.append(_result(res, error))
    return {"responses": responses}


def _describe_one(ctl: Controller, version: int, rtype: int, rname: str, keys: Any) -> list[dict]:
    out = []
    for name in sorted(KNOWN):
        if keys is not None and name not in keys:
            continue
        if rtype == TOPIC_RESOURCE:
            value, source = resolve(ctl.state, rname, name)
        else:
            value = ctl.state.config(BROKER_RESOURCE, rname, name)
            source = SOURCE_BROKER if rname else SOURCE_CLUSTER
            if value is None and rname:
                value, source = ctl.state.config(BROKER_RESOURCE, "", name), SOURCE_CLUSTER
            if value is None:
                value, source = KNOWN[name][0], SOURCE_DEFAULT
        entry = {"name": name, "value": value, "read_only": False, "is_sensitive": False}
        if version == 0:
            entry["is_default"] = source == SOURCE_DEFAULT
        else:
            entry["config_source"] = source
        out.append(entry)
    return out


def handle_describe(ctl: Controller, version: int, body: Any) -> dict:
    """DescribeConfigs v0-v4 for topics and brokers (the configs in KNOWN)."""
    results = []
    for res in body["resources"]:
        rtype, rname = res["resource_type"], res["resource_name"]
        error = _check_resource(ctl, rtype, rname)
        result = _result(res, error)
        result["configs"] = (
            [] if error else _describe_one(ctl, version, rtype, rname, res["configuration_keys"])
        )
        results.append(result)
    return {"results": results}
