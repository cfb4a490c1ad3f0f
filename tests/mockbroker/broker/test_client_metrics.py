"""A broker's client telemetry (KIP-714) as Kafka 4.4.0's ClientMetricsManager serves it:
instance ids, the subscription that matches a client, and every check a push meets."""

from __future__ import annotations

import uuid

import pytest
from otlp_writer import gauge, metrics_data

from kipwire.codec import ConfigResourceType, ErrorCode
from kipwire.codec.records.compression import compress
from kipwire.codec.records.model import Compression
from kipwire.mockbroker.broker.client_metrics import (
    CLIENT_SOFTWARE,
    ZERO_UUID,
    ClientMetrics,
)

CM = ConfigResourceType.CLIENT_METRICS


class Clock:
    """A hand-moved clock in seconds."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _manager(configs: dict, max_bytes: int = 1024 * 1024) -> tuple[ClientMetrics, Clock]:
    clock = Clock()
    return ClientMetrics(lambda: configs, max_bytes, clock), clock


def _get(manager: ClientMetrics, instance: uuid.UUID = ZERO_UUID, client: str = "app") -> dict:
    return manager.get_subscriptions({"client_instance_id": instance}, client)


def _push(manager: ClientMetrics, got: dict, payload: bytes = b"", **fields: object) -> int:
    body = {
        "client_instance_id": got["client_instance_id"],
        "subscription_id": got["subscription_id"],
        "terminating": False,
        "compression_type": Compression.NONE,
        "metrics": payload,
        **fields,
    }
    return manager.push(body, "app")["error_code"]


def test_without_subscriptions_a_client_gets_an_empty_one_at_five_minutes() -> None:
    manager, _ = _manager({})
    got = _get(manager)
    assert got["error_code"] == ErrorCode.NONE
    assert got["client_instance_id"] != ZERO_UUID
    assert got["requested_metrics"] == [] and got["push_interval_ms"] == 300_000
    assert got["accepted_compression_types"] == [4, 3, 1, 2]  # zstd, lz4, gzip, snappy
    assert got["delta_temporality"] is True and got["telemetry_max_bytes"] == 1024 * 1024


def test_matching_subscriptions_join_and_the_shortest_interval_wins() -> None:
    configs = {
        (CM, "producers"): {"metrics": "org.apache.kafka.producer.", "interval.ms": "2000"},
        (CM, "all-for-app"): {"metrics": "*", "interval.ms": "1000", "match": "client_id=ap.*"},
        (CM, "librdkafka"): {"metrics": "x.", "match": "client_software_name=librdkafka"},
        (ConfigResourceType.TOPIC, "t"): {"metrics": "not a subscription"},
    }
    manager, _ = _manager(configs)
    got = _get(manager, client="app")
    assert got["requested_metrics"] == ["*", "org.apache.kafka.producer."]
    assert got["push_interval_ms"] == 1000
    other = _get(manager, client="other")
    assert other["requested_metrics"] == ["org.apache.kafka.producer."]
    token = CLIENT_SOFTWARE.set(("librdkafka", "2.16.0"))
    try:
        assert "x." in _get(manager, client="other")["requested_metrics"]
    finally:
        CLIENT_SOFTWARE.reset(token)


def test_a_push_is_decoded_and_kept() -> None:
    manager, _ = _manager({(CM, "all"): {"metrics": "*", "interval.ms": "1000"}})
    got = _get(manager)
    payload = compress(Compression.ZSTD, metrics_data(gauge("org.apache.kafka.x.rate", 4.0)))
    assert _push(manager, got, payload, compression_type=Compression.ZSTD) == ErrorCode.NONE
    (seen,) = manager.pushed().values()
    assert seen["client_id"] == "app" and seen["metrics"] == {"org.apache.kafka.x.rate": 4.0}


def test_pushes_wait_for_the_interval_and_a_terminating_push_ends_the_client() -> None:
    manager, clock = _manager({(CM, "all"): {"metrics": "*", "interval.ms": "1000"}})
    got = _get(manager)
    # the first push after a Get is taken at once; the next waits for the interval
    assert _push(manager, got) == ErrorCode.NONE
    assert _push(manager, got) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.now += 1.0
    assert _push(manager, got) == ErrorCode.NONE
    # a Get before the interval is throttled too
    assert _get(manager, got["client_instance_id"])["error_code"] == (
        ErrorCode.THROTTLING_QUOTA_EXCEEDED
    )
    # a terminating push is taken whenever it comes; nothing after it
    assert _push(manager, got, terminating=True) == ErrorCode.NONE
    clock.now += 5.0
    assert _push(manager, got) == ErrorCode.INVALID_REQUEST


def test_a_changed_subscription_makes_the_old_id_unknown_and_a_get_is_let_through() -> None:
    configs = {(CM, "all"): {"metrics": "*", "interval.ms": "1000"}}
    manager, _ = _manager(configs)
    got = _get(manager)
    configs[(CM, "all")] = {"metrics": "org.", "interval.ms": "1000"}
    assert _push(manager, got) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    again = _get(manager, got["client_instance_id"])
    assert again["error_code"] == ErrorCode.NONE
    assert again["subscription_id"] != got["subscription_id"]
    assert again["requested_metrics"] == ["org."]


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"metrics": b"x" * 101}, ErrorCode.TELEMETRY_TOO_LARGE),
        ({"compression_type": 9}, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
        ({"metrics": b"\x0f\x0f"}, ErrorCode.INVALID_RECORD),
        ({"metrics": b"not zstd", "compression_type": Compression.ZSTD}, ErrorCode.INVALID_RECORD),
        ({"client_instance_id": ZERO_UUID}, ErrorCode.INVALID_REQUEST),
    ],
)
def test_bad_pushes_get_kafkas_errors(fields: dict, code: int) -> None:
    manager, _ = _manager({(CM, "all"): {"metrics": "*"}}, max_bytes=100)
    assert _push(manager, _get(manager), **fields) == code
    assert manager.pushed() == {}


def test_subscription_ids_are_signed_32_bit_and_follow_the_subscription() -> None:
    configs = {(CM, "all"): {"metrics": "*"}}
    manager, _ = _manager(configs)
    got = _get(manager)
    assert -(2**31) <= got["subscription_id"] < 2**31
    # another broker with the same subscriptions takes the client's pushes
    other, _ = _manager(configs)
    assert _push(other, got) == ErrorCode.NONE
