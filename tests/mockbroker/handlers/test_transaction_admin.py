"""Transaction tooling on the wire: ListTransactions filters, DescribeTransactions, and
DescribeProducers / WriteTxnMarkers on a partition's leader and elsewhere."""

from __future__ import annotations

import pytest
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster


@pytest.fixture(scope="module")
def cluster():
    """One broker, so it coordinates every transactional id and leads every partition."""
    with MockCluster(brokers=1) as running:
        running.create_topic("t", partitions=1)
        yield running


@pytest.fixture
def client(cluster):
    with WireClient(cluster.bootstrap_servers) as connection:
        yield connection


def _begin(client: WireClient, txn_id: str) -> int:
    pid = client.call(
        ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": txn_id, "transaction_timeout_ms": 60000}
    )["producer_id"]
    added = client.call(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        3,
        {
            "v3_and_below_transactional_id": txn_id,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": "t", "partitions": [0]}],
        },
    )
    assert (
        added["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"]
        == ErrorCode.NONE
    )
    batch = build_batch(
        [{"value": b"v"}], producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True
    )
    client.call(
        ApiKey.PRODUCE,
        9,
        {
            "transactional_id": txn_id,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    return pid


def test_list_and_describe_transactions(client):
    pid = _begin(client, "orders-1")
    listed = client.call(
        ApiKey.LIST_TRANSACTIONS,
        2,
        {
            "state_filters": ["Ongoing", "Bogus"],
            "producer_id_filters": [],
            "duration_filter": -1,
            "transactional_id_pattern": "orders-.*",
        },
    )
    assert listed["unknown_state_filters"] == ["Bogus"]
    assert [(t["transactional_id"], t["producer_id"]) for t in listed["transaction_states"]] == [
        ("orders-1", pid)
    ]
    long_running = client.call(
        ApiKey.LIST_TRANSACTIONS,
        1,
        {"state_filters": [], "producer_id_filters": [pid], "duration_filter": 3_600_000},
    )
    assert long_running["transaction_states"] == []  # it began less than an hour ago
    bad = client.call(
        ApiKey.LIST_TRANSACTIONS,
        2,
        {"state_filters": [], "producer_id_filters": [], "transactional_id_pattern": "("},
    )
    assert bad["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION

    described = client.call(
        ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["orders-1", "nobody"]}
    )["transaction_states"]
    assert described[0]["transaction_state"] == "Ongoing"
    assert described[0]["transaction_start_time_ms"] > 0
    assert described[0]["topics"] == [{"topic": "t", "partitions": [0]}]
    assert described[1]["error_code"] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


def test_a_completed_transaction_keeps_its_start_time_until_the_next_init(client):
    pid = _begin(client, "orders-3")

    def described() -> dict:
        return client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["orders-3"]})[
            "transaction_states"
        ][0]

    started = described()["transaction_start_time_ms"]
    ended = client.call(
        ApiKey.END_TXN,
        4,
        {
            "transactional_id": "orders-3",
            "producer_id": pid,
            "producer_epoch": 0,
            "committed": True,
        },
    )
    assert ended["error_code"] == ErrorCode.NONE
    done = described()
    assert (done["transaction_state"], done["topics"]) == ("CompleteCommit", [])
    assert done["transaction_start_time_ms"] == started > 0  # kafka-transactions describe shows it
    client.call(
        ApiKey.INIT_PRODUCER_ID,
        4,
        {
            "transactional_id": "orders-3",
            "transaction_timeout_ms": 60000,
            "producer_id": pid,
            "producer_epoch": 0,
        },
    )
    assert described()["transaction_start_time_ms"] == -1


def test_markers_close_open_transactions_unless_fenced(client):
    pid = _begin(client, "orders-2")

    def producers() -> dict[int, dict]:
        response = client.call(
            ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "t", "partition_indexes": [0]}]}
        )
        part = response["topics"][0]["partitions"][0]
        assert part["error_code"] == ErrorCode.NONE
        return {p["producer_id"]: p for p in part["active_producers"]}

    assert producers()[pid]["current_txn_start_offset"] >= 0
    # no marker yet: Kafka's producer state has no coordinator epoch (-1) until one is written
    assert producers()[pid]["coordinator_epoch"] == -1

    def abort(epoch: int) -> int:
        response = client.call(
            ApiKey.WRITE_TXN_MARKERS,
            1,
            {
                "markers": [
                    {
                        "producer_id": pid,
                        "producer_epoch": epoch,
                        "transaction_result": False,
                        "topics": [{"name": "t", "partition_indexes": [0]}],
                        "coordinator_epoch": 0,
                    }
                ]
            },
        )
        return response["markers"][0]["topics"][0]["partitions"][0]["error_code"]

    assert abort(5) == ErrorCode.NONE  # a newer epoch fences the producer
    assert producers()[pid]["current_txn_start_offset"] == -1
    assert producers()[pid]["coordinator_epoch"] == 0  # the marker's
    assert abort(4) == ErrorCode.INVALID_PRODUCER_EPOCH
    unknown = client.call(
        ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "nope", "partition_indexes": [0]}]}
    )
    assert (
        unknown["topics"][0]["partitions"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
