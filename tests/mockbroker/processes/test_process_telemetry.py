"""Client telemetry (KIP-714) in process mode: what a real client pushes to a broker process is
in the parent's `metrics()`, as in-process."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from process_clients import MODES

from kipwire.client import Connection
from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ErrorCode
from kipwire.mockbroker import MockCluster

DEADLINE = 30.0


def _subscribe_everything(bootstrap: str) -> int:
    configs = [
        {"name": "metrics", "config_operation": AlterConfigOp.SET, "value": "*"},
        {"name": "interval.ms", "config_operation": AlterConfigOp.SET, "value": "500"},
    ]
    resource = {
        "resource_type": ConfigResourceType.CLIENT_METRICS,
        "resource_name": "everything",
        "configs": configs,
    }
    with Connection(bootstrap) as conn:
        body = {"resources": [resource], "validate_only": False}
        (answer,) = conn.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
    return answer.error_code


@pytest.mark.parametrize("processes", MODES)
def test_pushed_client_metrics_reach_the_parents_metrics(processes):
    with MockCluster(brokers=3, processes=processes) as cluster:
        cluster.create_topic("pushed", partitions=3, replication_factor=1)
        first = cluster.bootstrap_servers.split(",")[0]
        assert _subscribe_everything(first) == ErrorCode.NONE
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "pusher"})
        seen: dict = {}
        deadline = time.monotonic() + DEADLINE
        while not seen and time.monotonic() < deadline:
            producer.produce("pushed", b"v")
            producer.poll(0.3)
            telemetry = cluster.metrics()["client_telemetry"]
            seen = {k: v for k, v in telemetry.items() if v["client_id"] == "pusher"}
        assert producer.flush(10) == 0
        (client,) = seen.values()
        assert any(name.startswith("org.apache.kafka.producer.") for name in client["metrics"])
        if processes:  # metrics() asks the children: not from a predicate in the cluster's thread
            with pytest.raises(RuntimeError, match="inside the cluster's thread"):
                cluster.wait_until(lambda: cluster.metrics()["client_telemetry"], timeout=1)
