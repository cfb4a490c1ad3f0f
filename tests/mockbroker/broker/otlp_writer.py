"""A minimal protobuf writer of OTLP MetricsData for the tests (the mock only reads it)."""

from __future__ import annotations

import struct


def varint(value: int) -> bytes:
    """A protobuf varint."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def double(number: int, value: float) -> bytes:
    """A 64-bit double field."""
    return varint(number << 3 | 1) + struct.pack("<d", value)


def attribute(key: str, value: str) -> bytes:
    """A KeyValue with a string AnyValue."""
    return field(1, key.encode()) + field(2, field(1, value.encode()))


def gauge(name: str, value: float, **attrs: str) -> bytes:
    """A Metric with one gauge data point."""
    point = double(4, value) + b"".join(field(7, attribute(k, v)) for k, v in attrs.items())
    return field(1, name.encode()) + field(5, field(1, point))


def metrics_data(*metrics: bytes, **resource: str) -> bytes:
    """A MetricsData of one resource and scope holding `metrics`."""
    res = b"".join(field(1, attribute(k, v)) for k, v in resource.items())
    scope = b"".join(field(2, m) for m in metrics)
    return field(1, field(1, res) + field(2, scope))
