"""A broker's connections to the controller: requests, and the metadata log fetched with Fetch.

One connection carries registration, heartbeats and forwarded admin requests, one at a time;
another long-polls `__cluster_metadata` and replays every record into the broker's image. Both
dial through the cluster's link layer (`..network`), so a network cut stops them as it would a
real broker's.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from kipwire.client import TrioConnection
from kipwire.codec import ApiKey, decode_record
from kipwire.codec.records import iter_batches

from ..controller import METADATA_TOPIC
from ..network import CONTROLLER, Network, NodeId

if TYPE_CHECKING:
    from .state import BrokerState

FETCH_VERSION = 17
#: Kafka's fixed id of the metadata topic (Uuid.METADATA_TOPIC_ID).
METADATA_TOPIC_ID = uuid.UUID(int=1)
METADATA_FETCH_WAIT_MS = 500


class ControllerConnection(TrioConnection):
    """kipwire.client's trio connection, dialled through the link layer: `call` sends a request
    and awaits its answer; a closed or out-of-step connection raises an OSError."""

    @classmethod
    async def open(cls, network: Network, src: NodeId) -> ControllerConnection:
        """Connect node `src` to the controller through the link layer."""
        return cls(await network.connect(src, CONTROLLER), f"broker-{src}")

    @asynccontextmanager
    async def idle(self) -> AsyncIterator[None]:
        """Once the request in flight (if any) is answered: no request starts until exit."""
        async with self._lock:
            yield


async def fetch_metadata(broker: BrokerState, connection: ControllerConnection) -> None:
    """Replay the controller's metadata log into the broker's image, forever (long poll)."""
    while True:
        body = {
            "replica_state": {"replica_id": broker.node_id, "replica_epoch": broker.epoch},
            "max_wait_ms": METADATA_FETCH_WAIT_MS,
            "min_bytes": 1,
            "topics": [
                {
                    "topic": METADATA_TOPIC,
                    "topic_id": METADATA_TOPIC_ID,
                    "partitions": [
                        {
                            "partition": 0,
                            "fetch_offset": broker.image.offset + 1,
                            "partition_max_bytes": 8 << 20,
                        }
                    ],
                }
            ],
        }
        response = await connection.call(ApiKey.FETCH, FETCH_VERSION, body)
        (topic,) = response["responses"]
        (part,) = topic["partitions"]
        replayed = False
        for batch in iter_batches(part["records"] or b""):
            for record in batch.records:
                if record.offset > broker.image.offset:
                    name, _version, value = decode_record(record.value)
                    broker.image.replay(record.offset, name, value)
                    replayed = True
        if replayed:
            broker.metadata_replayed()
