"""The controller as a network node: the sans-I/O Controller behind the serve pipeline.

Brokers reach it over TCP like KRaft brokers reach their quorum, through the same pipeline as a
broker's clients (`serve.py`: one decode, faults, one encode): BrokerRegistration,
BrokerHeartbeat and forwarded admin requests go to `Controller.handle`; a Fetch of
`__cluster_metadata` returns the metadata log as record batches whose records are the framed
metadata records, long-polled until the log grows. Requests the controller itself sends
(`Controller.outbox`: GetReplicaLogInfo for the KIP's unclean recovery) go to the brokers over
the link layer, and their answers come back through `Controller.deliver`.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from kipwire.codec import APIS, ApiKey, ErrorCode
from kipwire.codec.records import build_batch

from .broker.controller_channel import METADATA_TOPIC_ID, ControllerConnection
from .controller import METADATA_TOPIC, Controller
from .controller.apis import SERVED
from .controller.quorum import CONTROLLER_NODE_ID, QuorumState, update_raft_voter
from .faults import Faults
from .handlers.describe_cluster import CONTROLLER_ENDPOINT, endpoint_type_error
from .handlers.registry import Handler, top_level_error
from .limits import NodeLimits
from .network import CONTROLLER, Network
from .serve import Taps

if TYPE_CHECKING:
    from .controller.metadata_files import MetadataLogFiles
    from .security.controller_authorization import ControllerAuthorization

TICK_INTERVAL = 0.1
#: A gap between the controller's turns longer than its tick by this much is a stall of the
#: event loop (liveness first: a broker is not fenced for heartbeats the loop could not hear).
STALL_MARGIN = 0.5


@dataclass(frozen=True, slots=True)
class ControllerRequest:
    """A request to the controller: its API and version."""

    api_key: int
    api_version: int


class ControllerHandlers(Mapping[int, Handler]):
    """The controller's handler table: every API and version the codec knows goes to it (the
    Controller answers versions and APIs it does not serve with protocol errors itself)."""

    def __init__(self, node: ControllerNode) -> None:
        self._node = node
        self._table: dict[int, Handler] = {}

    def __getitem__(self, api_key: int) -> Handler:
        handler = self._table.get(api_key)
        if handler is None:
            api = APIS.get(api_key)
            if api is None:
                raise KeyError(api_key)
            low, high = api.versions
            node = self._node
            own = {
                ApiKey.FETCH: node.fetch,
                ApiKey.DESCRIBE_QUORUM: node.describe_quorum,
                ApiKey.DESCRIBE_CLUSTER: node.describe_cluster,
                ApiKey.UPDATE_RAFT_VOTER: node.update_raft_voter,
            }
            handle = own.get(api_key, node.handle_request)
            guard = node.authorization
            # only what is served is checked: any other API keeps its protocol error
            if guard is not None and (api_key in own or api_key in SERVED):
                handle = guard.guard(api_key, handle)
            handler = Handler(api_key, low, high, handle, top_level_error, low)
            self._table[api_key] = handler
        return handler

    def __iter__(self) -> Iterator[int]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


class ControllerNode:
    """The controller's listener, its clock and the metadata log's long poll."""

    node_id = CONTROLLER
    closes_on_malformed = True
    #: Client quotas are the brokers' (`broker.quotas`); the controller charges none.
    quotas = None

    def __init__(
        self,
        controller: Controller,
        network: Network,
        faults: Faults,
        recorder: Taps | None,
        max_request_bytes: int,
        authorization: ControllerAuthorization | None = None,
        limits: NodeLimits | None = None,
    ) -> None:
        self.controller = controller
        #: Kafka's ControllerApis checks with `authorizer=True` (None: nothing is checked)
        self.authorization = authorization
        self.network = network
        self.faults = faults
        self.recorder = recorder
        self.max_request_bytes = max_request_bytes
        self.limits = limits or NodeLimits()
        self.handlers = ControllerHandlers(self)
        self.host = "127.0.0.1"
        self.port = 0
        self.internal_port: int | None = None
        #: Ranges its ApiVersions adds: SaslHandshake and SaslAuthenticate on a SASL listener.
        self.advertised_extra: list[dict] = []
        self.log = logging.getLogger("kipwire.mockbroker.controller")
        self._grew = trio.Event()
        self._last_turn: float | None = None
        self.quorum = QuorumState()
        #: The metadata log's files under log.dirs (None: the log is in memory only).
        self.metadata_files: MetadataLogFiles | None = None
        self._outgoing, self._to_send = trio.open_memory_channel[tuple[int, int, int, dict]](
            math.inf
        )

    @property
    def address(self) -> str:
        """host:port of the listener clients (`--bootstrap-controller`) reach."""
        return f"{self.host}:{self.port}"

    @property
    def internal_address(self) -> str:
        """host:port brokers dial (the client listener unless that one is secured)."""
        return f"{self.host}:{self.internal_port or self.port}"

    def log_grew(self) -> None:
        """Wake the metadata fetches waiting for records (call after appending); with a data
        directory, the new records reach its files first."""
        if self.metadata_files is not None:
            self.metadata_files.sync(self.controller)
        self._grew.set()
        self._grew = trio.Event()

    def now_ms(self) -> int:
        """The controller's clock (trio's, in milliseconds)."""
        return int(trio.current_time() * 1000)

    def apply(self, api_key: int, api_version: int, body: Any) -> Any:
        """Hand a request to the controller; wake the fetchers if it wrote records."""
        end = self.controller.end_offset
        self._tick()
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
                if self._tick():
                    self.log_grew()
                self._post_outbox()

    def _tick(self) -> bool:
        """Tick the controller, first forgiving sessions the time the event loop stalled;
        True if the tick wrote records."""
        now = trio.current_time()
        if self._last_turn is not None:
            gap = now - self._last_turn - TICK_INTERVAL
            if gap > STALL_MARGIN:
                self.log.warning("the controller could not run for %.2f s", gap)
                self.controller.stalled(int(gap * 1000))
        self._last_turn = now
        return bool(self.controller.tick(self.now_ms()))

    def _post_outbox(self) -> None:
        for request in self.controller.outbox():
            self._outgoing.send_nowait(request)

    async def _send_requests(self, nursery: trio.Nursery) -> None:
        async for request in self._to_send:
            nursery.start_soon(self._send, *request)

    async def _send(self, broker_id: int, api_key: int, api_version: int, body: dict) -> None:
        """One controller-to-broker request; an unreachable broker's answer never comes."""
        try:
            stream = await self.network.connect(CONTROLLER, broker_id)
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
        self._tick()
        self.controller.deliver(broker_id, api_key, api_version, response)
        if self.controller.end_offset != end:
            self.log_grew()
        self._post_outbox()

    def request_context(
        self, api_key: int, api_version: int, correlation_id: int, client_id: str | None
    ) -> ControllerRequest:
        """What the controller's handlers know of a request beyond its body."""
        return ControllerRequest(api_key, api_version)

    def topic_name(self, entry: Mapping[str, Any], key: str) -> str | None:
        """The topic a request entry names (the controller's APIs carry names)."""
        return entry.get(key)

    async def handle_request(self, ctx: ControllerRequest, body: Any) -> Any:
        """A request for the sans-I/O controller (every API but the metadata log's Fetch)."""
        response = self.apply(ctx.api_key, ctx.api_version, body)
        if ctx.api_key == ApiKey.API_VERSIONS and self.advertised_extra:
            keys = [*response["api_keys"], *self.advertised_extra]
            response = {**response, "api_keys": sorted(keys, key=lambda k: k["api_key"])}
        return response

    async def describe_quorum(self, ctx: ControllerRequest, body: Any) -> dict:
        """DescribeQuorum: this controller leads, the brokers observe (`controller.quorum`)."""
        return self.quorum.describe(
            ctx.api_version, body, self.controller.end_offset, _wall_ms(), (self.host, self.port)
        )

    async def update_raft_voter(self, ctx: ControllerRequest, body: Any) -> dict:
        """UpdateRaftVoter: answered with this leader's endpoint on the listener asked."""
        return update_raft_voter(self.controller.cluster_id, body, (self.host, self.port))

    async def describe_cluster(self, ctx: ControllerRequest, body: Any) -> dict:
        """DescribeCluster on the controller's listener (KIP-919): the controllers, this one
        alone, at the address clients reached it on, leading the quorum."""
        refused = endpoint_type_error(ctx.api_version, body, CONTROLLER_ENDPOINT)
        if refused is not None:
            return refused
        return {
            "error_code": ErrorCode.NONE,
            "cluster_id": self.controller.cluster_id,
            "controller_id": CONTROLLER_NODE_ID,
            "brokers": [
                {
                    "broker_id": CONTROLLER_NODE_ID,
                    "host": self.host,
                    "port": self.port,
                    "rack": None,
                    "is_fenced": False,
                }
            ],
            "endpoint_type": CONTROLLER_ENDPOINT,
        }

    async def fetch(self, ctx: ControllerRequest, body: Any) -> dict:
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
        replica = (body.get("replica_state") or {}).get("replica_id", body.get("replica_id", -1))
        self.quorum.fetched(replica, offset, self.controller.end_offset, _wall_ms())
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
            "error_code": ErrorCode.NONE if 0 <= offset <= end else ErrorCode.OFFSET_OUT_OF_RANGE,
            "high_watermark": end,
            "last_stable_offset": end,
            "log_start_offset": 0,
            "records": records,
        }
        return {
            "error_code": ErrorCode.NONE,
            "session_id": 0,
            "responses": [
                {"topic": METADATA_TOPIC, "topic_id": METADATA_TOPIC_ID, "partitions": [part]}
            ],
        }


def _wall_ms() -> int:
    # DescribeQuorum's timestamps are wall-clock, as Kafka's are, whatever trio's clock says
    return int(time.time() * 1000)
