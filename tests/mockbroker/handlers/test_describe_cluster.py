"""DescribeCluster on a broker and on the controller's listener (KIP-919): each answers the
endpoint type it is and refuses the other as Kafka's AuthHelper does; the controller's
ApiVersions lists what `--bootstrap-controller` tools send."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.controller.features import BROKER_FEATURES
from kipwire.mockbroker.controller.quorum import CONTROLLER_NODE_ID
from kipwire.mockbroker.handlers.describe_cluster import BROKER_ENDPOINT, CONTROLLER_ENDPOINT


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    """Two brokers and the controller."""
    with MockCluster(brokers=2) as running:
        yield running


def _describe(address: str, version: int, endpoint_type: int | None = None) -> dict:
    body = {} if endpoint_type is None else {"endpoint_type": endpoint_type}
    with WireClient(address) as client:
        return client.call(ApiKey.DESCRIBE_CLUSTER, version, body)


def test_the_controller_describes_itself_to_a_controller_request(cluster):
    controller = cluster.cluster.controller_node
    answer = _describe(controller.address, 2, CONTROLLER_ENDPOINT)
    assert answer["error_code"] == ErrorCode.NONE
    assert (answer["cluster_id"], answer["controller_id"]) == (
        cluster.cluster.cluster_id,
        CONTROLLER_NODE_ID,
    )
    assert answer["endpoint_type"] == CONTROLLER_ENDPOINT
    (node,) = answer["brokers"]
    assert (node["broker_id"], node["host"], node["port"]) == (
        CONTROLLER_NODE_ID,
        "127.0.0.1",
        controller.port,
    )


def test_each_listener_refuses_the_other_endpoint_type_with_kafkas_message(cluster):
    broker = cluster.bootstrap_servers.split(",")[0]
    controller = cluster.cluster.controller_node.address
    to_broker = _describe(broker, 1, CONTROLLER_ENDPOINT)
    assert to_broker["error_code"] == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    assert to_broker["error_message"] == (
        "The request was sent to an endpoint of type BROKER, "
        "but we wanted an endpoint of type CONTROLLER"
    )
    to_controller = _describe(controller, 1, BROKER_ENDPOINT)
    assert to_controller["error_code"] == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    assert "sent to an endpoint of type CONTROLLER" in to_controller["error_message"]
    assert to_controller["brokers"] == []
    unknown = _describe(broker, 2, 7)
    assert unknown["error_code"] == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    assert unknown["error_message"] == "Unsupported endpoint type 7"
    # v0 cannot name a type: it means a broker, and the controller says INVALID_REQUEST
    assert _describe(controller, 0)["error_code"] == ErrorCode.INVALID_REQUEST
    answered = _describe(broker, 0)
    assert answered["error_code"] == ErrorCode.NONE
    assert [b["broker_id"] for b in answered["brokers"]] == [1, 2]


def test_the_controllers_api_versions_list_what_bootstrap_controller_tools_send(cluster):
    with WireClient(cluster.cluster.controller_node.address) as client:
        answer = client.call(ApiKey.API_VERSIONS, 4, {})
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
    # Kafka 4.4.0's controller listener lists both at 0-2 (data/api_versions_kafka_4_4.json)
    assert ranges[ApiKey.DESCRIBE_CLUSTER] == (0, 2)
    assert ranges[ApiKey.DESCRIBE_QUORUM] == (0, 2)
    supported = {
        f["name"]: (f["min_version"], f["max_version"]) for f in answer["supported_features"]
    }
    assert supported == dict(BROKER_FEATURES["4.4"])
