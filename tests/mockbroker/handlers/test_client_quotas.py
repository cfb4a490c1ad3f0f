"""Client quotas on a running mock: AlterClientQuotas through a broker reaches the controller and
every broker's image, DescribeClientQuotas answers from it, and a real producer is slowed to
about its producer_byte_rate and a real consumer to about its consumer_byte_rate (the
response's throttle_time_ms, the channel muted)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer

from kipwire.client import Connection
from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster

#: Two one-second samples: the rate forgets a burst within about a second.
WINDOW = {"quota.window.num": "2", "quota.window.size.seconds": "1"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=2, config=WINDOW) as running:
        running.create_topic("quota-t", partitions=1, replication_factor=1)
        running.create_topic("quota-consumed", partitions=1, replication_factor=1)
        yield running


def _set(conn: Connection, entity: list[tuple[str, str | None]], key: str, value: float) -> int:
    body = {
        "entries": [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "ops": [{"key": key, "value": value, "remove": False}],
            }
        ],
        "validate_only": False,
    }
    (entry,) = conn.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, body).entries
    return entry.error_code


def _describe(address: str, components: list[dict], strict: bool = False) -> dict:
    with Connection(address) as conn:
        body = conn.call(
            ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": components, "strict": strict}
        )
    assert body.error_code == ErrorCode.NONE
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {
            v.key: v.value for v in entry["values"]
        }
        for entry in body.entries
    }


def test_every_broker_describes_what_one_broker_altered(cluster: MockCluster) -> None:
    first, second = cluster.bootstrap_servers.split(",")
    with Connection(first) as conn:
        assert _set(conn, [("user", "alice"), ("client-id", None)], "consumer_byte_rate", 2048) == 0
        assert _set(conn, [("client-id", "reporter")], "request_percentage", 50.0) == 0
        assert _set(conn, [("ip", "10.0.0.1")], "producer_byte_rate", 1) == (
            ErrorCode.INVALID_REQUEST
        )
    alice = {"entity_type": "user", "match_type": 0, "match": "alice"}
    assert _describe(second, [alice]) == {
        (("client-id", None), ("user", "alice")): {"consumer_byte_rate": 2048.0}
    }
    assert _describe(second, [alice], strict=True) == {}
    specified = {"entity_type": "client-id", "match_type": 2, "match": None}
    assert (("client-id", "reporter"),) in _describe(second, [specified])


def test_a_real_producer_is_slowed_to_about_its_quota(cluster: MockCluster) -> None:
    quota = 100_000  # bytes per second
    with Connection(cluster.bootstrap_servers.split(",")[0]) as conn:
        assert _set(conn, [("client-id", "slow-producer")], "producer_byte_rate", quota) == 0
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "client.id": "slow-producer",
            "linger.ms": 5,
            "batch.size": 16384,
            "enable.metrics.push": False,
        }
    )
    total, delivered = 500_000, []
    started = time.monotonic()
    for _ in range(total // 1000):
        producer.produce("quota-t", b"x" * 1000, on_delivery=lambda e, m: delivered.append(e))
        producer.poll(0)
    assert producer.flush(60) == 0
    elapsed = time.monotonic() - started
    assert len(delivered) == total // 1000 and not any(delivered)
    # unthrottled this takes well under a second; at the quota, about (total - one window's
    # worth) / quota seconds, with room for the burst the two-sample window lets through
    assert elapsed >= 0.5 * (total - 2 * quota) / quota, elapsed
    assert total / elapsed <= 3 * quota


def test_a_request_percentage_quota_is_reported_in_throttle_time(cluster: MockCluster) -> None:
    address = cluster.bootstrap_servers.split(",")[0]
    with Connection(address, client_id="busy") as conn:
        assert _set(conn, [("client-id", "busy")], "request_percentage", 0.0001) == 0
        throttles = [
            conn.call(ApiKey.METADATA, 12, {"topics": []}).throttle_time_ms for _ in range(2)
        ]
    # the first request after the quota meets a window of work already done
    assert max(throttles) > 0
    # capped at one sample window (Kafka's RequestQuotaManager)
    assert max(throttles) <= 1000


def test_a_real_consumer_is_slowed_to_about_its_quota(cluster: MockCluster) -> None:
    quota, total = 100_000, 400_000
    # small batches: a fetch returns at least one whole batch (KIP-74), and one larger than the
    # quota's window would be throttled and answered empty for ever, on Kafka as here
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, "batch.size": 16384}
    )
    for _ in range(total // 1000):
        producer.produce("quota-consumed", b"y" * 1000)
        producer.poll(0)
    assert producer.flush(30) == 0
    with Connection(cluster.bootstrap_servers.split(",")[0]) as conn:
        assert _set(conn, [("client-id", "slow-consumer")], "consumer_byte_rate", quota) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "client.id": "slow-consumer",
            "group.id": "slow-consumers",
            "auto.offset.reset": "earliest",
            "enable.metrics.push": False,
        }
    )
    consumer.subscribe(["quota-consumed"])
    received, started = 0, None
    deadline = time.monotonic() + 60
    try:
        while received < total and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error():
                continue
            started = started or time.monotonic()
            received += len(message.value())
    finally:
        consumer.close()
    assert received == total
    elapsed = time.monotonic() - started
    # unthrottled it is read in well under a second; each fetch returns at most one quota's
    # worth (the window's other sample) and the next waits for the rate to fall under it
    assert elapsed >= 0.5 * (total - 2 * quota) / quota, elapsed
