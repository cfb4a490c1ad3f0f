"""Committed offsets as JSON, for a data directory to keep across a restart.

The mock keeps committed offsets in its coordinators' memory, not in a `__consumer_offsets` log,
so a data directory saves them as a document: every group with committed offsets, its kind
(classic, consumer or streams) and its (topic, partition, offset, leader epoch, metadata) entries.
Restored, a classic or consumer group's offsets go to an empty classic group (which becomes a
consumer group, offsets and all, when a KIP-848 member joins), a streams group's to an empty
streams group. Members and generations are not kept: the clients rejoin, as after a coordinator
failover.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from .consumer_groups import ConsumerGroupCoordinator
from .groups import CommittedOffset
from .streams_groups import StreamsCoordinator

VERSION = 1
Offsets = Mapping[tuple[str, int], CommittedOffset]


def _entries(offsets: Offsets) -> list[list[Any]]:
    return [
        [topic, partition, c.offset, c.leader_epoch, c.metadata]
        for (topic, partition), c in sorted(offsets.items())
    ]


def snapshot(consumer: ConsumerGroupCoordinator, streams: StreamsCoordinator) -> dict[str, Any]:
    """Every group's committed offsets as a JSON-ready document."""
    groups: dict[str, Any] = {}
    kinds: list[tuple[str, Mapping[str, Any]]] = [
        ("classic", consumer.classic.groups),
        ("consumer", consumer.groups),
        ("streams", streams.groups),
    ]
    for kind, by_id in kinds:
        for group_id, group in sorted(by_id.items()):
            if group.offsets:
                groups[group_id] = {"kind": kind, "offsets": _entries(group.offsets)}
    return {"version": VERSION, "groups": groups}


def groups_of(document: Mapping[str, Any] | None) -> dict[str, Any]:
    """A document's groups (none for a missing document or another version)."""
    if document is None or document.get("version") != VERSION:
        return {}
    return dict(document.get("groups", {}))


def restore(
    document: Mapping[str, Any], consumer: ConsumerGroupCoordinator, streams: StreamsCoordinator
) -> int:
    """Put a snapshot's offsets back into empty groups; the number of groups restored."""
    if document.get("version") != VERSION:
        return 0
    restored = 0
    for group_id, group in document.get("groups", {}).items():
        target: MutableMapping[tuple[str, int], CommittedOffset]
        if group.get("kind") == "streams":
            streams_group = streams.group(group_id, create=True)
            assert streams_group is not None
            target = streams_group.offsets
        else:
            target = consumer.classic.offsets_for(group_id)
        for topic, partition, offset, epoch, metadata in group.get("offsets", []):
            target[topic, partition] = CommittedOffset(offset, epoch, metadata)
        restored += 1
    return restored
