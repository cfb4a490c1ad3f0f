"""DescribeQuorum's answer from the controller's view of the metadata log's fetchers."""

from __future__ import annotations

import uuid

from kipwire.codec import ErrorCode
from kipwire.mockbroker.controller.quorum import CONTROLLER_NODE_ID, QuorumState

REQUEST = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}


def test_the_controller_leads_and_brokers_observe():
    quorum = QuorumState(uuid.UUID(int=5))
    quorum.fetched(1, 10, 10, now_ms=1_000)  # caught up
    quorum.fetched(2, 4, 10, now_ms=1_500)  # behind, never caught up
    quorum.fetched(1, 8, 12, now_ms=2_000)  # behind now, caught up at 1000
    quorum.fetched(-1, 0, 12, now_ms=2_000)  # not a replica
    response = quorum.describe(2, REQUEST, 12, 3_000, ("127.0.0.1", 9093))
    part = response["topics"][0]["partitions"][0]
    assert (part["leader_id"], part["leader_epoch"], part["high_watermark"]) == (
        CONTROLLER_NODE_ID,
        1,
        12,
    )
    assert [(v["replica_id"], v["log_end_offset"]) for v in part["current_voters"]] == [
        (CONTROLLER_NODE_ID, 12)
    ]
    assert [
        (
            o["replica_id"],
            o["log_end_offset"],
            o["last_fetch_timestamp"],
            o["last_caught_up_timestamp"],
        )
        for o in part["observers"]
    ] == [(1, 8, 2_000, 1_000), (2, 4, 1_500, -1)]
    assert response["nodes"][0]["listeners"] == [
        {"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}
    ]
    assert "nodes" not in quorum.describe(1, REQUEST, 12, 3_000, ("127.0.0.1", 9093))


def test_only_the_metadata_partition_is_described():
    other = {"topics": [{"topic_name": "t", "partitions": [{"partition_index": 0}]}]}
    response = QuorumState().describe(2, other, 0, 0, ("127.0.0.1", 1))
    assert response["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_older_versions_leave_out_what_they_lack():
    quorum = QuorumState()
    quorum.fetched(1, 3, 3, now_ms=10)
    v0 = quorum.describe(0, REQUEST, 3, 20, ("127.0.0.1", 1))["topics"][0]["partitions"][0]
    assert v0["observers"] == [{"replica_id": 1, "log_end_offset": 3}]
    v1 = quorum.describe(1, REQUEST, 3, 20, ("127.0.0.1", 1))["topics"][0]["partitions"][0]
    assert v1["observers"][0]["last_fetch_timestamp"] == 10
    assert "replica_directory_id" not in v1["observers"][0]
