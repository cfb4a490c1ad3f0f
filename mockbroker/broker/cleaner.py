"""A broker's log cleaner task: retention (retention.py) and compaction (compaction.py).

Every `log.retention.check.interval.ms` it visits the logs that have more than one segment,
as only those have anything retention or compaction may remove (a log with one segment is
left until it rolls: Kafka would delete an expired active segment, the mock waits for its
next append to roll it); a log joins the visited set when a segment rolls and leaves it once
back to one segment. Leaders and followers apply the same rules, each to its own copy and its
own high watermark. Compaction runs in the same pass, where Kafka's cleaner threads run
continuously with `log.cleaner.backoff.ms` between passes.

The time is wall-clock milliseconds, moved by trio's clock, so a `MockClock` that jumps ahead
ages records as real time would.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Protocol

import trio

from .compaction import compact
from .log import PartitionLog
from .retention import enforce_retention

#: Kafka's log.retention.check.interval.ms default (5 minutes).
DEFAULT_CHECK_INTERVAL_MS = 300_000
Key = tuple[str, int]


class CleanerHost(Protocol):
    """What the cleaner needs of its broker (`state.BrokerState`)."""

    node_id: int
    config: Mapping[str, str]
    logs: Mapping[Key, PartitionLog]

    def data_arrived(self, key: Key | None = None) -> None: ...


class LogCleaner:
    """Which logs may have segments to remove, and the periodic pass that removes them."""

    def __init__(self, node: CleanerHost) -> None:
        self.node = node
        self.log = logging.getLogger(f"kipwire.mockbroker.broker.{node.node_id}.cleaner")
        #: Logs with more than one segment.
        self.watched: set[Key] = set()
        self._wall_minus_trio: float | None = None

    @property
    def interval_ms(self) -> int:
        """log.retention.check.interval.ms, the broker's static setting."""
        return int(
            self.node.config.get("log.retention.check.interval.ms", DEFAULT_CHECK_INTERVAL_MS)
        )

    def now_ms(self) -> int:
        """Wall-clock ms, advanced by trio's clock once inside trio (a MockClock jumps it)."""
        try:
            trio_now = trio.current_time()
        except RuntimeError:
            return int(time.time() * 1000)
        if self._wall_minus_trio is None:
            self._wall_minus_trio = time.time() - trio_now
        return int((trio_now + self._wall_minus_trio) * 1000)

    def watch(self, key: Key) -> None:
        """A log rolled a segment (or was loaded with several): visit it from now on."""
        self.watched.add(key)

    async def run(self) -> None:
        """Check retention and compaction every interval, until cancelled."""
        while True:
            await trio.sleep(self.interval_ms / 1000)
            self.check(self.now_ms())

    def check(self, now_ms: int) -> None:
        """One pass over the watched logs: delete what retention allows, then compact."""
        for key in list(self.watched):
            log = self.node.logs.get(key)
            if log is None or len(log.segments) < 2:
                self.watched.discard(key)
                continue
            if enforce_retention(log, now_ms):
                self.log.debug("%s-%d: log start offset %d", *key, log.log_start_offset)
                self.node.data_arrived(key)
            if log.config.compact:
                cleaned = compact(log, now_ms)
                if cleaned is not None:
                    self.log.debug(
                        "%s-%d: compacted below %d: %d -> %d bytes",
                        *key,
                        cleaned.end_offset,
                        cleaned.bytes_before,
                        cleaned.bytes_after,
                    )
            if len(log.segments) < 2:
                self.watched.discard(key)
