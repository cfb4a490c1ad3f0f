"""A log segment: the batches from one base offset, with the marks rolls and retention read.

`PartitionLog` (log.py) keeps a partition as a list of segments, as Kafka's UnifiedLog keeps
LogSegments: the last one is active and takes appends; a new one rolls when the active one
would pass `segment.bytes` or has waited `segment.ms`; retention (cleaner.py) deletes whole
segments from the front, and compaction rewrites the batches of the inactive ones.

A storage back end subclasses `Segment` and hands the log a factory, `new_segment(base_offset,
created_ms)`. The batches stay in memory (`batches`, what reads and the log's bookkeeping use);
the back end mirrors what happens to them through the hooks this class calls on itself:
`append` (a batch after the others, its bytes as stored: Kafka's `.log` format, with the
offset and time indexes to extend), `truncate_to` (drop batches from an offset: a follower's
divergent suffix or an unclean stop), `drop_before` (DeleteRecords moved the log start past
whole batches: a file may keep them until the segment goes, as Kafka does), `replace` (the
compacted batches, same base offsets, fewer records), `flush` (what was appended must survive
a crash) and `delete` (retention removed the segment: its files go). Each hook calls the base
method first so `size`, `max_timestamp` and the bisect index stay right.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(slots=True)
class StoredBatch:
    """One batch in the log and the header fields fetch and ListOffsets need."""

    base_offset: int
    last_offset: int
    data: bytes
    max_timestamp: int
    leader_epoch: int


class Segment:
    """A segment held in memory: its batches, byte size, largest timestamp and creation time."""

    def __init__(self, base_offset: int, created_ms: int) -> None:
        self.base_offset = base_offset
        self.created_ms = created_ms
        self.batches: list[StoredBatch] = []
        self._bases: list[int] = []
        self.size = 0
        #: The largest record timestamp appended (Kafka's maxTimestampSoFar); -1 when empty.
        self.max_timestamp = -1
        #: The first batch's max timestamp: what segment.ms measures from (Kafka's
        #: rollingBasedTimestamp); None until a batch is appended.
        self.rolling_timestamp: int | None = None

    def __repr__(self) -> str:
        return f"Segment(base={self.base_offset}, batches={len(self.batches)}, size={self.size})"

    @property
    def next_offset(self) -> int:
        """The offset after the last batch (the base offset when empty)."""
        return self.batches[-1].last_offset + 1 if self.batches else self.base_offset

    def index_of(self, offset: int) -> int:
        """The index of the batch holding `offset` (0 below the first, the last past the end)."""
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def append(self, stored: StoredBatch) -> None:
        """Add a batch after the others."""
        self.batches.append(stored)
        self._bases.append(stored.base_offset)
        self.size += len(stored.data)
        self.max_timestamp = max(self.max_timestamp, stored.max_timestamp)
        if self.rolling_timestamp is None:
            self.rolling_timestamp = stored.max_timestamp

    def truncate_to(self, offset: int) -> None:
        """Drop the batches that reach `offset` or above (a straddling batch goes whole)."""
        keep = bisect.bisect_left([b.last_offset for b in self.batches], offset)
        self._reset(self.batches[:keep])

    def drop_before(self, offset: int) -> None:
        """Drop the batches wholly below `offset` (DeleteRecords moved the log start)."""
        keep = bisect.bisect_left([b.last_offset for b in self.batches], offset)
        if keep:
            self._reset(self.batches[keep:])

    def replace(self, batches: Iterable[StoredBatch]) -> None:
        """The batches compaction kept, rebuilt with their base offsets."""
        self._reset(list(batches))

    def flush(self) -> None:
        """What was appended survives a crash (in memory: nothing to do)."""

    def delete(self) -> None:
        """Retention or truncation removed this segment (in memory: nothing to do)."""

    def _reset(self, batches: list[StoredBatch]) -> None:
        self.batches = batches
        self._bases = [b.base_offset for b in batches]
        self.size = sum(len(b.data) for b in batches)
        self.max_timestamp = max((b.max_timestamp for b in batches), default=-1)
        if not batches:
            self.rolling_timestamp = None
        elif self.rolling_timestamp is None:
            self.rolling_timestamp = batches[0].max_timestamp


#: Makes a log's segments: (base offset, creation time in ms) -> a new, empty segment.
SegmentFactory = Callable[[int, int], Segment]
