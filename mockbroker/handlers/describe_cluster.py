"""DescribeCluster (60): cluster id, a controller id for clients, the brokers.

KIP-919: the same API on the controller's listener (what `--bootstrap-controller` reaches)
describes the controllers instead (`controller_node.ControllerNode.describe_cluster`). A v1+
request names the endpoint type it meant (1 a broker, 2 a controller); Kafka's
`AuthHelper.computeDescribeClusterResponse` answers a request sent to the other kind with
MISMATCHED_ENDPOINT_TYPE and a type it does not know with UNSUPPORTED_ENDPOINT_TYPE (v0, which
cannot name one, gets INVALID_REQUEST for either); `endpoint_type_error` is that rule, for both.
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .registry import RequestContext, handles

#: EndpointType ids (Kafka's `org.apache.kafka.clients.admin.EndpointType`).
BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2
_ENDPOINT_NAMES = {BROKER_ENDPOINT: "BROKER", CONTROLLER_ENDPOINT: "CONTROLLER"}


def endpoint_type_error(version: int, body: Any, served: int) -> dict | None:
    """The error response when the request meant another kind of endpoint than `served`,
    else None."""
    requested = body.get("endpoint_type", BROKER_ENDPOINT)
    if requested not in _ENDPOINT_NAMES:
        code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        message = f"Unsupported endpoint type {requested}"
    elif requested != served:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        message = (
            f"The request was sent to an endpoint of type {_ENDPOINT_NAMES[served]}, "
            f"but we wanted an endpoint of type {_ENDPOINT_NAMES[requested]}"
        )
    else:
        return None
    return {
        "error_code": ErrorCode.INVALID_REQUEST if version == 0 else code,
        "error_message": message,
        "cluster_id": "",
        "brokers": [],
    }


@handles(ApiKey.DESCRIBE_CLUSTER)
async def describe_cluster(ctx: RequestContext, body: Any) -> dict:
    """The live brokers (fenced ones too when asked, v2+)."""
    refused = endpoint_type_error(ctx.api_version, body, BROKER_ENDPOINT)
    if refused is not None:
        return refused
    image = ctx.broker.image
    with_fenced = body.get("include_fenced_brokers", False)
    brokers = [
        {
            "broker_id": b.node_id,
            "host": b.host,
            "port": b.port,
            "rack": b.rack,
            "is_fenced": b.fenced,
        }
        for _, b in sorted(image.brokers.items())
        if with_fenced or not b.fenced
    ]
    live = image.live_brokers()
    return {
        "error_code": ErrorCode.NONE,
        "cluster_id": ctx.broker.cluster_id,
        "controller_id": live[0].node_id if live else -1,
        "brokers": brokers,
        "endpoint_type": BROKER_ENDPOINT,
    }
