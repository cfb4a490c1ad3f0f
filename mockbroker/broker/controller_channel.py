"""A broker's connections to the controller: requests, and the metadata log fetched with Fetch.

One connection carries registration, heartbeats and forwarded admin requests, one at a time;
another long-polls `__cluster_metadata` and replays every record into the broker's image. Both
dial through the cluster's link layer (`..network`), so a network cut stops them as it would a
real broker's.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from kipwire.codec import decode_record, decode_response, encode_request
from kipwire.codec.framing import FrameBuffer
from kipwire.codec.records import iter_batches

from ..controller import METADATA_TOPIC
from ..controller_node import METADATA_TOPIC_ID
from ..network import CONTROLLER, Network, NodeId

if TYPE_CHECKING:
    from .node import BrokerNode

FETCH, FETCH_VERSION = 1, 17
METADATA_FETCH_WAIT_MS = 500
_SIZE = struct.Struct(">i").pack


class ControllerConnection:
    """One TCP connection to the controller; `call` sends a request and awaits its answer."""

    def __init__(self, stream: trio.abc.Stream, client_id: str) -> None:
        self._stream = stream
        self._frames = FrameBuffer()
        self._client_id = client_id
        self._ids = itertools.count(1)
        self._lock = trio.Lock()

    @classmethod
    async def open(cls, network: Network, src: NodeId) -> ControllerConnection:
        """Connect node `src` to the controller through the link layer."""
        return cls(await network.connect(src, CONTROLLER), f"broker-{src}")

    async def call(self, api_key: int, api_version: int, body: dict) -> Any:
        """Send one request and return the decoded response body."""
        async with self._lock:
            cid = next(self._ids)
            payload = encode_request(
                api_key, api_version, body, correlation_id=cid, client_id=self._client_id
            )
            await self._stream.send_all(_SIZE(len(payload)) + payload)
            while True:
                response = self._frames.next_frame()
                if response is not None:
                    break
                data = await self._stream.receive_some(1 << 20)
                if not data:
                    raise trio.BrokenResourceError("the controller closed the connection")
                self._frames.feed(data)
            decoded = decode_response(response, api_key, api_version)
            if decoded.correlation_id != cid:
                raise trio.BrokenResourceError(
                    f"controller answered correlation id {decoded.correlation_id}, not {cid}"
                )
            return decoded.body

    @asynccontextmanager
    async def idle(self) -> AsyncIterator[None]:
        """Once the request in flight (if any) is answered: no request starts until exit."""
        async with self._lock:
            yield

    async def aclose(self) -> None:
        """Close the connection."""
        await self._stream.aclose()


async def fetch_metadata(broker: BrokerNode, connection: ControllerConnection) -> None:
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
        response = await connection.call(FETCH, FETCH_VERSION, body)
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
