"""The controller as a network node: the sans-I/O Controller behind a trio listener.

Brokers reach it over TCP like KRaft brokers reach their quorum: BrokerRegistration,
BrokerHeartbeat and forwarded admin requests go to `Controller.handle`; a Fetch of
`__cluster_metadata` returns the metadata log as record batches whose records are the framed
metadata records, long-polled until the log grows. Requests the controller itself sends
(`Controller.outbox`: GetReplicaLogInfo for the KIP's unclean recovery) go to the brokers over
the link layer, and their answers come back through `Controller.deliver`.
"""

from __future__ import annotations

import logging
import math
import uuid
from typing import TYPE_CHECKING, Any

import trio

from kipwire.codec import APIS, DecodeError, EncodeError, ErrorCode, encode_response, message
from kipwire.codec.framing import peek_request_header
from kipwire.codec.records import build_batch

from .controller import METADATA_TOPIC
from .dispatch import CloseConnection, frame
from .network import CONTROLLER

if TYPE_CHECKING:
    from .cluster import Cluster

FETCH = 1
#: Kafka's fixed id of the metadata topic (Uuid.METADATA_TOPIC_ID).
METADATA_TOPIC_ID = uuid.UUID(int=1)
TICK_INTERVAL = 0.1


class ControllerNode:
    """The controller's listener, its clock and the metadata log's long poll."""

    node_id = 0

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.controller = cluster.controller
        self.host = "127.0.0.1"
        self.port = 0
        self.log = logging.getLogger("kipwire.mockbroker.controller")
        self._grew = trio.Event()
        self._outgoing, self._to_send = trio.open_memory_channel[tuple[int, int, int, dict]](
            math.inf
        )

    @property
    def address(self) -> str:
        """host:port of the listener."""
        return f"{self.host}:{self.port}"

    def log_grew(self) -> None:
        """Wake the metadata fetches waiting for records (call after appending)."""
        self._grew.set()
        self._grew = trio.Event()

    def now_ms(self) -> int:
        """The controller's clock (trio's, in milliseconds)."""
        return int(trio.current_time() * 1000)

    def apply(self, api_key: int, api_version: int, body: Any) -> Any:
        """Hand a request to the controller; wake the fetchers if it wrote records."""
        end = self.controller.end_offset
        self.controller.tick(self.now_ms())
        response = self.controller.handle(api_key, api_version, body)
        if self.controller.end_offset != end:
            self.log_grew()
        self._post_outbox()
        return response

    async def run_clock(self) -> None:
        """Tick the controller (session timeouts, periodic elections) and send its requests."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._send_requests, nursery)
            while True:
                await trio.sleep(TICK_INTERVAL)
                if self.controller.tick(self.now_ms()):
                    self.log_grew()
                self._post_outbox()

    def _post_outbox(self) -> None:
        for request in self.controller.outbox():
            self._outgoing.send_nowait(request)

    async def _send_requests(self, nursery: trio.Nursery) -> None:
        async for request in self._to_send:
            nursery.start_soon(self._send, *request)

    async def _send(self, broker_id: int, api_key: int, api_version: int, body: dict) -> None:
        """One controller-to-broker request; an unreachable broker's answer never comes."""
        # imported here: the broker's channel module imports this one for the metadata topic id
        from .broker.controller_channel import ControllerConnection

        try:
            stream = await self.cluster.network.connect(CONTROLLER, broker_id)
        except OSError as exc:
            self.log.debug("request %d to broker %d: %s", api_key, broker_id, exc)
            return
        connection = ControllerConnection(stream, "controller")
        try:
            response = await connection.call(api_key, api_version, body)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self.log.debug("request %d to broker %d: %s", api_key, broker_id, exc)
            return
        finally:
            with trio.CancelScope(shield=True):
                await connection.aclose()
        end = self.controller.end_offset
        self.controller.tick(self.now_ms())
        self.controller.deliver(broker_id, api_key, api_version, response)
        if self.controller.end_offset != end:
            self.log_grew()
        self._post_outbox()

    async def dispatch(self, data: memoryview) -> bytes | None:
        """One request frame to the controller, one response frame back."""
        try:
            header = peek_request_header(data)
            codec = message(APIS[header.api_key][1], header.api_version)
            body, _ = codec.parse_at(data, header.header_size)
        except DecodeError as exc:
            raise CloseConnection(f"unreadable controller request: {exc}") from None
        key, version, cid = header.api_key, header.api_version, header.correlation_id
        self.log.debug("%s v%d cid %d from %s", codec.message_name, version, cid, header.client_id)
        if key == FETCH:
            response = await self._fetch(body)
        else:
            response = self.apply(key, version, body)
        try:
            return frame(encode_response(key, version, response, correlation_id=cid))
        except EncodeError as exc:
            raise CloseConnection(f"controller response does not encode: {exc}") from None

    async def _fetch(self, body: Any) -> dict:
        """Metadata log records from the fetch offset; waits up to MaxWaitMs for new ones."""
        topics = body["topics"]
        named = topics[0].get("topic") or METADATA_TOPIC if len(topics) == 1 else None
        by_id = topics[0].get("topic_id") in (None, METADATA_TOPIC_ID, uuid.UUID(int=0))
        if (
            len(topics) != 1
            or named != METADATA_TOPIC
            or not by_id
            or len(topics[0]["partitions"]) != 1
        ):
            return {"error_code": ErrorCode.INVALID_REQUEST, "responses": []}
        request = topics[0]["partitions"][0]
        offset = request["fetch_offset"]
        with trio.move_on_after(max(body["max_wait_ms"], 0) / 1000):
            while offset >= self.controller.end_offset:
                await self._grew.wait()
        entries = self.controller.records_since(offset)
        records = b""
        if entries:
            records = build_batch(
                [{"key": None, "value": e.data, "headers": []} for e in entries],
                base_offset=entries[0].offset,
            )
        end = self.controller.end_offset
        part = {
            "partition_index": 0,
            "error_code": 0 if 0 <= offset <= end else ErrorCode.OFFSET_OUT_OF_RANGE,
            "high_watermark": end,
            "last_stable_offset": end,
            "log_start_offset": 0,
            "records": records,
        }
        return {
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {"topic": METADATA_TOPIC, "topic_id": METADATA_TOPIC_ID, "partitions": [part]}
            ],
        }
