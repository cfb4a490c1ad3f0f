"""ListOffsets by time against real Kafka 4.1 and against the mock: the same offsets and
timestamps for records in one batch or several, CreateTime and LogAppendTime
(timestamp_scenarios.py), and the values both must give."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import timestamp_scenarios as scenarios

from kipwire.mockbroker import MockCluster

#: records 0..9 at 0, 1, 2, 3, 4, 5, 6, 9, 7, 8 s: each query's (librdkafka offset,
#: kafka-python offset, timestamp found - BASE)
EXPECTED_BY_TIME = {
    -1: (0, 0, 0),
    0: (0, 0, 0),
    4500: (5, 5, 5000),
    5000: (5, 5, 5000),
    7000: (7, 7, 9000),
    9000: (7, 7, 9000),
    10_000: (-1, None, -1),
}


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    """A 1-broker mock, as the real side is a single node."""
    with MockCluster(brokers=1, config={"auto.create.topics.enable": "false"}) as cluster:
        yield cluster.bootstrap_servers


@pytest.mark.parametrize("batches", [1, 3, 10])
def test_create_time_offsets_alike(bootstrap: str, mock_bootstrap: str, batches: int) -> None:
    real = scenarios.create_time_offsets(bootstrap, batches)
    mock = scenarios.create_time_offsets(mock_bootstrap, batches)
    assert mock == real
    assert real == {"by_time": EXPECTED_BY_TIME, "max_timestamp": (7, 9000)}


def test_log_append_time_offsets_alike(bootstrap: str, mock_bootstrap: str) -> None:
    real = scenarios.log_append_time_offsets(bootstrap)
    mock = scenarios.log_append_time_offsets(mock_bootstrap)
    assert mock == real
    assert real == {
        "first_batch": (0, 0),
        "producers_time": (0, 0),
        "after_first": (4, 4),
        "second_later": True,
        "max_timestamp": (4, True),
    }
