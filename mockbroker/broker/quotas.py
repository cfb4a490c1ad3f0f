"""Client quotas on a broker: which quota a request is charged against, the windowed rate that
measures it, and the throttle time it earns (Kafka's ClientQuotaManager, Rate and QuotaUtils).

A request from user U (the connection's principal; ANONYMOUS on PLAINTEXT) with client id C is
charged to one sensor per quota kind, named by the entity that sets its quota, in Kafka's order:
user+client-id, user+default client-id, user, default user+client-id, default user+default
client-id, default user, client-id, default client-id. A sensor is a rate over
`quota.window.num` samples of `quota.window.size.seconds`; a value recorded past the quota
earns `(rate - quota) / quota * window` ms of throttle. Produce is charged its request bytes
and Fetch its response bytes (a throttled fetch answers no data and is not charged, as
Kafka's; a consumer's fetch returns at most its quota over the window's other samples); every
request is charged its work as a share of a second for `request_percentage`, whose throttle is
capped at one sample window. The serve pipeline asks `ClientQuotas.charge`
once per client request and mutes the connection for the throttle time (KIP-219).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kipwire.codec import ApiKey, EncodeError, ErrorCode

from ..controller.quota_image import CLIENT_ID, USER, Entity

PRODUCE_RATE = "producer_byte_rate"
FETCH_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
#: The user of a connection no authentication named (Kafka's KafkaPrincipal.ANONYMOUS).
ANONYMOUS = "ANONYMOUS"
#: APIs Kafka never charges to the request quota (ApiVersions, and what nodes send each other).
_EXEMPT = {ApiKey.API_VERSIONS}
_PERCENT_PER_SECOND = 100.0


class Rate:
    """A rate per second over `samples` windows of `window_ms` (Kafka's Rate on SampledStat)."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        # [start ms, value] per sample, oldest first once the ring has wrapped
        self._samples: list[list[float]] = []
        self._current = 0

    def record(self, value: float, now_ms: float) -> None:
        """Add `value` to the current sample (a new sample once the current one is full)."""
        if not self._samples:
            self._samples.append([now_ms, 0.0])
        sample = self._samples[self._current]
        if now_ms - sample[0] >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._samples):
                self._samples.append([now_ms, 0.0])
            else:
                self._samples[self._current] = [now_ms, 0.0]
            sample = self._samples[self._current]
        sample[1] += value

    def _purge(self, now_ms: float) -> None:
        expire = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample[0] >= expire:
                sample[0], sample[1] = now_ms, 0.0

    def window(self, now_ms: float) -> float:
        """The window the rate divides by: at least `samples - 1` whole sample windows."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append([now_ms, 0.0])
        elapsed = now_ms - min(s[0] for s in self._samples)
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1.0)

    def measure(self, now_ms: float) -> float:
        """The rate per second now."""
        window = self.window(now_ms)
        return sum(s[1] for s in self._samples) / (window / 1000)


def user_of(principal: str | None) -> str:
    """The user name quotas match: the principal's name, ANONYMOUS without one."""
    if principal is None:
        return ANONYMOUS
    return principal.split(":", 1)[1] if ":" in principal else principal


def sensor_tags(
    quotas: Mapping[Entity, Mapping[str, float]], key: str, user: str, client_id: str
) -> tuple[str, str]:
    """(user, client-id) tags of the sensor a request is charged to for quota `key`: the
    entity level that sets it, in Kafka's precedence ("" where the level ignores one)."""
    levels = (
        (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
        (((CLIENT_ID, None), (USER, user)), (user, client_id)),
        (((USER, user),), (user, "")),
        (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
        (((CLIENT_ID, None), (USER, None)), (user, client_id)),
        (((USER, None),), (user, "")),
    )
    for entity, tags in levels:
        if key in quotas.get(entity, {}):
            return tags
    return "", client_id


def quota_bound(
    quotas: Mapping[Entity, Mapping[str, float]], key: str, user: str, client_id: str
) -> float | None:
    """The quota a sensor with these tags is held to (Kafka's quotaLimit), None for none."""
    if user and client_id:
        order: tuple[Entity, ...] = (
            ((CLIENT_ID, client_id), (USER, user)),
            ((CLIENT_ID, None), (USER, user)),
            ((CLIENT_ID, client_id), (USER, None)),
            ((CLIENT_ID, None), (USER, None)),
        )
    elif user:
        order = (((USER, user),), ((USER, None),))
    elif client_id:
        order = (((CLIENT_ID, client_id),), ((CLIENT_ID, None),))
    else:
        return None
    for entity in order:
        value = quotas.get(entity, {}).get(key)
        if value is not None:
            return value
    return None


class ClientQuotas:
    """One broker's quota sensors, charged from the serve pipeline."""

    def __init__(
        self,
        quotas: Callable[[], Mapping[Entity, Mapping[str, float]]],
        samples: int = 11,
        window_seconds: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._quotas = quotas
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self._clock = clock
        self._sensors: dict[tuple[str, str, str], Rate] = {}

    def record(
        self, key: str, user: str, client_id: str, value: float, now_ms: float, cap_ms: int = 0
    ) -> int:
        """Record `value` against quota `key`; the throttle time it earns in ms (0 within the
        quota, or with no quota), at most `cap_ms` when that is set."""
        quotas = self._quotas()
        tags = sensor_tags(quotas, key, user, client_id)
        bound = quota_bound(quotas, key, *tags)
        if bound is None:
            return 0
        rate = self._sensors.get((key, *tags))
        if rate is None:
            rate = self._sensors[(key, *tags)] = Rate(self.samples, self.window_ms)
        rate.record(value, now_ms)
        measured = rate.measure(now_ms)
        if measured <= bound:
            return 0
        throttle = round((measured - bound) / bound * rate.window(now_ms))
        return min(throttle, cap_ms) if cap_ms else throttle

    def max_fetch_bytes(self, principal: str | None, client_id: str | None) -> int | None:
        """The most a consumer's fetch may return (Kafka's getMaxValueInQuotaWindow: its
        consumer_byte_rate over all samples but the current one), None without a quota."""
        quotas = self._quotas()
        if not quotas:
            return None
        user, client = user_of(principal), client_id or ""
        bound = quota_bound(quotas, FETCH_RATE, *sensor_tags(quotas, FETCH_RATE, user, client))
        if bound is None:
            return None
        return int(bound * (self.samples - 1) * self.window_ms / 1000)

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: float) -> None:
        """Take back a recorded value (a throttled fetch sends no data)."""
        tags = sensor_tags(self._quotas(), key, user, client_id)
        rate = self._sensors.get((key, *tags))
        if rate is not None:
            rate.record(-value, now_ms)

    def charge(
        self,
        principal: str | None,
        client_id: str | None,
        api_key: int,
        request_bytes: int,
        response: dict | None,
        encode: Callable[[dict], bytes | bytearray],
        work_seconds: float,
    ) -> tuple[bytes | bytearray | None, float]:
        """A client request's response bytes (throttle time set) and how long, in seconds,
        its connection stays muted after them."""
        if not self._quotas():
            return (None if response is None else encode(response)), 0.0
        started = time.perf_counter()
        user, client = user_of(principal), client_id or ""
        now = self._clock() * 1000
        throttle = 0
        data = None if response is None else encode(response)
        if api_key == ApiKey.PRODUCE:
            throttle = self.record(PRODUCE_RATE, user, client, request_bytes, now)
        elif api_key == ApiKey.FETCH and data is not None and response is not None:
            throttle = self.record(FETCH_RATE, user, client, len(data), now)
            if throttle:
                self.unrecord(FETCH_RATE, user, client, len(data), now)
                response = {
                    "error_code": ErrorCode.NONE,
                    "session_id": response.get("session_id", 0),
                    "responses": [],
                }
        if api_key not in _EXEMPT:
            work = work_seconds + time.perf_counter() - started
            spent = self.record(
                REQUEST_PERCENTAGE,
                user,
                client,
                work * _PERCENT_PER_SECOND,
                now,
                cap_ms=self.window_ms,
            )
            throttle = max(throttle, spent)
        if throttle and response is not None:
            data = _with_throttle(response, throttle, encode)
        return data, throttle / 1000


def _with_throttle(
    response: dict, throttle_ms: int, encode: Callable[[dict], bytes | bytearray]
) -> bytes | bytearray:
    """The response encoded with its throttle time (without, where its version has none)."""
    try:
        return encode({**response, "throttle_time_ms": throttle_ms})
    except EncodeError:
        return encode(response)


def window_config(config: Mapping[str, Any]) -> tuple[int, int]:
    """(quota.window.num, quota.window.size.seconds) of a broker's config."""
    return int(config.get("quota.window.num", 11)), int(config.get("quota.window.size.seconds", 1))
