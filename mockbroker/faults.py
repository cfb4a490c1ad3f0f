"""Faults a test injects: per-API error answers, per-broker latency."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class _Injection:
    api_key: int
    error_code: int
    remaining: int
    broker: int | None


class Faults:
    """Pending error injections, taken in the order they were added."""

    def __init__(self) -> None:
        self._injections: list[_Injection] = []

    def inject_error(
        self, api_key: int, error_code: int, count: int = 1, broker: int | None = None
    ) -> None:
        """The next `count` requests of `api_key` (to `broker`, or any) get `error_code`."""
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        self._injections.append(_Injection(api_key, error_code, count, broker))

    def take_error(self, api_key: int, broker: int) -> int | None:
        """The error to answer this request with, if one is pending."""
        for injection in self._injections:
            if injection.api_key == api_key and injection.broker in (None, broker):
                injection.remaining -= 1
                if injection.remaining == 0:
                    self._injections.remove(injection)
                return injection.error_code
        return None
