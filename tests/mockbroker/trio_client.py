"""A trio Kafka client built on the codec, for tests that run inside the cluster's trio loop (and
so under its MockClock): an idempotent acks=all producer that remembers what was acknowledged,
and a reader of a partition up to its high watermark."""

from __future__ import annotations

import itertools
import struct
from typing import Any

import trio

from kipwire.codec import ApiKey, ErrorCode, decode_response, encode_request
from kipwire.codec.framing import FrameBuffer
from kipwire.codec.records import build_batch, iter_batches
from kipwire.mockbroker.cluster import Cluster

PRODUCE_VERSION, FETCH_VERSION, INIT_PRODUCER_ID_VERSION = 9, 12, 4
_SIZE = struct.Struct(">i").pack


class WireError(Exception):
    """A request that got no usable answer (closed, timed out) or an error code."""


class TrioWire:
    """One client connection to a broker; `call` sends one request and awaits its answer."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._frames = FrameBuffer()
        self._ids = itertools.count(1)

    @classmethod
    async def open(cls, address: str) -> TrioWire:
        """Connect to host:port."""
        host, port = address.rsplit(":", 1)
        return cls(await trio.open_tcp_stream(host, int(port)))

    async def call(self, api_key: int, version: int, body: dict) -> Any:
        """Send a request, return the decoded response body."""
        cid = next(self._ids)
        payload = encode_request(api_key, version, body, correlation_id=cid, client_id="trio-test")
        await self._stream.send_all(_SIZE(len(payload)) + payload)
        while (frame := self._frames.next_frame()) is None:
            data = await self._stream.receive_some(1 << 20)
            if not data:
                raise WireError("the broker closed the connection")
            self._frames.feed(data)
        return decode_response(frame, api_key, version).body

    async def aclose(self) -> None:
        """Close the connection."""
        await self._stream.aclose()


async def call_broker(
    cluster: Cluster, broker_id: int, api_key: int, version: int, body: dict, timeout: float
) -> Any:
    """One request on a fresh connection; WireError if the broker is down or too slow."""
    node = cluster.nodes[broker_id]
    if not node.running:
        raise WireError(f"broker {broker_id} is not running")
    with trio.move_on_after(timeout):
        try:
            wire = await TrioWire.open(node.address)
        except OSError as exc:
            raise WireError(f"broker {broker_id}: {exc}") from None
        try:
            return await wire.call(api_key, version, body)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise WireError(f"broker {broker_id}: {exc}") from None
        finally:
            await wire.aclose()
    raise WireError(f"broker {broker_id} did not answer within {timeout} s")


class AcksAllProducer:
    """An idempotent acks=all producer for one partition: one record per batch, and a record that
    was not acknowledged is retried with the same sequence before any new one."""

    def __init__(self, cluster: Cluster, topic: str, partition: int = 0, timeout: float = 2.0):
        self.cluster, self.topic, self.partition, self.timeout = cluster, topic, partition, timeout
        self.producer_id, self.epoch, self.sequence = -1, -1, 0
        self.pending: bytes | None = None
        #: offset -> value of every acknowledged record
        self.acked: dict[int, bytes] = {}

    async def init(self, broker_id: int) -> None:
        """InitProducerId (no transactional id): the producer id and epoch to write with."""
        body = {"transactional_id": None, "transaction_timeout_ms": -1}
        response = await call_broker(
            self.cluster,
            broker_id,
            ApiKey.INIT_PRODUCER_ID,
            INIT_PRODUCER_ID_VERSION,
            body,
            self.timeout,
        )
        if response["error_code"]:
            raise WireError(f"InitProducerId: {ErrorCode(response['error_code']).name}")
        self.producer_id, self.epoch = response["producer_id"], response["producer_epoch"]

    async def send(self, value: bytes) -> bool:
        """Try the pending record (if any), then `value`; True when `value` was acknowledged."""
        if self.pending is not None and not await self._attempt():
            return False
        self.pending = value
        return await self._attempt()

    async def _attempt(self) -> bool:
        assert self.pending is not None
        leader = self.cluster.partition(self.topic, self.partition).leader
        if leader not in self.cluster.nodes:
            return False
        batch = build_batch(
            [{"key": None, "value": self.pending, "headers": [], "timestamp": 0}],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
        )
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": int(self.timeout * 1000),
            "topic_data": [
                {
                    "name": self.topic,
                    "partition_data": [{"index": self.partition, "records": batch}],
                }
            ],
        }
        try:
            response = await call_broker(
                self.cluster, leader, ApiKey.PRODUCE, PRODUCE_VERSION, body, self.timeout
            )
        except WireError:
            return False
        (part,) = response["responses"][0]["partition_responses"]
        if part["error_code"]:
            return False
        self.acked[part["base_offset"]] = self.pending
        self.pending = None
        self.sequence += 1
        return True


async def read_partition(
    cluster: Cluster, broker_id: int, topic: str, partition: int, timeout: float = 2.0
) -> tuple[int, list[tuple[int, bytes]]]:
    """(high watermark, [(offset, value)...]) read from a broker with Fetch, from offset 0."""
    records: list[tuple[int, bytes]] = []
    offset, hwm = 0, 0
    for _ in range(10_000):
        body = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "fetch_offset": offset,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
        }
        response = await call_broker(cluster, broker_id, ApiKey.FETCH, FETCH_VERSION, body, timeout)
        (part,) = response["responses"][0]["partitions"]
        if part["error_code"]:
            raise WireError(f"Fetch from {broker_id}: {ErrorCode(part['error_code']).name}")
        hwm = part["high_watermark"]
        batches = list(iter_batches(part["records"] or b""))
        for batch in batches:
            records.extend((r.offset, r.value) for r in batch.records if r.offset >= offset)
        if not batches:
            return hwm, records
        offset = max(b.base_offset + b.last_offset_delta + 1 for b in batches)
        if offset >= hwm:
            return hwm, records
    raise WireError(f"{topic}-{partition} did not end after 10,000 fetches")
