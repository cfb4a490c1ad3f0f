"""Client telemetry on a broker (KIP-714), as Kafka 4.4.0's ClientMetricsManager serves it:
GetTelemetrySubscriptions gives a client its instance id and the subscription that matches it
(the client-metrics configs this broker replayed), PushTelemetry takes its metrics, checked
against that subscription, and decodes them (`otlp.py`) for `cluster.metrics()`.

A client's subscription is every client-metrics resource whose `match` selects it: their metric
prefixes together, the shortest interval; none gives an empty subscription at the default
interval (5 minutes). Its id is a hash of the metrics, the interval and the client instance id,
so a changed subscription changes it and the client's next push meets UNKNOWN_SUBSCRIPTION_ID.
A Get or Push before the push interval since the last one is THROTTLING_QUOTA_EXCEEDED (but the
first push after a Get, and a terminating push); a push after a terminating one, or naming the
zero uuid, is INVALID_REQUEST; a payload over `telemetry.max.bytes` TELEMETRY_TOO_LARGE; one
that does not decompress or decode, INVALID_RECORD.
"""

from __future__ import annotations

import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from kipwire.codec import ConfigResourceType, DecodeError, ErrorCode
from kipwire.codec.records.compression import decompress
from kipwire.codec.records.model import Compression

from ..controller.client_metrics_configs import (
    DEFAULT_INTERVAL_MS,
    INTERVAL_MS,
    MATCH,
    METRICS,
    parse_match,
)
from .otlp import OtlpError, PushedMetric, read_metrics

#: The compressions offered to clients, in Kafka's order of preference.
ACCEPTED_COMPRESSION = (Compression.ZSTD, Compression.LZ4, Compression.GZIP, Compression.SNAPPY)
#: The (client software name, version) a connection's ApiVersions v3+ named; set in the
#: connection's task by the ApiVersions handler.
CLIENT_SOFTWARE: ContextVar[tuple[str, str]] = ContextVar(
    "kipwire_client_software", default=("", "")
)
ZERO_UUID = uuid.UUID(int=0)
#: Every address the mock's listeners see a client from (they bind 127.0.0.1 only).
SOURCE_ADDRESS = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a client is asked to push: metric name prefixes and the interval."""

    metrics: tuple[str, ...]
    interval_ms: int

    def subscription_id(self, instance_id: uuid.UUID) -> int:
        """A stable id for this subscription and client (a signed 32-bit int)."""
        digest = zlib.crc32(f"{sorted(self.metrics)}{self.interval_ms}{instance_id}".encode())
        return digest - (1 << 32) if digest >= 1 << 31 else digest


@dataclass(slots=True)
class ClientInstance:
    """One client instance id as this broker knows it."""

    instance_id: uuid.UUID
    subscription: Subscription
    subscription_id: int
    client_id: str
    software: tuple[str, str]
    last_get_ms: float = -1e18
    last_push_ms: float = -1e18
    terminating: bool = False
    last_error: int = ErrorCode.NONE
    #: The latest data points pushed, by metric name.
    metrics: dict[str, list[PushedMetric]] = field(default_factory=dict)

    def may_get(self, now_ms: float) -> bool:
        """A Get is due: a push interval since the last Get or Push (Kafka's
        maybeUpdateGetRequestTimestamp); records it when it is."""
        if now_ms - max(self.last_get_ms, self.last_push_ms) >= self.subscription.interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms: float) -> bool:
        """A Push is due: the first after a Get, or a push interval since the last request."""
        due = self.last_get_ms > self.last_push_ms or (
            now_ms - max(self.last_get_ms, self.last_push_ms) >= self.subscription.interval_ms
        )
        if due:
            self.last_push_ms = now_ms
        return due


def subscription_for(
    configs: Mapping[tuple[int, str], Mapping[str, str]], client: Mapping[str, str]
) -> Subscription:
    """The subscription of a client (its selectors: client_id, client_software_name ...) from
    every client-metrics resource that matches it."""
    metrics: set[str] = set()
    interval = None
    for (rtype, _), values in sorted(configs.items()):
        if rtype != ConfigResourceType.CLIENT_METRICS:
            continue
        patterns = parse_match(values.get(MATCH, "")) or {}
        if not all(p.fullmatch(client.get(k, "")) for k, p in patterns.items()):
            continue
        names = [m.strip() for m in values.get(METRICS, "").split(",") if m.strip()]
        if not names:
            continue
        metrics.update(names)
        value = int(values.get(INTERVAL_MS, DEFAULT_INTERVAL_MS))
        interval = value if interval is None else min(interval, value)
    return Subscription(tuple(sorted(metrics)), interval or DEFAULT_INTERVAL_MS)


class ClientMetrics:
    """One broker's client instances and what they pushed."""

    def __init__(
        self,
        configs: Callable[[], Mapping[tuple[int, str], Mapping[str, str]]],
        max_bytes: int = 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._configs = configs
        self.max_bytes = max_bytes
        self._clock = clock
        self.instances: dict[uuid.UUID, ClientInstance] = {}

    def _instance(self, instance_id: uuid.UUID, client_id: str) -> ClientInstance:
        software = CLIENT_SOFTWARE.get()
        selectors = {
            "client_instance_id": str(instance_id),
            "client_id": client_id,
            "client_software_name": software[0],
            "client_software_version": software[1],
            "client_source_address": SOURCE_ADDRESS,
        }
        subscription = subscription_for(self._configs(), selectors)
        known = self.instances.get(instance_id)
        if known is not None and known.subscription == subscription:
            return known
        # a new client, or its subscription changed: a new subscription id, timers anew
        instance = ClientInstance(
            instance_id,
            subscription,
            subscription.subscription_id(instance_id),
            client_id,
            software,
        )
        if known is not None:
            instance.metrics = known.metrics
            instance.last_error = known.last_error
        self.instances[instance_id] = instance
        return instance

    def get_subscriptions(self, body: Any, client_id: str | None) -> dict:
        """GetTelemetrySubscriptions v0: the client's instance id (a new one for the zero
        uuid) and subscription."""
        instance_id = body["client_instance_id"]
        if instance_id is None or instance_id == ZERO_UUID:
            instance_id = uuid.uuid4()
            while instance_id in self.instances:
                instance_id = uuid.uuid4()
        instance = self._instance(instance_id, client_id or "")
        retry = instance.last_error in (
            ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        )
        if not instance.may_get(self._clock() * 1000) and not retry:
            return {"error_code": ErrorCode.THROTTLING_QUOTA_EXCEEDED}
        instance.last_get_ms = self._clock() * 1000
        subscription = instance.subscription
        return {
            "error_code": ErrorCode.NONE,
            "client_instance_id": instance_id,
            "subscription_id": instance.subscription_id,
            "accepted_compression_types": [int(c) for c in ACCEPTED_COMPRESSION],
            "push_interval_ms": subscription.interval_ms,
            "telemetry_max_bytes": self.max_bytes,
            "delta_temporality": True,
            "requested_metrics": list(subscription.metrics),
        }

    def push(self, body: Any, client_id: str | None) -> dict:
        """PushTelemetry v0: the metrics checked against the client's subscription, then
        decoded and kept."""
        instance_id = body["client_instance_id"]
        if instance_id is None or instance_id == ZERO_UUID:
            return {"error_code": ErrorCode.INVALID_REQUEST}
        instance = self._instance(instance_id, client_id or "")
        code = self._check(instance, body)
        if code == ErrorCode.NONE and instance.subscription.metrics and body["metrics"]:
            code = self._take(instance, body)
        if code == ErrorCode.NONE:
            instance.terminating = body["terminating"]
        instance.last_error = code
        return {"error_code": code}

    def _check(self, instance: ClientInstance, body: Any) -> int:
        if instance.terminating:
            return ErrorCode.INVALID_REQUEST
        if body["subscription_id"] != instance.subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        if not instance.may_push(self._clock() * 1000) and not body["terminating"]:
            return ErrorCode.THROTTLING_QUOTA_EXCEEDED
        if len(body["metrics"] or b"") > self.max_bytes:
            return ErrorCode.TELEMETRY_TOO_LARGE
        compression = body["compression_type"]
        if compression != Compression.NONE and compression not in ACCEPTED_COMPRESSION:
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        return ErrorCode.NONE

    def _take(self, instance: ClientInstance, body: Any) -> int:
        payload = bytes(body["metrics"])
        try:
            compression = Compression(body["compression_type"])
            if compression != Compression.NONE:
                payload = decompress(compression, payload, limit=64 * self.max_bytes)
            points = read_metrics(payload)
        except (DecodeError, OtlpError, ValueError):
            return ErrorCode.INVALID_RECORD
        pushed: dict[str, list[PushedMetric]] = {}
        for point in points:
            pushed.setdefault(point.name, []).append(point)
        instance.metrics.update(pushed)
        return ErrorCode.NONE

    def pushed(self) -> dict[str, dict[str, Any]]:
        """What each client instance pushed last: instance id -> client id, software and
        metric name -> value (the sum of its data points)."""
        return {
            str(i.instance_id): {
                "client_id": i.client_id,
                "client_software_name": i.software[0],
                "metrics": {
                    name: sum(p.value for p in points) for name, points in sorted(i.metrics.items())
                },
            }
            for i in self.instances.values()
            if i.metrics
        }
