"""Client-metrics subscriptions (KIP-714: ConfigResourceType.CLIENT_METRICS) as configs:
`metrics` (metric name prefixes, `*` for all), `interval.ms` (the push interval) and `match`
(`selector=regex` pairs on the client), set with IncrementalAlterConfigs or AlterConfigs as
`kafka-configs --entity-type client-metrics` does; ConfigRecords that brokers replay into the
subscriptions they hand clients (`broker/client_metrics.py`).

The checks and their errors are those Kafka 4.4.0 answers (ClientMetricsConfigs#validate).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from kipwire.codec import ConfigResourceType, ConfigSource, ConfigType, ErrorCode

from .state import ClusterState

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
#: The client properties a `match` may select on.
SELECTORS = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)
#: DescribeConfigs v3 adds ConfigType and Documentation
CONFIG_TYPE_VERSION = 3


class _Config(NamedTuple):
    default: str
    config_type: int
    documentation: str


CONFIGS = {
    INTERVAL_MS: _Config(
        str(DEFAULT_INTERVAL_MS), ConfigType.INT, "Metrics push interval in milliseconds"
    ),
    MATCH: _Config("", ConfigType.LIST, "Client match criteria"),
    METRICS: _Config("", ConfigType.LIST, "Telemetry metric name prefix list"),
}


def parse_match(value: str) -> dict[str, re.Pattern[str]] | None:
    """A `match` value's selectors and their patterns, None when it is not a valid one."""
    out = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        selector, equals, pattern = item.partition("=")
        if not equals or selector.strip() not in SELECTORS or not pattern.strip():
            return None
        try:
            out[selector.strip()] = re.compile(pattern.strip())
        except re.error:
            return None
    return out


def check_client_metrics(name: str, configs: dict[str, str | None]) -> tuple[int, str] | None:
    """The error Kafka answers a change to subscription `name`, None when it takes it."""
    if not name:
        return ErrorCode.INVALID_REQUEST, "Subscription name can't be empty"
    for key, value in configs.items():
        if key not in CONFIGS:
            return ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}"
        if value is None:
            continue
        if key == INTERVAL_MS:
            try:
                interval = int(value.strip())
            except ValueError:
                return (
                    ErrorCode.INVALID_CONFIG,
                    f"Invalid value {value} for configuration {key}: Not a number of type INT",
                )
            if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
                return (
                    ErrorCode.INVALID_REQUEST,
                    f"Invalid value {value} for {key}, interval must be between "
                    f"{MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)",
                )
        elif key == MATCH:
            for item in value.split(","):
                if item.strip() and parse_match(item) is None:
                    return ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {item}"
    return None


def describe_client_metrics(
    state: ClusterState, version: int, name: str, keys: list[str] | None, synonyms: bool
) -> list[dict]:
    """A subscription's configs as DescribeConfigs lists them (a name never set lists the
    defaults, as Kafka's)."""
    out = []
    for key in sorted(CONFIGS):
        if keys is not None and key not in keys:
            continue
        config = CONFIGS[key]
        value = state.config(ConfigResourceType.CLIENT_METRICS, name, key)
        source = ConfigSource.CLIENT_METRICS_CONFIG
        if value is None:
            value, source = config.default, ConfigSource.DEFAULT_CONFIG
        entry: dict = {"name": key, "value": value, "read_only": False, "is_sensitive": False}
        if version >= 1 and synonyms and source == ConfigSource.CLIENT_METRICS_CONFIG:
            entry["synonyms"] = [{"name": key, "value": value, "source": source}]
        if version >= CONFIG_TYPE_VERSION:
            entry["config_type"] = config.config_type
            entry["documentation"] = config.documentation
        if version == 0:
            entry["is_default"] = source == ConfigSource.DEFAULT_CONFIG
        else:
            entry["config_source"] = source
        out.append(entry)
    return out
