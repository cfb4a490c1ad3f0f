"""DescribeTopicPartitions (75): cursor paging and errors as kip-rules H.32-H.33 state them."""

from __future__ import annotations

import pytest
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster


@pytest.fixture(scope="module")
def client():
    """A connection to a cluster with topics a (3 partitions), b (2) and c (1)."""
    with MockCluster(brokers=3) as cluster:
        for name, count in (("a", 3), ("b", 2), ("c", 1)):
            cluster.create_topic(name, partitions=count, replication_factor=3)
        with WireClient(cluster.bootstrap_servers.split(",")[0]) as connection:
            yield connection


def _pages(client, topics: list[str], limit: int) -> list[tuple[list, dict | None]]:
    pages = []
    cursor = None
    for _ in range(10):
        body = client.call(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            0,
            {
                "topics": [{"name": t} for t in topics],
                "response_partition_limit": limit,
                "cursor": cursor,
            },
        )
        got = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in body["topics"]]
        cursor = body["next_cursor"]
        pages.append(
            (got, None if cursor is None else (cursor["topic_name"], cursor["partition_index"]))
        )
        if cursor is None:
            return pages
    raise AssertionError("paging did not end")


def test_h32_all_topics_sorted_when_none_listed(client):
    (page,) = _pages(client, [], 2000)
    assert page == ([("a", [0, 1, 2]), ("b", [0, 1]), ("c", [0])], None)


def test_h33_a_topic_cut_off_continues_at_its_next_partition(client):
    assert _pages(client, [], 2) == [
        ([("a", [0, 1])], ("a", 2)),
        ([("a", [2]), ("b", [0])], ("b", 1)),
        ([("b", [1]), ("c", [0])], None),
    ]


def test_h33_budget_ending_at_a_topic_boundary_points_at_the_next_topic(client):
    assert _pages(client, [], 3)[0] == ([("a", [0, 1, 2])], ("b", 0))


def test_h33_listed_unknown_and_invalid_topics_get_their_errors(client):
    body = client.call(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        0,
        {"topics": [{"name": "nope"}, {"name": "bad name!"}], "cursor": None},
    )
    codes = {t["name"]: t["error_code"] for t in body["topics"]}
    assert codes == {
        "nope": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION,
    }


def test_h32_cursor_topic_not_listed_or_negative_partition_is_invalid_request(client):
    for cursor in (
        {"topic_name": "c", "partition_index": 0},
        {"topic_name": "a", "partition_index": -1},
    ):
        body = client.call(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": "a"}], "cursor": cursor}
        )
        assert [t["error_code"] for t in body["topics"]] == [ErrorCode.INVALID_REQUEST]


def test_elr_and_last_known_elr_are_reported(client):
    body = client.call(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": "c"}], "cursor": None}
    )
    (partition,) = body["topics"][0]["partitions"]
    assert partition["eligible_leader_replicas"] == []
    assert partition["last_known_elr"] == []
    assert sorted(partition["isr_nodes"]) == [1, 2, 3]
