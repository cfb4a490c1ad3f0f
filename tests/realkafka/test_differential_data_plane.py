"""The same data-plane scenarios against real Kafka 4.4.0 and against kipwire's MockCluster: what
the clients see must be the same (records, batches' codecs, group assignments, transactions,
admin answers), and so must the error on every mistake of `EXPECTED_ERRORS`.

The mock runs 3 brokers configured as `kafka_harness` configures its nodes; the real side is
the session's single-node cluster, so what depends on the broker count is compared to each
cluster's own count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import data_plane_scenarios as scenarios
import mistake_scenarios as mistakes
import pytest
from kafka_harness import KafkaCluster

from kipwire.mockbroker import MockCluster, Semantics

MOCK_BROKERS = 3
#: kafka_harness.KafkaCluster.properties, the keys the mock knows, for 3 brokers.
HARNESS_CONFIG = {
    "auto.create.topics.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
    "default.replication.factor": "3",
    "min.insync.replicas": "1",
}

#: mistake -> (real Kafka's answer, the mock's answer, why they differ); a new difference goes
#: here with its reason, or gets fixed. Empty: every mistake is answered as Kafka 4.4 answers it.
KNOWN_DIFFERENCES: dict[str, tuple[str, str, str]] = {}


#: Topic config values at and around the edges of what Kafka accepts, for CreateTopics.
CONFIG_VALUES = [
    ("segment.bytes", "1000"),
    ("segment.bytes", "1048576"),
    ("compression.gzip.level", "0"),
    ("compression.gzip.level", "-1"),
    ("compression.gzip.level", "10"),
    ("compression.lz4.level", "17"),
    ("compression.lz4.level", "18"),
    ("compression.zstd.level", "-131073"),
    ("compression.zstd.level", "22"),
    ("min.cleanable.dirty.ratio", "0.9"),
    ("min.cleanable.dirty.ratio", "1.5"),
    ("flush.messages", "0"),
    ("flush.ms", "-1"),
    ("segment.ms", "0"),
    ("segment.index.bytes", "3"),
    ("max.compaction.lag.ms", "0"),
    ("local.retention.ms", "-2"),
    ("local.retention.ms", "-3"),
    ("leader.replication.throttled.replicas", "*"),
    ("leader.replication.throttled.replicas", "0:1,1:2"),
    ("leader.replication.throttled.replicas", "bogus"),
    ("preallocate", "yes"),
    ("remote.storage.enable", "true"),
    ("message.timestamp.type", "LogAppendTime"),
    ("cleanup.policy", ""),
    ("cleanup.policy", "compact, delete"),
    ("retention.ms", " 5 "),
    ("retention.ms", "+5"),
    ("index.interval.bytes", "-1"),
    ("delete.retention.ms", "-1"),
    ("compression.type", "ZSTD"),
    ("unclean.leader.election.enable", " TRUE "),
    ("max.message.bytes", "0"),
    ("unclean.recovery.strategy", "Balanced"),
]

#: (key, value) -> (real Kafka's answer, the mock's, why they differ).
KNOWN_CONFIG_DIFFERENCES: dict[tuple[str, str], tuple[str, str, str]] = {
    ("unclean.recovery.strategy", "Balanced"): (
        "INVALID_CONFIG",
        "NONE",
        "KIP-966's unclean recovery configs are in no release (4.4.0 neither); the mock keeps them "
        "for its Semantics.KIP preset, whatever the preset",
    ),
}


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    """bootstrap.servers of a 3-broker mock cluster configured like the real harness, presenting
    Kafka 4.4 (the harness's release)."""
    with MockCluster(
        brokers=MOCK_BROKERS, semantics=Semantics.KAFKA_4_4, config=HARNESS_CONFIG
    ) as cluster:
        yield cluster.bootstrap_servers


def both(real: str, mock: str, scenario: Callable[[str], Any]) -> tuple[Any, Any]:
    """The scenario's result against real Kafka, then against the mock."""
    return scenario(real), scenario(mock)


def roundtrip_view(result: dict[str, Any]) -> tuple[bool, set[str], int]:
    """What a client sees of a round trip: all records back in order, the batches' codecs and
    how many records they hold (how the producer split them into batches may differ)."""
    return (
        result["received"] == result["sent"],
        {c for c, _n in result["batches"]},
        sum(n for _c, n in result["batches"]),
    )


@pytest.mark.parametrize("producer", ["confluent", "kafka-python"])
@pytest.mark.parametrize("compression", scenarios.COMPRESSIONS)
def test_compression_roundtrip_alike(
    bootstrap: str, mock_bootstrap: str, compression: str, producer: str
) -> None:
    real, mock = both(
        bootstrap,
        mock_bootstrap,
        lambda b: scenarios.compression_roundtrip(b, compression, producer),
    )
    assert roundtrip_view(mock) == roundtrip_view(real) == (True, {compression}, 300)


def rebalance_view(result: dict[str, Any]) -> tuple[set[int], set[int], bool, list[int]]:
    """Every partition first to the lone member, then split without overlap; the split's sizes
    (which member gets which partitions depends on the member ids)."""
    return (
        result["alone"],
        result["a"] | result["b"],
        not result["a"] & result["b"],
        sorted([len(result["a"]), len(result["b"])]),
    )


@pytest.mark.parametrize("joiner", ["confluent", "kafka-python"])
def test_group_rebalance_alike(bootstrap: str, mock_bootstrap: str, joiner: str) -> None:
    real, mock = both(bootstrap, mock_bootstrap, lambda b: scenarios.group_rebalance(b, 4, joiner))
    assert (
        rebalance_view(mock) == rebalance_view(real) == ({0, 1, 2, 3}, {0, 1, 2, 3}, True, [2, 2])
    )


def idempotent_view(result: dict[str, Any]) -> tuple[list[str], bool, int, bool]:
    """Delivery errors, records back in order, how many producer ids, sequences without a gap."""
    expected, contiguous = 0, True
    for base, count in result["sequences"]:
        contiguous &= base == expected
        expected += count
    return (
        result["errors"],
        result["received"] == result["sent"],
        len(result["producer_ids"]),
        contiguous and expected == len(result["sent"]),
    )


def test_idempotent_producer_alike(bootstrap: str, mock_bootstrap: str) -> None:
    real, mock = both(bootstrap, mock_bootstrap, scenarios.idempotent_produce)
    assert idempotent_view(mock) == idempotent_view(real) == ([], True, 1, True)


TXN_READS = {
    "read_committed": [b"commit"] * 5 + [b"commit2"] * 5,
    "read_uncommitted": [b"commit"] * 5 + [b"abort"] * 5 + [b"commit2"] * 5,
}


def test_confluent_transactions_alike(bootstrap: str, mock_bootstrap: str) -> None:
    real, mock = both(bootstrap, mock_bootstrap, scenarios.transactions)
    assert mock == real == TXN_READS


def test_kafka_python_transactions_alike(bootstrap: str, mock_bootstrap: str) -> None:
    real, mock = both(bootstrap, mock_bootstrap, scenarios.kafka_python_transactions)
    for result in (real, mock):
        # one producer id for the data and markers of all three transactions
        assert len(result.pop("producer_ids")) == 1
    assert mock == real == TXN_READS


def test_admin_calls_alike(kafka_single: KafkaCluster, bootstrap: str, mock_bootstrap: str) -> None:
    real, mock = both(bootstrap, mock_bootstrap, scenarios.admin_calls)
    assert real.pop("cluster_nodes") == len(kafka_single.broker_ids())
    assert mock.pop("cluster_nodes") == MOCK_BROKERS
    assert (
        mock
        == real
        == {
            "retention_before": "60000",
            "retention_after": "120000",
            "partitions_after_grow": 4,
            "cluster_id_set": True,
            "listed_after_delete": False,
        }
    )


#: Topic configs the mock describes and Kafka 4.4.0 does not: the KIP's unclean recovery.
MOCK_ONLY_CONFIGS = {"unclean.recovery.strategy", "unclean.recovery.timeout.ms"}
#: config -> (Kafka 4.4.0's default, why the mock does not describe it); empty: it describes all
KAFKA_ONLY_CONFIGS: dict[str, tuple[str, str]] = {}
#: config -> why a new topic's value differs: the harness's broker settings the mock lacks.
DEFAULT_DIFFERENCES = {
    "segment.bytes": "kafka_harness sets log.segment.bytes=16 MiB, a broker setting the mock "
    "has no use for (its logs are in memory); the mock describes Kafka's default, 1 GiB",
}


def test_topic_config_defaults_alike(bootstrap: str, mock_bootstrap: str) -> None:
    real, mock = both(bootstrap, mock_bootstrap, scenarios.topic_config_defaults)
    assert set(mock) - set(real) == MOCK_ONLY_CONFIGS
    assert {k: real[k] for k in set(real) - set(mock)} == {
        k: default for k, (default, _why) in KAFKA_ONLY_CONFIGS.items()
    }
    differing = {k for k in real if k in mock and real[k] != mock[k]}
    assert differing == set(DEFAULT_DIFFERENCES)
    assert len(real) >= 30


@pytest.mark.parametrize("mistake", sorted(mistakes.MISTAKES))
def test_mistake_answered_alike(bootstrap: str, mock_bootstrap: str, mistake: str) -> None:
    real, mock = both(bootstrap, mock_bootstrap, mistakes.MISTAKES[mistake])
    assert real == mistakes.EXPECTED_ERRORS[mistake]
    if mistake in KNOWN_DIFFERENCES:
        # a known difference must still be one, or its entry goes
        assert (real, mock) == KNOWN_DIFFERENCES[mistake][:2]
    else:
        assert mock == real


def test_a_keyless_record_to_a_compacted_topic_is_refused_alike(
    bootstrap: str, mock_bootstrap: str
) -> None:
    real, mock = both(bootstrap, mock_bootstrap, scenarios.keyless_to_compacted)
    assert real[0] == "INVALID_RECORD"
    assert mock == real  # the same code and message (record_errors are not compared)


@pytest.mark.parametrize(("key", "value"), CONFIG_VALUES)
def test_config_value_answered_alike(
    bootstrap: str, mock_bootstrap: str, key: str, value: str
) -> None:
    real, mock = both(bootstrap, mock_bootstrap, mistakes.create_topic_with_config(key, value))
    assert real in ("NONE", "INVALID_CONFIG")
    if (key, value) in KNOWN_CONFIG_DIFFERENCES:
        assert (real, mock) == KNOWN_CONFIG_DIFFERENCES[key, value][:2]
    else:
        assert mock == real


def test_known_differences_are_mistakes_with_reasons() -> None:
    for mistake, (real, mock, why) in KNOWN_DIFFERENCES.items():
        assert mistake in mistakes.MISTAKES and real != mock and why
