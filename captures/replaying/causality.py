"""Causality across connections: no request is sent before what it could have depended on.

In the capture, a request sent after some response arrived (on any connection) may depend on it:
a consumer's Fetch reads what a Produce wrote once that Produce was acknowledged, a SyncGroup
follows the JoinGroup answers. The replay keeps that order: each request waits until every
request whose captured response came before it was sent has been answered by the target (or
set aside). This order has no cycles (a response comes after its own request), so the wait
always ends; requests without capture times depend only on their connection's order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Iterable

import trio

__all__ = ["Causality"]


class Causality:
    """The happens-before order of a capture's requests, and which have been answered."""

    def __init__(self, requests: Iterable[tuple[Hashable, int | None, int | None]]) -> None:
        """`requests`: (key, captured request time, captured response time) for each request."""
        items = list(requests)
        answered = sorted((r[2], i) for i, r in enumerate(items) if r[2] is not None)
        times = [t for t, _ in answered]
        self._position = {items[i][0]: n for n, (_, i) in enumerate(answered)}
        self._needs = {
            key: bisect_left(times, sent) if sent is not None else 0 for key, sent, _ in items
        }
        self._done = [False] * len(answered)
        self._frontier = 0  # every answered request before this position is done
        self._changed = trio.Event()

    def needed(self, key: Hashable) -> int:
        """How many requests must be answered before the request `key` may be sent."""
        return self._needs[key]

    @property
    def frontier(self) -> int:
        """How many requests, in captured response order, are answered without a hole."""
        return self._frontier

    async def wait_turn(self, key: Hashable) -> None:
        """Return once every request the captured one at `key` may depend on is answered."""
        need = self._needs[key]
        while self._frontier < need:
            await self._changed.wait()

    def done(self, key: Hashable) -> None:
        """The request `key` was answered (or set aside): later requests may go."""
        pos = self._position.get(key)
        if pos is None:
            return
        self._done[pos] = True
        while self._frontier < len(self._done) and self._done[self._frontier]:
            self._frontier += 1
        self._changed.set()
        self._changed = trio.Event()
