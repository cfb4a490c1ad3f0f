"""DescribeQuorum sent to a broker: forwarded to the controller, which names every broker as an
observer of the metadata log."""

from __future__ import annotations

from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.controller.quorum import CONTROLLER_NODE_ID


def test_a_broker_forwards_describe_quorum_to_the_controller():
    with (
        MockCluster(brokers=2) as cluster,
        WireClient(cluster.bootstrap_servers.split(",")[0]) as client,
    ):
        response = client.call(
            ApiKey.DESCRIBE_QUORUM,
            2,
            {
                "topics": [
                    {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
                ]
            },
        )
        assert response["error_code"] == ErrorCode.NONE
        part = response["topics"][0]["partitions"][0]
        assert part["leader_id"] == CONTROLLER_NODE_ID
        assert part["high_watermark"] == cluster.controller.end_offset
        assert [o["replica_id"] for o in part["observers"]] == [1, 2]
        assert response["nodes"][0]["node_id"] == CONTROLLER_NODE_ID
