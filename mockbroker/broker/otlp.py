"""The OTLP metrics a client pushes (KIP-714's PushTelemetry payload): an OpenTelemetry
`MetricsData` protobuf, read by a small hand-written protobuf reader of the fields needed here.

Read: resource attributes, and per metric its name and data points (gauge and sum values,
histogram and summary count and sum) with their attributes. Every other field is skipped by its
wire type, so a payload with more (exemplars, scope, exponential histograms) reads as well. A
payload that is not protobuf raises `OtlpError`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

# protobuf wire types
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
# Metric's data fields and their kinds (opentelemetry/proto/metrics/v1/metrics.proto)
_DATA_KINDS = {5: "gauge", 7: "sum", 9: "histogram", 10: "exponential_histogram", 11: "summary"}


class OtlpError(ValueError):
    """A payload that is not an OTLP MetricsData message."""


@dataclass(frozen=True, slots=True)
class PushedMetric:
    """One data point of a pushed metric: its name, kind, value and attributes."""

    name: str
    kind: str
    value: float
    attributes: dict[str, object] = field(default_factory=dict)


def _fields(data: bytes) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of each field: an int, or the bytes of a LEN field."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _varint(data, pos)
            yield number, wire, value
        elif wire == _I64:
            if pos + 8 > end:
                raise OtlpError(f"a 64-bit field runs past the end at byte {pos}")
            yield number, wire, data[pos : pos + 8]
            pos += 8
        elif wire == _LEN:
            size, pos = _varint(data, pos)
            if pos + size > end:
                raise OtlpError(f"a {size}-byte field runs past the end at byte {pos}")
            yield number, wire, data[pos : pos + size]
            pos += size
        elif wire == _I32:
            if pos + 4 > end:
                raise OtlpError(f"a 32-bit field runs past the end at byte {pos}")
            yield number, wire, data[pos : pos + 4]
            pos += 4
        else:
            raise OtlpError(f"wire type {wire} at byte {pos} is not protobuf's")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise OtlpError("a varint runs past the end")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise OtlpError(f"a varint longer than 10 bytes ends at byte {pos}")


def _len(value: object) -> bytes:
    if not isinstance(value, bytes):
        raise OtlpError("a message field is not length-delimited")
    return value


def _any_value(data: bytes) -> object:
    """AnyValue: a string, bool, int, double or bytes (arrays and maps as their bytes)."""
    for number, wire, value in _fields(data):
        if number == 1 and wire == _LEN:
            return _len(value).decode("utf-8", "replace")
        if number == 2 and wire == _VARINT:
            return bool(value)
        if number == 3 and wire == _VARINT:
            return _signed(int(value))  # type: ignore[arg-type]
        if number == 4 and wire == _I64:
            return struct.unpack("<d", _len(value))[0]
        if wire == _LEN:
            return _len(value)
    return None


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _attributes(items: list[bytes]) -> dict[str, object]:
    """KeyValue messages as a dict."""
    out: dict[str, object] = {}
    for item in items:
        key, value = "", None
        for number, wire, v in _fields(item):
            if number == 1 and wire == _LEN:
                key = _len(v).decode("utf-8", "replace")
            elif number == 2 and wire == _LEN:
                value = _any_value(_len(v))
        out[key] = value
    return out


def _number_point(data: bytes) -> tuple[float, dict[str, object]]:
    """NumberDataPoint: its value (as_double or as_int) and attributes."""
    value: float = 0.0
    attrs: list[bytes] = []
    for number, wire, v in _fields(data):
        if number == 4 and wire == _I64:
            value = struct.unpack("<d", _len(v))[0]
        elif number == 6 and wire == _I64:
            value = struct.unpack("<q", _len(v))[0]
        elif number == 7 and wire == _LEN:
            attrs.append(_len(v))
    return value, _attributes(attrs)


def _distribution_point(data: bytes, attributes_field: int) -> tuple[float, dict[str, object]]:
    """A histogram or summary data point: its sum, with its count as an attribute."""
    total, count = 0.0, 0
    attrs: list[bytes] = []
    for number, wire, v in _fields(data):
        if number == 4 and wire == _I64:
            count = struct.unpack("<Q", _len(v))[0]
        elif number == 5 and wire == _I64:
            total = struct.unpack("<d", _len(v))[0]
        elif number == attributes_field and wire == _LEN:
            attrs.append(_len(v))
    return total, {**_attributes(attrs), "count": count}


def _metric(data: bytes, resource: dict[str, object]) -> list[PushedMetric]:
    name, points = "", []
    for number, wire, v in _fields(data):
        if number == 1 and wire == _LEN:
            name = _len(v).decode("utf-8", "replace")
        elif number in _DATA_KINDS and wire == _LEN:
            kind = _DATA_KINDS[number]
            for inner, inner_wire, point in _fields(_len(v)):
                if inner != 1 or inner_wire != _LEN:
                    continue
                if kind in ("gauge", "sum"):
                    value, attrs = _number_point(_len(point))
                elif kind == "summary":
                    value, attrs = _distribution_point(_len(point), 7)
                else:
                    value, attrs = _distribution_point(_len(point), 9)
                points.append((kind, value, attrs))
    return [PushedMetric(name, kind, value, {**resource, **attrs}) for kind, value, attrs in points]


def read_metrics(payload: bytes) -> list[PushedMetric]:
    """Every data point of a MetricsData message, resource attributes merged into each."""
    out: list[PushedMetric] = []
    for number, wire, resource_metrics in _fields(payload):
        if number != 1 or wire != _LEN:
            continue
        resource: dict[str, object] = {}
        scopes: list[bytes] = []
        for inner, inner_wire, v in _fields(_len(resource_metrics)):
            if inner == 1 and inner_wire == _LEN:
                resource = _attributes(
                    [_len(a) for n, w, a in _fields(_len(v)) if n == 1 and w == _LEN]
                )
            elif inner == 2 and inner_wire == _LEN:
                scopes.append(_len(v))
        for scope in scopes:
            for inner, inner_wire, metric in _fields(scope):
                if inner == 2 and inner_wire == _LEN:
                    out.extend(_metric(_len(metric), resource))
    return out
