"""Broker configs (server.properties): the ones the mock takes, their checks, which ones
IncrementalAlterConfigs may change, and Kafka's messages (with a did-you-mean) for the rest.

A cluster's config (`MockCluster(config=...)`, `serve --config`, `--config-file`) holds broker
configs and, as cluster-wide defaults, the topic configs of `configs.KNOWN`. Kafka's `log.*`
synonyms of topic configs are stored under the topic config's name (`log.retention.ms` is the
cluster default of `retention.ms`), which is where a topic's resolution falls back to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from .configs import KNOWN, _bool, _int_at_least, _long_at_least, did_you_mean, known
from .group_configs import GROUP_CONFIGS

Check = Callable[[str], "str | None"]


def parse_overrides(text: str) -> dict[str, int]:
    """max.connections.per.ip.overrides ("host:count,host:count") as a dict."""
    out = {}
    for entry in text.split(","):
        if entry.strip():
            host, _, count = entry.strip().rpartition(":")
            out[host.strip()] = int(count)
    return out


def overrides_problem(value: str) -> str | None:
    """Why a max.connections.per.ip.overrides value is refused, or None."""
    try:
        counts = parse_overrides(value)
    except ValueError:
        return "Expected a comma separated list of host:count pairs"
    if any(not host for host in counts) or any(n < 0 for n in counts.values()):
        return "Expected a comma separated list of host:count pairs with counts >= 0"
    return None


class ConfigError(ValueError):
    """A config the cluster refuses: unknown, or a value Kafka would not accept."""


class BrokerConfig(NamedTuple):
    """A broker config: Kafka's default, its check, and whether it may change while running."""

    default: str
    check: Check
    dynamic: bool


BROKER: dict[str, BrokerConfig] = {
    # the mock applies these
    "num.partitions": BrokerConfig("1", _int_at_least(1), True),
    "default.replication.factor": BrokerConfig("1", _int_at_least(1), False),
    "auto.create.topics.enable": BrokerConfig("true", _bool, False),
    "log.dirs": BrokerConfig("", lambda value: None, False),
    "message.max.bytes": BrokerConfig("1048588", _int_at_least(0), True),
    "socket.request.max.bytes": BrokerConfig(str(100 * 1024 * 1024), _int_at_least(1), False),
    "queued.max.request.bytes": BrokerConfig("-1", _long_at_least(-(2**63)), False),
    "max.connections": BrokerConfig(str(2**31 - 1), _int_at_least(0), True),
    "max.connections.per.ip": BrokerConfig(str(2**31 - 1), _int_at_least(0), True),
    "max.connections.per.ip.overrides": BrokerConfig("", overrides_problem, True),
    "broker.heartbeat.interval.ms": BrokerConfig("2000", _int_at_least(1), False),
    "broker.session.timeout.ms": BrokerConfig("9000", _int_at_least(1), False),
    "replica.lag.time.max.ms": BrokerConfig("30000", _long_at_least(1), False),
    "group.initial.rebalance.delay.ms": BrokerConfig("3000", _int_at_least(0), False),
    # Kafka's log.* synonyms of topic configs (stored under the topic config's name)
    "log.retention.ms": BrokerConfig("604800000", _long_at_least(-1), True),
    "log.retention.minutes": BrokerConfig("10080", _int_at_least(-1), True),
    "log.retention.hours": BrokerConfig("168", _int_at_least(-1), True),
    "log.retention.bytes": BrokerConfig("-1", _long_at_least(-1), True),
    "log.segment.bytes": BrokerConfig("1073741824", _int_at_least(1024 * 1024), True),
    "log.cleanup.policy": BrokerConfig("delete", KNOWN["cleanup.policy"][1], True),
    "log.flush.interval.messages": BrokerConfig("9223372036854775807", _long_at_least(1), True),
    "log.flush.interval.ms": BrokerConfig("9223372036854775807", _long_at_least(0), True),
    "log.roll.ms": BrokerConfig("604800000", _long_at_least(1), True),
    "log.roll.hours": BrokerConfig("168", _int_at_least(1), True),
    "log.cleaner.delete.retention.ms": BrokerConfig("86400000", _long_at_least(0), True),
    "log.cleaner.min.cleanable.ratio": BrokerConfig(
        "0.5", KNOWN["min.cleanable.dirty.ratio"][1], True
    ),
    "log.cleaner.min.compaction.lag.ms": BrokerConfig("0", _long_at_least(0), True),
    "log.cleaner.max.compaction.lag.ms": BrokerConfig(
        "9223372036854775807", _long_at_least(1), True
    ),
    # the broker's log cleaner task (broker/cleaner.py): how often retention is checked
    "log.retention.check.interval.ms": BrokerConfig("300000", _long_at_least(1), False),
    # kept and validated; the mock's internal topics and coordinators do not act on them
    "offsets.topic.replication.factor": BrokerConfig("3", _int_at_least(1), False),
    "offsets.topic.num.partitions": BrokerConfig("50", _int_at_least(1), False),
    "group.min.session.timeout.ms": BrokerConfig("6000", _int_at_least(0), False),
    "group.max.session.timeout.ms": BrokerConfig("1800000", _int_at_least(0), False),
    "group.consumer.session.timeout.ms": BrokerConfig("45000", _int_at_least(1), False),
    "group.consumer.heartbeat.interval.ms": BrokerConfig("5000", _int_at_least(1), False),
    "group.consumer.assignors": BrokerConfig("uniform,range", lambda value: None, False),
    "group.consumer.max.size": BrokerConfig(str(2**31 - 1), _int_at_least(1), False),
    "transaction.max.timeout.ms": BrokerConfig("900000", _int_at_least(1), False),
    "transaction.state.log.replication.factor": BrokerConfig("3", _int_at_least(1), False),
    "transaction.state.log.min.isr": BrokerConfig("2", _int_at_least(1), False),
    "transaction.state.log.num.partitions": BrokerConfig("50", _int_at_least(1), False),
    "transactional.id.expiration.ms": BrokerConfig("604800000", _int_at_least(1), False),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": BrokerConfig(
        "10000", _int_at_least(1), False
    ),
    # common server.properties settings Kafka 4.4 takes: kept and validated, not acted on (the
    # mock's cleaner runs in its brokers' task, its threads and fetchers are trio tasks); the
    # log cleaner's, background.threads and num.replica.fetchers change while Kafka runs
    "log.cleaner.enable": BrokerConfig("true", _bool, False),
    "log.cleaner.threads": BrokerConfig("1", _int_at_least(0), True),
    "log.cleaner.backoff.ms": BrokerConfig("15000", _long_at_least(0), True),
    "log.cleaner.dedupe.buffer.size": BrokerConfig("134217728", _long_at_least(0), True),
    "log.cleaner.io.buffer.size": BrokerConfig("524288", _int_at_least(0), True),
    "background.threads": BrokerConfig("10", _int_at_least(1), True),
    "num.replica.fetchers": BrokerConfig("1", _int_at_least(1), True),
    "replica.fetch.max.bytes": BrokerConfig("1048576", _int_at_least(0), False),
    "auto.leader.rebalance.enable": BrokerConfig("true", _bool, False),
    "leader.imbalance.check.interval.seconds": BrokerConfig("300", _long_at_least(1), False),
    "delete.topic.enable": BrokerConfig("true", _bool, False),
    "controlled.shutdown.enable": BrokerConfig("true", _bool, False),
    "offsets.retention.minutes": BrokerConfig("10080", _int_at_least(1), False),
    "group.max.size": BrokerConfig(str(2**31 - 1), _int_at_least(1), False),
    "fetch.max.bytes": BrokerConfig("57671680", _int_at_least(1024), False),
    # replication throttles (kafka-reassign-partitions sets and clears them on every broker)
    "leader.replication.throttled.rate": BrokerConfig(str(2**63 - 1), _long_at_least(0), True),
    "follower.replication.throttled.rate": BrokerConfig(str(2**63 - 1), _long_at_least(0), True),
    "replica.alter.log.dirs.io.max.bytes.per.second": BrokerConfig(
        str(2**63 - 1), _long_at_least(0), True
    ),
    # client quotas: the rate window (broker/quotas.py)
    "quota.window.num": BrokerConfig("11", _int_at_least(1), False),
    "quota.window.size.seconds": BrokerConfig("1", _int_at_least(1), False),
    # KIP-714: the largest PushTelemetry payload (handlers/telemetry.py)
    "telemetry.max.bytes": BrokerConfig("1048576", _int_at_least(1), False),
    # security (issue 21): read by a secured cluster's listeners and controller
    "connections.max.reauth.ms": BrokerConfig("0", _long_at_least(0), False),
    "connection.failed.authentication.delay.ms": BrokerConfig("100", _int_at_least(0), False),
    "delegation.token.secret.key": BrokerConfig("", lambda value: None, False),
}

# the broker defaults of the group configs (group.share.*, group.streams.*), with their checks
BROKER.update(
    (broker_key, BrokerConfig(default, check, False))
    for broker_key, default, check in GROUP_CONFIGS.values()
    if broker_key and broker_key not in BROKER
)
BROKER["group.share.max.size"] = BrokerConfig("200", _int_at_least(1), False)
# the mock's own: keep the streams topology descriptions members send (handlers.streams_groups)
BROKER["kipwire.streams.topology.description.store"] = BrokerConfig("false", _bool, False)
# the streams warm-up settings, acted on by the mock's own warm-up extension (off by default,
# as Kafka 4.4 assigns no warm-up tasks: coordinators.streams_assignor)
BROKER["group.streams.num.warmup.replicas"] = BrokerConfig("2", _int_at_least(0), False)
BROKER["group.streams.acceptable.recovery.lag"] = BrokerConfig("10000", _long_at_least(0), False)
BROKER["kipwire.streams.warmup.tasks"] = BrokerConfig("false", _bool, False)

#: The mock's own defaults where they differ from Kafka's: shorter timings for tests.
MOCK_DEFAULTS = {
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "broker.heartbeat.interval.ms": "200",
    # Kafka's default is 3000; a mock answers at once unless a test asks for the delay
    "group.initial.rebalance.delay.ms": "0",
    # Kafka's default is 5000: a KIP-848 member learns of a rebalance at its next heartbeat
    "group.consumer.heartbeat.interval.ms": "500",
    "socket.request.max.bytes": str(100 * 1024 * 1024),
    # Kafka's default is -1 (unbounded); a mock that runs all day bounds the request bytes it
    # holds, with room beside one frame of socket.request.max.bytes for small requests (raised
    # to socket.request.max.bytes when that is set higher: `cross_checked`)
    "queued.max.request.bytes": str(128 * 1024 * 1024),
    # Kafka's default is 9000; short enough here that a lost broker is fenced within 3 s
    "broker.session.timeout.ms": "2000",
    # Kafka's default is 30000; a follower that stops fetching leaves the ISR within 3 s here
    "replica.lag.time.max.ms": "1500",
    # Kafka's default is 300000; a pass visits only logs with several segments, so it is cheap
    "log.retention.check.interval.ms": "1000",
}

#: Every name a cluster config may have: broker configs and the topic configs' defaults.
KNOWN_NAMES = frozenset(BROKER) | frozenset(known("4.4"))

#: server.properties keys of a real Kafka node that mean nothing to the mock (its listeners,
#: roles and quorum are its own): a config file may hold them, and they are skipped.
IGNORED = frozenset(
    {
        "node.id",
        "broker.id",
        "process.roles",
        "listeners",
        "advertised.listeners",
        "controller.listener.names",
        "inter.broker.listener.name",
        "listener.security.protocol.map",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "num.network.threads",
        "num.io.threads",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "num.recovery.threads.per.data.dir",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
    }
)

#: A broker config stored as the cluster default of a topic config, and its unit in ms.
SYNONYMS: dict[str, tuple[str, int]] = {
    "log.retention.ms": ("retention.ms", 1),
    "log.retention.minutes": ("retention.ms", 60_000),
    "log.retention.hours": ("retention.ms", 3_600_000),
    "log.retention.bytes": ("retention.bytes", 1),
    "log.segment.bytes": ("segment.bytes", 1),
    "log.cleanup.policy": ("cleanup.policy", 1),
    "log.flush.interval.messages": ("flush.messages", 1),
    "log.flush.interval.ms": ("flush.ms", 1),
    "log.roll.ms": ("segment.ms", 1),
    "log.roll.hours": ("segment.ms", 3_600_000),
    "log.cleaner.delete.retention.ms": ("delete.retention.ms", 1),
    "log.cleaner.min.cleanable.ratio": ("min.cleanable.dirty.ratio", 1),
    "log.cleaner.min.compaction.lag.ms": ("min.compaction.lag.ms", 1),
    "log.cleaner.max.compaction.lag.ms": ("max.compaction.lag.ms", 1),
}


def unknown_broker_config(name: str) -> str:
    """Kafka's message for a server.properties key it does not know, with a did-you-mean."""
    return f"The configuration '{name}' was supplied but isn't a known config." + did_you_mean(
        name, [*BROKER, *known("4.4")]
    )


def invalid_value(name: str, value: str, problem: str) -> str:
    """Kafka's ConfigException message for a value its check refuses."""
    return f"Invalid value {value} for configuration {name}: {problem}"


def broker_config_problem(name: str, value: str | None, release: str = "4.4") -> str | None:
    """Why a cluster-level config (broker config, or a topic config's default) is refused."""
    topic_configs = known(release)
    if name in BROKER:
        check = BROKER[name].check
    elif name in topic_configs:
        check = topic_configs[name][1]
    else:
        return unknown_broker_config(name)
    if value is None:
        return None
    problem = check(value)
    return None if problem is None else invalid_value(name, value, problem)


def dynamic_problem(name: str) -> str | None:
    """Why IncrementalAlterConfigs may not change a broker config at run time, or None."""
    config = BROKER.get(name)
    if config is None or config.dynamic:
        return None
    return f"Cannot update these configs dynamically: Set({name})"


def normalise(config: Mapping[str, str | None]) -> dict[str, str | None]:
    """`log.*` synonyms rewritten to the topic config they default (hours and minutes to ms)."""
    out: dict[str, str | None] = {}
    # the finest unit wins, as in Kafka (log.retention.ms over .minutes over .hours)
    ordered = sorted(config.items(), key=lambda item: -SYNONYMS.get(item[0], ("", 1))[1])
    for name, value in ordered:
        target, unit = SYNONYMS.get(name, (name, 1))
        if value is not None and unit != 1:
            value = str(int(value.strip()) * unit) if int(value.strip()) >= 0 else "-1"
        out[target] = value
    return out


def check_cluster_config(config: Mapping[str, object]) -> dict[str, str]:
    """A cluster's config as strings, synonyms normalised; ConfigError naming the first problem."""
    text = {name: str(value) for name, value in config.items()}
    for name, value in text.items():
        problem = broker_config_problem(name, value)
        if problem is not None:
            raise ConfigError(problem)
    return {k: v for k, v in normalise(text).items() if v is not None}


def cross_checked(config: Mapping[str, str], given: Mapping[str, str]) -> dict[str, str]:
    """A cluster's whole config (`given` over the defaults) after the checks Kafka makes between
    configs at startup; ConfigError with Kafka's message. The mock's bound on request memory
    follows socket.request.max.bytes up unless queued.max.request.bytes was given."""
    out = dict(config)
    socket_max = int(out["socket.request.max.bytes"])
    if "queued.max.request.bytes" not in given:
        out["queued.max.request.bytes"] = str(max(int(out["queued.max.request.bytes"]), socket_max))
    queued = int(out["queued.max.request.bytes"])
    if 0 < queued < socket_max:
        raise ConfigError(
            "requirement failed: queued.max.request.bytes must be larger or equal to "
            "socket.request.max.bytes"
        )
    if out.get("max.connections.per.ip") == "0" and not out.get("max.connections.per.ip.overrides"):
        raise ConfigError(
            "requirement failed: max.connections.per.ip can be set to zero only if "
            "max.connections.per.ip.overrides property is set."
        )
    return out


def cluster_config(config: Mapping[str, object]) -> dict[str, str]:
    """A cluster's whole config: `config` checked, over the mock's defaults, cross-checked."""
    given = check_cluster_config(config)
    return cross_checked({**MOCK_DEFAULTS, **given}, given)
