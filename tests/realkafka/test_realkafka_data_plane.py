"""The data plane against real Kafka 4.1: `data_plane_scenarios`, `mistake_scenarios` and what
they must give.

The same assertions are the contract for kipwire's MockCluster: run the scenarios against its
bootstrap servers and these expectations must hold unchanged.
"""

from __future__ import annotations

import data_plane_scenarios as scenarios
import mistake_scenarios as mistakes
import pytest
from kafka_harness import KafkaCluster


@pytest.mark.parametrize("producer", ["confluent", "kafka-python"])
@pytest.mark.parametrize("compression", scenarios.COMPRESSIONS)
def test_compression_roundtrip(bootstrap: str, compression: str, producer: str) -> None:
    result = scenarios.compression_roundtrip(bootstrap, compression, producer)
    assert result["received"] == result["sent"]
    # the broker keeps the producer's batches as they came: kipwire.codec reads every one of
    # them with the codec the producer chose, and they hold every record
    assert {c for c, _n in result["batches"]} == {compression}
    assert sum(n for _c, n in result["batches"]) == len(result["sent"])


@pytest.mark.parametrize("joiner", ["confluent", "kafka-python"])
def test_group_rebalance_splits_partitions(bootstrap: str, joiner: str) -> None:
    result = scenarios.group_rebalance(bootstrap, partitions=4, joiner=joiner)
    assert result["alone"] == {0, 1, 2, 3}
    assert result["a"] and result["b"]
    assert result["a"].isdisjoint(result["b"])
    assert result["a"] | result["b"] == {0, 1, 2, 3}


def test_idempotent_producer(bootstrap: str) -> None:
    result = scenarios.idempotent_produce(bootstrap)
    assert result["errors"] == []
    assert result["received"] == result["sent"]
    (pid,) = result["producer_ids"]
    assert pid >= 0
    # sequences start at 0 and run on from batch to batch without a gap
    expected = 0
    for base, count in result["sequences"]:
        assert base == expected
        expected += count
    assert expected == len(result["sent"])


def test_transactions_read_committed_skips_aborted(bootstrap: str) -> None:
    result = scenarios.transactions(bootstrap)
    assert result["read_committed"] == [b"commit"] * 5 + [b"commit2"] * 5
    assert result["read_uncommitted"] == [b"commit"] * 5 + [b"abort"] * 5 + [b"commit2"] * 5


def test_kafka_python_transactions(bootstrap: str) -> None:
    result = scenarios.kafka_python_transactions(bootstrap)
    assert result["read_committed"] == [b"commit"] * 5 + [b"commit2"] * 5
    assert result["read_uncommitted"] == [b"commit"] * 5 + [b"abort"] * 5 + [b"commit2"] * 5
    # one producer id for the data and the markers of all three transactions
    (pid,) = result["producer_ids"]
    assert pid >= 0


def test_admin_calls(kafka_single: KafkaCluster, bootstrap: str) -> None:
    assert scenarios.admin_calls(bootstrap) == {
        "retention_before": "60000",
        "retention_after": "120000",
        "partitions_after_grow": 4,
        "cluster_nodes": len(kafka_single.broker_ids()),
        "cluster_id_set": True,
        "listed_after_delete": False,
    }


@pytest.mark.parametrize("mistake", sorted(mistakes.MISTAKES))
def test_mistakes_get_kafkas_error(bootstrap: str, mistake: str) -> None:
    assert mistakes.MISTAKES[mistake](bootstrap) == mistakes.EXPECTED_ERRORS[mistake]


def test_every_mistake_has_an_expectation() -> None:
    assert set(mistakes.MISTAKES) == set(mistakes.EXPECTED_ERRORS)
