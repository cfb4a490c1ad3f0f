"""Retention: which segments of a log go, by time, by size and below the log start offset.

Kafka's UnifiedLog.deleteOldSegments, as pure functions over a log: walking from the oldest
segment, each one goes while the rule holds for it and every offset in it is below the high
watermark (an empty active segment never goes). With `cleanup.policy` holding `delete`:
`retention.ms` deletes a segment whose largest timestamp is older than that (its creation time
when it has no timestamp), `retention.bytes` deletes the oldest segments while the log stays at
or above that size without them; under any policy a segment wholly below the log start offset
(DeleteRecords, a follower's copy of its leader's) goes.
"""

from __future__ import annotations

from collections.abc import Callable

from .log import PartitionLog
from .segment import Segment


def deletable_segments(log: PartitionLog, now_ms: int) -> int:
    """How many of the oldest segments retention deletes now."""
    config = log.config
    count = _deletable(log, 0, lambda s, following: following <= log.log_start_offset)
    if config.delete and config.retention_ms >= 0:

        def expired(segment: Segment, following: int) -> bool:
            largest = segment.max_timestamp if segment.max_timestamp >= 0 else segment.created_ms
            return now_ms - largest > config.retention_ms

        count = _deletable(log, count, expired)
    if config.delete and config.retention_bytes >= 0:
        excess = sum(s.size for s in log.segments[count:]) - config.retention_bytes

        def too_big(segment: Segment, following: int) -> bool:
            nonlocal excess
            if excess - segment.size < 0:
                return False
            excess -= segment.size
            return True

        count = _deletable(log, count, too_big)
    return count


def _deletable(log: PartitionLog, start: int, rule: Callable[[Segment, int], bool]) -> int:
    """The count of segments from the oldest that go: those already counted (`start`), then
    each next one the rule allows, while it is wholly below the high watermark."""
    count = start
    segments = log.segments
    while count < len(segments):
        segment = segments[count]
        last = count == len(segments) - 1
        following = log.end_offset if last else segments[count + 1].base_offset
        if last and segment.size == 0:
            break
        if following > log.high_watermark or not rule(segment, following):
            break
        count += 1
    return count


def enforce_retention(log: PartitionLog, now_ms: int) -> bool:
    """Delete the segments retention allows; True when the log start offset moved."""
    count = deletable_segments(log, now_ms)
    if count == 0:
        return False
    start = log.log_start_offset
    return log.delete_segments(count) != start
