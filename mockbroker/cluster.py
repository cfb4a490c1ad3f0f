"""The mock cluster: a controller and N brokers on trio, for trio code and (in a thread) for
everyone else.

Brokers register with the controller (BrokerRegistration with PreviousBrokerEpoch), heartbeat,
and replay the controller's metadata log into their metadata image. The controller is the
sans-I/O `kipwire.mockbroker.controller.Controller`; this module moves its requests and time.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from kipwire.codec import ErrorCode

from .broker.groups import GroupCoordinator
from .broker.log import PartitionLog
from .broker.node import BrokerNode
from .broker.transactions import TransactionCoordinator
from .controller import Controller, Semantics
from .controller.features import SUPPORTED_FEATURES
from .faults import Faults
from .recorder import Recorder
from .server import listen

BROKER_REGISTRATION, BROKER_HEARTBEAT, CREATE_TOPICS = 62, 63, 19
BROKER_REGISTRATION_VERSION, BROKER_HEARTBEAT_VERSION, CREATE_TOPICS_VERSION = 4, 1, 7
BROKER_RESOURCE = 4
DEFAULT_CONFIG = {
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "broker.heartbeat.interval.ms": "200",
    "broker.session.timeout.ms": "9000",
}
DEFAULT_FEATURES = {"eligible.leader.replicas.version": 1}
#: Brokers the controller should see as settings, not cluster-wide dynamic configs.
_BROKER_ONLY = {"socket.request.max.bytes", "broker.heartbeat.interval.ms"}


class ClusterError(RuntimeError):
    """A cluster operation that could not be done (a controller error, an unknown broker)."""


class Cluster:
    """A running mock cluster; made by `open_cluster` (trio) or `MockCluster` (sync)."""

    def __init__(
        self,
        brokers: int = 3,
        semantics: Semantics | None = None,
        config: Mapping[str, Any] | None = None,
        features: Mapping[str, int] | None = None,
        record: str | None = None,
        port: int = 0,
        cluster_id: str = "kipwire-mock",
    ) -> None:
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        self.config = {**DEFAULT_CONFIG, **{k: str(v) for k, v in (config or {}).items()}}
        self.features = {**DEFAULT_FEATURES, **(features or {})}
        self.cluster_id = cluster_id
        self.controller = Controller(
            semantics=semantics or Semantics.KAFKA_4_1,
            cluster_id=cluster_id,
            session_timeout_ms=int(self.config["broker.session.timeout.ms"]),
            default_partitions=int(self.config["num.partitions"]),
            default_replication_factor=int(self.config["default.replication.factor"]),
        )
        self.nodes = {
            i: BrokerNode(self, i, port + i - 1 if port else 0) for i in range(1, brokers + 1)
        }
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self.groups = GroupCoordinator()
        self.transactions = TransactionCoordinator(self.groups, self._write_marker)
        self.faults = Faults()
        self.recorder = Recorder(record) if record else None
        self._nursery: trio.Nursery | None = None
        self._scopes: dict[int, trio.CancelScope] = {}
        self._metadata_changed = trio.Event()

    # -- lifecycle --------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the controller and every broker; serve until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.controller.tick(self._now_ms())
                self._bootstrap()
                for node in self.nodes.values():
                    await self._start_node(node, previous_epoch=-1)
                nursery.start_soon(self.groups.run_timers)
                nursery.start_soon(self._heartbeats)
                if self.recorder is not None:
                    nursery.start_soon(self.recorder.run)
                task_status.started()
        finally:
            if self.recorder is not None:
                self.recorder.close()

    def _bootstrap(self) -> None:
        for name, level in sorted(self.features.items()):
            self.controller.replay("FeatureLevelRecord", {"name": name, "feature_level": level})
        for name, value in sorted(self.config.items()):
            if name not in _BROKER_ONLY:
                self.controller.replay(
                    "ConfigRecord",
                    {
                        "resource_type": BROKER_RESOURCE,
                        "resource_name": "",
                        "name": name,
                        "value": value,
                    },
                )

    async def _start_node(self, node: BrokerNode, previous_epoch: int) -> None:
        assert self._nursery is not None
        scope = trio.CancelScope()
        self._scopes[node.node_id] = scope
        listeners = await self._nursery.start(self._serve_node, node, scope)
        node.port = listeners[0].socket.getsockname()[1]
        node.running = True
        self._register(node, previous_epoch)

    async def _serve_node(
        self,
        node: BrokerNode,
        scope: trio.CancelScope,
        *,
        task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        with scope:
            await listen(node, node.port, task_status=task_status)

    def _register(self, node: BrokerNode, previous_epoch: int) -> None:
        low, high = SUPPORTED_FEATURES["metadata.version"]
        response = self.controller.handle(
            BROKER_REGISTRATION,
            BROKER_REGISTRATION_VERSION,
            {
                "broker_id": node.node_id,
                "cluster_id": self.cluster_id,
                "incarnation_id": node.incarnation_id,
                "listeners": [
                    {
                        "name": "PLAINTEXT",
                        "host": node.host,
                        "port": node.port,
                        "security_protocol": 0,
                    }
                ],
                "features": [
                    {
                        "name": "metadata.version",
                        "min_supported_version": low,
                        "max_supported_version": high,
                    }
                ],
                "rack": None,
                "previous_broker_epoch": previous_epoch,
            },
        )
        if response["error_code"]:
            raise ClusterError(
                f"broker {node.node_id} registration failed: "
                f"{ErrorCode(response['error_code']).name}"
            )
        node.epoch = response["broker_epoch"]
        self.propagate()
        self._heartbeat(node)

    def _heartbeat(self, node: BrokerNode, want_shut_down: bool = False) -> dict:
        self.controller.tick(self._now_ms())
        response = self.controller.handle(
            BROKER_HEARTBEAT,
            BROKER_HEARTBEAT_VERSION,
            {
                "broker_id": node.node_id,
                "broker_epoch": node.epoch,
                "current_metadata_offset": node.image.offset,
                "want_fence": False,
                "want_shut_down": want_shut_down,
            },
        )
        self.propagate()
        return response

    async def _heartbeats(self) -> None:
        interval = int(self.config["broker.heartbeat.interval.ms"]) / 1000
        while True:
            await trio.sleep(interval)
            self.controller.tick(self._now_ms())
            for node in self.nodes.values():
                if node.running:
                    self._heartbeat(node)
            self.propagate()

    @staticmethod
    def _now_ms() -> int:
        return int(trio.current_time() * 1000)

    def propagate(self) -> None:
        """Every running broker replays the metadata records it has not seen yet."""
        end = self.controller.end_offset
        for node in self.nodes.values():
            if node.running and node.image.offset + 1 < end:
                for entry in self.controller.records_since(node.image.offset + 1):
                    node.image.replay(entry.offset, entry.name, entry.record)
                node.data_arrived()
        topics = self.controller.state.topic_ids
        for key in [k for k in self.logs if k[0] not in topics]:
            del self.logs[key]
        self._metadata_changed.set()
        self._metadata_changed = trio.Event()

    # -- brokers ----------------------------------------------------------------------------

    def node(self, broker_id: int) -> BrokerNode:
        """A broker by id; ClusterError if there is none."""
        try:
            return self.nodes[broker_id]
        except KeyError:
            raise ClusterError(f"no broker {broker_id} (brokers: {sorted(self.nodes)})") from None

    async def stop_broker(self, broker_id: int, clean: bool = True) -> None:
        """Stop a broker: clean = controlled shutdown first; unclean = it just disappears."""
        node = self.node(broker_id)
        if not node.running:
            raise ClusterError(f"broker {broker_id} is not running")
        if clean:
            for _ in range(100):  # a controlled shutdown takes a few heartbeats at most
                if self._heartbeat(node, want_shut_down=True).get("should_shut_down"):
                    break
        self._scopes.pop(broker_id).cancel()
        node.running = False
        node.clean_shutdown = clean
        if not clean:
            self.controller.fence(broker_id)
        self.propagate()
        await trio.sleep(0)

    async def start_broker(self, broker_id: int) -> None:
        """Restart a stopped broker on its port; it registers as a new incarnation."""
        node = self.node(broker_id)
        if node.running:
            raise ClusterError(f"broker {broker_id} is already running")
        previous = node.epoch if node.clean_shutdown else -1
        node.reset_incarnation()
        await self._start_node(node, previous_epoch=previous)

    def live_nodes(self) -> list[BrokerNode]:
        """Running, unfenced brokers, by id."""
        return [
            n
            for _, n in sorted(self.nodes.items())
            if n.running and not self.controller.broker(n.node_id).fenced
        ]

    def coordinator_for(self, key: str) -> BrokerNode | None:
        """The broker coordinating a group or transactional id (a stable hash over live ones)."""
        live = self.live_nodes()
        return live[zlib.crc32(key.encode()) % len(live)] if live else None

    # -- topics and configs -----------------------------------------------------------------

    async def forward(self, api_key: int, api_version: int, body: Any) -> dict:
        """A request a broker forwards to the controller; answered once metadata has spread."""
        response = self.controller.handle(api_key, api_version, body)
        self.propagate()
        await trio.sleep(0)
        return response

    @property
    def auto_create_topics(self) -> bool:
        """Whether Metadata creates unknown topics (auto.create.topics.enable)."""
        return self.config["auto.create.topics.enable"].lower() == "true"

    async def auto_create(self, names: list[str]) -> None:
        """Create topics with the default partitions and replication factor."""
        replication = min(int(self.config["default.replication.factor"]), len(self.live_nodes()))
        await self.forward(
            CREATE_TOPICS,
            CREATE_TOPICS_VERSION,
            {
                "topics": [
                    {
                        "name": n,
                        "num_partitions": int(self.config["num.partitions"]),
                        "replication_factor": max(replication, 1),
                    }
                    for n in names
                ],
                "timeout_ms": 0,
            },
        )

    async def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a topic through the controller; ClusterError with its error otherwise."""
        response = await self.forward(
            CREATE_TOPICS,
            CREATE_TOPICS_VERSION,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": replication_factor,
                        "configs": [
                            {"name": k, "value": str(v)} for k, v in (config or {}).items()
                        ],
                    }
                ],
                "timeout_ms": 0,
            },
        )
        result = response["topics"][0]
        if result["error_code"]:
            message = result.get("error_message") or ErrorCode(result["error_code"]).name
            raise ClusterError(f"create_topic({name!r}): {message}")

    def topic_config(self, topic: str, name: str, default: str) -> str:
        """A topic's config: set on the topic, else cluster-wide, else `default`."""
        state = self.controller.state
        for key in ((2, topic), (BROKER_RESOURCE, "")):
            value = _config(state, key, name)
            if value is not None:
                return value
        return self.config.get(name, default)

    def partition(self, topic: str, index: int) -> Any:
        """The controller's view of a partition."""
        return self.controller.partition(topic, index)

    def _write_marker(self, topic: str, index: int, pid: int, epoch: int, commit: bool) -> None:
        leader = self.controller.partition(topic, index).leader
        node = self.nodes.get(leader)
        if node is None or not node.running:
            return  # an offline partition gets its marker when replication (next issue) exists
        node.partition_log(topic, index).append_marker(pid, epoch, commit)
        node.data_arrived()

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """True once `predicate()` holds (checked on every metadata change and every 10 ms)."""
        with trio.move_on_after(timeout):
            while not predicate():
                with trio.move_on_after(0.01):
                    await self._metadata_changed.wait()
            return True
        raise TimeoutError(f"condition still false after {timeout} s")

    @property
    def bootstrap_servers(self) -> str:
        """host:port of every broker, comma-separated."""
        return ",".join(n.address for _, n in sorted(self.nodes.items()))


def _config(state: Any, key: tuple[int, str], name: str) -> str | None:
    return state.config(key[0], key[1], name)


@asynccontextmanager
async def open_cluster(**kwargs: Any) -> AsyncIterator[Cluster]:
    """A running cluster for trio code: `async with open_cluster(brokers=3) as cluster`."""
    cluster = Cluster(**kwargs)
    async with trio.open_nursery() as nursery:
        await nursery.start(cluster.run)
        try:
            yield cluster
        finally:
            nursery.cancel_scope.cancel()
