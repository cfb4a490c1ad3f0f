"""Where a group's committed offsets live, whichever kind of group holds its id.

One lookup serves every writer of committed offsets that is not a member's own OffsetCommit:
a committed transaction's TxnOffsetCommit (`transactions.py` takes it as its `OffsetStores`).
A KIP-1071 streams group keeps its own offsets; a KIP-848 consumer group its own; any other id
is a classic group's, created when new (a transaction may commit for a group nobody joined).
Share groups commit no offsets (their progress is share-partition state).
"""

from __future__ import annotations

from collections.abc import MutableMapping

from .consumer_groups import ConsumerGroupCoordinator
from .groups import CommittedOffset
from .streams_groups import StreamsCoordinator


class GroupOffsets:
    """The committed offsets of any group id, across the streams, consumer and classic kinds."""

    def __init__(self, consumer: ConsumerGroupCoordinator, streams: StreamsCoordinator) -> None:
        self.consumer = consumer
        self.streams = streams

    def offsets_for(self, group_id: str) -> MutableMapping[tuple[str, int], CommittedOffset]:
        """A streams group's own offsets, else the consumer (or classic) group's."""
        streams = self.streams.group(group_id)
        if streams is not None:
            return streams.offsets
        return self.consumer.offsets_for(group_id)
