"""The hand-written OTLP reader: gauge, sum and histogram points with their attributes, unknown
fields skipped, and a payload that is not protobuf refused."""

from __future__ import annotations

import struct

import pytest
from otlp_writer import double, field, gauge, metrics_data, varint

from kipwire.mockbroker.broker.otlp import OtlpError, PushedMetric, read_metrics


def test_gauges_with_resource_and_point_attributes() -> None:
    payload = metrics_data(
        gauge("org.apache.kafka.producer.request.rate", 2.5, node_id="1"),
        gauge("org.apache.kafka.producer.io.wait", 7.0),
        client_id="app",
    )
    assert read_metrics(payload) == [
        PushedMetric(
            "org.apache.kafka.producer.request.rate",
            "gauge",
            2.5,
            {"client_id": "app", "node_id": "1"},
        ),
        PushedMetric("org.apache.kafka.producer.io.wait", "gauge", 7.0, {"client_id": "app"}),
    ]


def test_sum_int_points_histograms_and_unknown_fields() -> None:
    int_point = varint(6 << 3 | 1) + struct.pack("<q", -3)
    monotonic = varint(3 << 3) + varint(1)  # Sum.is_monotonic, a varint: skipped
    total = field(1, b"total") + field(7, field(1, int_point) + monotonic)
    histogram_point = varint(4 << 3 | 1) + struct.pack("<Q", 4) + double(5, 10.0)
    histogram = field(1, b"latency") + field(9, field(1, histogram_point))
    unknown = field(15, b"\x00\x01") + varint(16 << 3 | 5) + b"\x00\x00\x00\x00"
    (first, second) = read_metrics(metrics_data(total + unknown, histogram))
    assert (first.name, first.kind, first.value) == ("total", "sum", -3)
    assert (second.kind, second.value, second.attributes["count"]) == ("histogram", 10.0, 4)


@pytest.mark.parametrize("payload", [b"\x0a\x05ab", b"\x0f", b"\x0a\x80"])
def test_a_payload_that_is_not_protobuf_is_refused(payload: bytes) -> None:
    with pytest.raises(OtlpError):
        read_metrics(payload)
