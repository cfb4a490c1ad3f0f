"""Apache Kafka's own command-line tools (from the fetched jars) against the mock cluster:
`kafka-transactions` (every subcommand), `kafka-metadata-quorum describe`, and
`kafka-consumer-groups` on a KIP-848 consumer group."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from kafka_dist import KafkaDist

from kipwire.client import Connection
from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.controller.quorum import CONTROLLER_NODE_ID

TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TIMEOUT = 120


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as running:
        running.create_topic("t", partitions=1, replication_factor=3)
        yield running


def _tool(dist: KafkaDist, main: str, *args: str) -> str:
    return dist.tool_output(main, *args, timeout=TIMEOUT)


def _columns(output: str) -> list[list[str]]:
    """The space-aligned table kafka-consumer-groups prints, one list of cells a line."""
    return [line.split() for line in output.splitlines() if line.strip()]


def _rows(output: str) -> list[list[str]]:
    """The tab-separated table a tool prints, header first, cells stripped (each line ends
    with a tab)."""
    return [
        [cell.strip() for cell in line.rstrip("\t").split("\t")]
        for line in output.splitlines()
        if line.strip()
    ]


def _hanging_transaction(mock: MockCluster) -> tuple[int, int]:
    """A transactional batch on t-0 whose producer no transaction coordinator knows (as a
    producer that lost its coordinator leaves behind); (producer id, its offset)."""
    leader = mock.partition("t", 0).leader
    address = mock.bootstrap_servers.split(",")[leader - 1]
    connection = Connection(address, client_id="hanging", timeout=10)
    try:
        pid = connection.call(
            ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1}
        )["producer_id"]
        batch = build_batch(
            [{"value": b"left open"}],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        )
        response = connection.call(
            ApiKey.PRODUCE,
            9,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout_ms": 5000,
                "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
            },
        )
    finally:
        connection.close()
    part = response["responses"][0]["partition_responses"][0]
    assert part["error_code"] == ErrorCode.NONE
    return pid, part["base_offset"]


def test_every_kafka_transactions_subcommand(kafka_dist, mock):
    bootstrap = ["--bootstrap-server", mock.bootstrap_servers]
    done = Producer({"bootstrap.servers": mock.bootstrap_servers, "transactional.id": "tx-done"})
    done.init_transactions(30)
    done.begin_transaction()
    done.produce("t", b"committed")
    done.commit_transaction(30)
    open_ = Producer({"bootstrap.servers": mock.bootstrap_servers, "transactional.id": "tx-open"})
    open_.init_transactions(30)
    open_.begin_transaction()
    open_.produce("t", b"in flight")
    assert open_.flush(30) == 0

    listed = _rows(_tool(kafka_dist, TRANSACTIONS, *bootstrap, "list"))
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    states = {row[0]: row[3] for row in listed[1:]}
    assert states == {"tx-done": "CompleteCommit", "tx-open": "Ongoing"}

    described = _rows(
        _tool(kafka_dist, TRANSACTIONS, *bootstrap, "describe", "--transactional-id", "tx-open")
    )
    row = dict(zip(described[0], described[1], strict=True))
    assert (row["TransactionState"], row["TopicPartitions"]) == ("Ongoing", "t-0")

    hanging_pid, hanging_offset = _hanging_transaction(mock)
    leader = str(mock.partition("t", 0).leader)
    producers = _rows(
        _tool(
            kafka_dist,
            TRANSACTIONS,
            *bootstrap,
            "describe-producers",
            "--topic",
            "t",
            "--partition",
            "0",
        )
    )
    open_offsets = {int(r[0]): r[5] for r in producers[1:]}
    assert open_offsets[hanging_pid] == str(hanging_offset)
    assert len([o for o in open_offsets.values() if o != "None"]) == 2  # tx-open and the hanging

    # only the producer no coordinator knows is hanging; tx-open's coordinator vouches for it
    hanging = _rows(
        _tool(
            kafka_dist,
            TRANSACTIONS,
            *bootstrap,
            "find-hanging",
            "--broker-id",
            leader,
            "--max-transaction-timeout",
            "0",
        )
    )
    assert [(int(r[2]), int(r[5])) for r in hanging[1:]] == [(hanging_pid, hanging_offset)]

    _tool(
        kafka_dist,
        TRANSACTIONS,
        *bootstrap,
        "abort",
        "--topic",
        "t",
        "--partition",
        "0",
        "--start-offset",
        str(hanging_offset),
    )
    after = _rows(
        _tool(
            kafka_dist,
            TRANSACTIONS,
            *bootstrap,
            "describe-producers",
            "--topic",
            "t",
            "--partition",
            "0",
        )
    )
    assert {int(r[0]): r[5] for r in after[1:]}[hanging_pid] == "None"
    open_.abort_transaction(30)


def test_kafka_metadata_quorum_describe(kafka_dist, mock):
    bootstrap = ["--bootstrap-server", mock.bootstrap_servers]
    status = _tool(kafka_dist, QUORUM, *bootstrap, "describe", "--status")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["ClusterId"].strip() == "kipwire-mock"
    assert fields["LeaderId"].strip() == str(CONTROLLER_NODE_ID)
    assert int(fields["HighWatermark"]) > 0
    assert fields["CurrentObservers"].strip() == '[{"id": 1}, {"id": 2}, {"id": 3}]'
    replication = _rows(_tool(kafka_dist, QUORUM, *bootstrap, "describe", "--replication"))
    status_of = {row[0]: row[-1] for row in replication[1:]}
    assert status_of == {
        str(CONTROLLER_NODE_ID): "Leader",
        "1": "Observer",
        "2": "Observer",
        "3": "Observer",
    }


def test_kafka_consumer_groups_on_a_kip848_group(kafka_dist, mock):
    bootstrap = ["--bootstrap-server", mock.bootstrap_servers]
    mock.create_topic("cg-topic", partitions=2, replication_factor=3)
    producer = Producer({"bootstrap.servers": mock.bootstrap_servers})
    for i in range(20):
        producer.produce("cg-topic", b"%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    member = Consumer(
        {
            "bootstrap.servers": mock.bootstrap_servers,
            "group.id": "cg",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    member.subscribe(["cg-topic"])
    read, deadline = 0, time.monotonic() + 30
    while read < 20:
        assert time.monotonic() < deadline
        read += sum(1 for m in member.consume(100, 0.1) if m.error() is None)
    member.commit(asynchronous=False)

    command = (kafka_dist, CONSUMER_GROUPS, *bootstrap)
    listed = _columns(_tool(*command, "--list", "--type"))
    assert ["cg", "Consumer"] in listed
    state = _columns(_tool(*command, "--describe", "--group", "cg", "--state"))
    assert state[1][-3:] == ["uniform", "Stable", "1"]
    members = _columns(_tool(*command, "--describe", "--group", "cg", "--members", "--verbose"))
    row = dict(zip(members[0], members[1], strict=True))
    assert (row["CURRENT-ASSIGNMENT"], row["TARGET-ASSIGNMENT"]) == ("cg-topic:0,1", "cg-topic:0,1")
    offsets = _columns(_tool(*command, "--describe", "--group", "cg"))
    assert sorted((r[2], r[3], r[5]) for r in offsets[1:]) == [("0", "10", "0"), ("1", "10", "0")]

    refused = _tool(*command, "--delete-offsets", "--group", "cg", "--topic", "cg-topic")
    assert refused.count("GroupSubscribedToTopicException") == 2  # a member still subscribes
    member.close()
    deleted = _tool(*command, "--delete-offsets", "--group", "cg", "--topic", "cg-topic")
    assert deleted.count("Successful") == 2
    assert "successful" in _tool(*command, "--delete", "--group", "cg")
