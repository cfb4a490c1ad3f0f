"""The versions Kafka 4.4 clients send that Kafka 4.1 did not serve, with real requests: topic ids
in OffsetCommit/OffsetFetch v10 and TxnOffsetCommit v6, EndTxn v5's epoch bump, ListOffsets v11,
DeleteGroups v3, and BrokerHeartbeat v2 on the controller."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode, OffsetSpec
from kipwire.mockbroker import MockCluster

GROUP = "g44"


@pytest.fixture(scope="module")
def one() -> Iterator[MockCluster]:
    """One broker: it coordinates every group and transaction."""
    with MockCluster(brokers=1) as running:
        running.create_topic("t44", partitions=2)
        yield running


def _topic_id(client: WireClient, name: str) -> uuid.UUID:
    (topic,) = client.call(ApiKey.METADATA, 12, {"topics": [{"name": name}]})["topics"]
    return topic["topic_id"]


def _commit(client: WireClient, topic_id: uuid.UUID, offset: int) -> Any:
    return client.call(
        ApiKey.OFFSET_COMMIT,
        10,
        {
            "group_id": GROUP,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [{"partition_index": 0, "committed_offset": offset}],
                }
            ],
        },
    )


def _fetch(client: WireClient, group: str, topic_id: uuid.UUID) -> Any:
    body = client.call(
        ApiKey.OFFSET_FETCH,
        10,
        {
            "groups": [
                {"group_id": group, "topics": [{"topic_id": topic_id, "partition_indexes": [0]}]}
            ]
        },
    )
    (answer,) = body["groups"]
    assert answer["error_code"] == ErrorCode.NONE
    (topic,) = answer["topics"]
    assert topic["topic_id"] == topic_id
    return topic["partitions"][0]


def test_offset_commit_and_fetch_v10_name_topics_by_id(one: MockCluster) -> None:
    with WireClient(one.bootstrap_servers) as client:
        topic_id = _topic_id(client, "t44")
        (topic,) = _commit(client, topic_id, 7)["topics"]
        assert topic["topic_id"] == topic_id
        assert topic["partitions"][0]["error_code"] == ErrorCode.NONE
        assert _fetch(client, GROUP, topic_id)["committed_offset"] == 7
        (unknown,) = _commit(client, uuid.uuid4(), 1)["topics"]
    assert unknown["partitions"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_a_transaction_with_txn_offset_commit_v6_and_end_txn_v5(one: MockCluster) -> None:
    txn = {"transactional_id": "tx44"}
    with WireClient(one.bootstrap_servers) as client:
        topic_id = _topic_id(client, "t44")
        init = client.call(ApiKey.INIT_PRODUCER_ID, 5, {**txn, "transaction_timeout_ms": 60000})
        producer = {"producer_id": init["producer_id"], "producer_epoch": init["producer_epoch"]}
        added = client.call(ApiKey.ADD_OFFSETS_TO_TXN, 4, {**txn, **producer, "group_id": "tg44"})
        assert added["error_code"] == ErrorCode.NONE
        committed = client.call(
            ApiKey.TXN_OFFSET_COMMIT,
            6,
            {
                **txn,
                **producer,
                "group_id": "tg44",
                "topics": [
                    {
                        "topic_id": topic_id,
                        "partitions": [{"partition_index": 0, "committed_offset": 3}],
                    },
                    {
                        "topic_id": uuid.uuid4(),
                        "partitions": [{"partition_index": 0, "committed_offset": 3}],
                    },
                ],
            },
        )
        codes = {t["topic_id"]: t["partitions"][0]["error_code"] for t in committed["topics"]}
        assert codes.pop(topic_id) == ErrorCode.NONE
        assert list(codes.values()) == [ErrorCode.UNKNOWN_TOPIC_ID]
        ended = client.call(ApiKey.END_TXN, 5, {**txn, **producer, "committed": True})
        assert ended["error_code"] == ErrorCode.NONE
        # transactions v2: the producer's next transaction runs at the bumped epoch
        assert (ended["producer_id"], ended["producer_epoch"]) == (
            producer["producer_id"],
            producer["producer_epoch"] + 1,
        )
        assert _fetch(client, "tg44", topic_id)["committed_offset"] == 3
        # a retry of that EndTxn (its answer lost) gets the same answer, not PRODUCER_FENCED
        retried = client.call(ApiKey.END_TXN, 5, {**txn, **producer, "committed": True})
        assert (retried["error_code"], retried["producer_epoch"]) == (
            ErrorCode.NONE,
            ended["producer_epoch"],
        )
        aborted = client.call(ApiKey.END_TXN, 5, {**txn, **producer, "committed": False})
        assert aborted["error_code"] == ErrorCode.INVALID_TXN_STATE
        bumped = {"producer_id": ended["producer_id"], "producer_epoch": ended["producer_epoch"]}
        again = client.call(ApiKey.ADD_OFFSETS_TO_TXN, 4, {**txn, **bumped, "group_id": "tg44"})
        assert again["error_code"] == ErrorCode.NONE
        stale = client.call(ApiKey.ADD_OFFSETS_TO_TXN, 4, {**txn, **producer, "group_id": "tg44"})
    assert stale["error_code"] == ErrorCode.PRODUCER_FENCED


@pytest.mark.parametrize(
    ("spec", "expected"),
    [(OffsetSpec.EARLIEST, 0), (OffsetSpec.EARLIEST_PENDING_UPLOAD, -1)],
    ids=["earliest", "earliest-pending-upload"],
)
def test_list_offsets_v11(one: MockCluster, spec: int, expected: int) -> None:
    with WireClient(one.bootstrap_servers) as client:
        body = client.call(
            ApiKey.LIST_OFFSETS,
            11,
            {
                "replica_id": -1,
                "topics": [
                    {"name": "t44", "partitions": [{"partition_index": 1, "timestamp": spec}]}
                ],
            },
        )
    (part,) = body["topics"][0]["partitions"]
    # no tiered storage in the mock: nothing is pending upload
    assert (part["error_code"], part["offset"]) == (ErrorCode.NONE, expected)


def test_delete_groups_v3(one: MockCluster) -> None:
    with WireClient(one.bootstrap_servers) as client:
        _commit(client, _topic_id(client, "t44"), 1)
        body = client.call(ApiKey.DELETE_GROUPS, 3, {"groups_names": [GROUP]})
    (result,) = body["results"]
    assert (result["group_id"], result["error_code"]) == (GROUP, ErrorCode.NONE)
    assert result["error_message"] is None


@pytest.mark.parametrize(
    ("version", "stale"), [(5, "ILLEGAL_GENERATION"), (6, "STALE_MEMBER_EPOCH")]
)
def test_txn_offset_commit_checks_the_kip848_member(
    one: MockCluster, version: int, stale: str
) -> None:
    group, txn = f"txg{version}", {"transactional_id": f"txm{version}"}
    with WireClient(one.bootstrap_servers) as client:
        topic_id = _topic_id(client, "t44")
        joined = client.call(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            1,
            {
                "group_id": group,
                "member_id": str(uuid.uuid4()),
                "member_epoch": 0,
                "rebalance_timeout_ms": 5000,
                "subscribed_topic_names": ["t44"],
                "topic_partitions": [],
            },
        )
        assert joined["error_code"] == ErrorCode.NONE
        init = client.call(ApiKey.INIT_PRODUCER_ID, 5, {**txn, "transaction_timeout_ms": 60000})
        producer = {"producer_id": init["producer_id"], "producer_epoch": init["producer_epoch"]}
        client.call(ApiKey.ADD_OFFSETS_TO_TXN, 4, {**txn, **producer, "group_id": group})

        def commit(member: str, epoch: int) -> str:
            topic = {"partitions": [{"partition_index": 0, "committed_offset": 5}]}
            topic.update({"topic_id": topic_id} if version >= 6 else {"name": "t44"})
            body = client.call(
                ApiKey.TXN_OFFSET_COMMIT,
                version,
                {
                    **txn,
                    **producer,
                    "group_id": group,
                    "generation_id_or_member_epoch": epoch,
                    "member_id": member,
                    "topics": [topic],
                },
            )
            return ErrorCode(body["topics"][0]["partitions"][0]["error_code"]).name

        member, epoch = joined["member_id"], joined["member_epoch"]
        assert commit("someone-else", epoch) == "UNKNOWN_MEMBER_ID"
        assert commit(member, epoch + 1) == stale
        assert commit(member, epoch) == "NONE"
