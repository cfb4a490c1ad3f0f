"""Committed offsets in process mode: kept by the parent, replicated to every broker process.

Each broker process has its own group coordinators, and a group's coordinator is picked by a
hash over the live brokers, so it moves when a broker stops or a cluster restarts with others.
Kafka keeps committed offsets in the replicated `__consumer_offsets` topic, from which a new
coordinator loads them; here the parent plays that topic. After a request that may change
committed offsets (OffsetCommit, TxnOffsetCommit, EndTxn, OffsetDelete, DeleteGroups) and before
its response is sent, the broker process sends the parent what changed (a group's whole
offsets, in `offsets_file`'s entry form, or None once it has none) in one call; the parent keeps
it and passes it on to every other broker process, so whichever becomes the group's coordinator
already has its offsets. An acknowledged commit therefore survives its coordinator's process.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from typing import Any

from kipwire.codec import ApiKey

from ..coordinators import offsets_file
from ..coordinators.consumer_groups import ConsumerGroupCoordinator
from ..coordinators.groups import CommittedOffset
from ..coordinators.streams_groups import StreamsCoordinator
from ..handlers.registry import Handler
from .channel import Channel

#: The requests after which a broker process reports its committed offsets' changes.
WRITES = frozenset(
    {
        ApiKey.OFFSET_COMMIT,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.END_TXN,
        ApiKey.OFFSET_DELETE,
        ApiKey.DELETE_GROUPS,
    }
)
#: A group's committed offsets as `offsets_file` writes one: kind and entries; None: no offsets.
Entry = dict[str, Any] | None


class ReplicatedOffsets:
    """One broker process's side: report its own changes, apply the others'."""

    def __init__(
        self, channel: Channel, consumer: ConsumerGroupCoordinator, streams: StreamsCoordinator
    ) -> None:
        self.channel = channel
        self.consumer = consumer
        self.streams = streams
        #: Every group's offsets as the parent last had them (what a change is measured against).
        self.known: dict[str, dict[str, Any]] = {}

    def wrap(self, handlers: Mapping[int, Handler]) -> dict[int, Handler]:
        """The handler table with each offset-writing API reporting before it answers."""
        table = dict(handlers)
        for key in WRITES & table.keys():
            table[key] = replace(table[key], handle=self._reporting(table[key].handle))
        return table

    def _reporting(self, handle: Any) -> Any:
        async def reported(ctx: Any, body: Any) -> Any:
            response = await handle(ctx, body)
            await self.publish()
            return response

        return reported

    async def publish(self) -> None:
        """Send the parent every group whose offsets differ from what it has, and wait for it."""
        now = offsets_file.snapshot(self.consumer, self.streams)["groups"]
        changes: dict[str, Entry] = {g: e for g, e in now.items() if self.known.get(g) != e}
        changes.update({g: None for g in self.known.keys() - now.keys()})
        if not changes:
            return
        self._remember(changes)
        await self.channel.call("offsets", changes)

    def apply(self, changes: Mapping[str, Entry]) -> None:
        """Another broker's changes (or, at setup, everything the parent has): replace each
        group's offsets here; members and generations stay as they are."""
        for group_id, entry in changes.items():
            target = self._offsets(group_id, entry)
            if target is None:
                continue
            target.clear()
            for topic, partition, offset, epoch, metadata in entry["offsets"] if entry else []:
                target[topic, partition] = CommittedOffset(offset, epoch, metadata)
        self._remember(changes)

    def _offsets(
        self, group_id: str, entry: Entry
    ) -> MutableMapping[tuple[str, int], CommittedOffset] | None:
        streams = self.streams.group(
            group_id, create=entry is not None and entry["kind"] == "streams"
        )
        if streams is not None:
            return streams.offsets
        consumer = self.consumer.group(group_id)
        if consumer is not None:
            return consumer.offsets
        if entry is None:
            classic = self.consumer.classic.group(group_id)
            return classic.offsets if classic is not None else None
        return self.consumer.classic.offsets_for(group_id)

    def _remember(self, changes: Mapping[str, Entry]) -> None:
        for group_id, entry in changes.items():
            if entry is None:
                self.known.pop(group_id, None)
            else:
                self.known[group_id] = entry


class OffsetsKeeper:
    """The parent's side: the one copy every broker process reports to and is given."""

    def __init__(self, groups: Mapping[str, dict[str, Any]] | None = None) -> None:
        #: group id -> its offsets (`offsets_file`'s group entry), what `log.dirs` saves.
        self.groups: dict[str, dict[str, Any]] = dict(groups or {})

    def document(self) -> dict[str, Any]:
        """The offsets as `offsets_file` writes them."""
        return {"version": offsets_file.VERSION, "groups": dict(sorted(self.groups.items()))}

    def take(self, changes: Mapping[str, Entry], others: list[Channel]) -> None:
        """Keep a broker's changes and pass them on to the other broker processes."""
        for group_id, entry in changes.items():
            if entry is None:
                self.groups.pop(group_id, None)
            else:
                self.groups[group_id] = entry
        for channel in others:
            channel.post("replica_offsets", dict(changes))
