"""The mock cluster: a controller node and N brokers on trio (`open_cluster`; `MockCluster`
runs it in a thread for synchronous code).

Brokers talk to the controller over TCP as KRaft brokers do: BrokerRegistration (with
PreviousBrokerEpoch), BrokerHeartbeat, forwarded admin requests, and Fetch of
`__cluster_metadata`, whose records they replay into their metadata image. The controller is the
sans-I/O `kipwire.mockbroker.controller.Controller`; this module only moves bytes and time.

Faults (`faults.py`, each injection returns a handle with `fired` and `remove()`):
`inject_error`, `add_latency`, and `partition_network(a, b)`, `isolate(b)` and `heal()`, which act
on the link layer (`network.py`, the controller's id there is `network.CONTROLLER`); a broker
that cannot heartbeat
is fenced after `broker.session.timeout.ms` (2 s in the mock). Every timer runs on trio's clock,
so under `trio.testing.MockClock(autojump_threshold=0)` (pytest-trio's `autojump_clock`, or
`MockCluster(clock=...)`) long timeouts cost no real time.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from kipwire.codec import ApiKey, ConfigResourceType, ErrorCode

from . import views
from .broker.log import PartitionLog
from .broker_node import BrokerNode, ClusterServices
from .broker_runner import BrokerRunner
from .controller import Controller, Semantics
from .controller.broker_configs import cluster_config
from .controller.features import fresh_features
from .controller_node import ControllerNode
from .coordinators.consumer_groups import ConsumerGroupCoordinator
from .coordinators.group_offsets import GroupOffsets
from .coordinators.groups import GroupCoordinator
from .coordinators.share_groups import ShareCoordinator
from .coordinators.streams_groups import StreamsCoordinator
from .coordinators.transactions import TransactionCoordinator
from .data_dir import DataDir
from .errors import ClusterError, UnknownResource, WrongState
from .faults import CutInjection, ErrorInjection, Faults, LatencyInjection, PartitionKey
from .gc_pacing import paced_full_collections
from .handlers.registry import listed
from .limits import NodeLimits
from .metrics import cluster_metrics
from .network import CONTROLLER, Network, NodeId
from .recorder import Recorder
from .security.api import SecurityApi
from .security.config import SecurityConfig
from .security.runtime import ClusterSecurity
from .serve import open_listeners

CREATE_TOPICS_VERSION = 7
# quiet by default: the brokers' loggers say nothing unless the application configures logging
logging.getLogger("kipwire.mockbroker").addHandler(logging.NullHandler())
#: Brokers the controller should see as settings, not cluster-wide dynamic configs.
BROKER_ONLY = {
    "socket.request.max.bytes",
    "queued.max.request.bytes",
    "broker.heartbeat.interval.ms",
    "replica.lag.time.max.ms",
    "log.dirs",
    "log.retention.check.interval.ms",
}


class Cluster(SecurityApi):
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
        record_clients_only: bool = False,
        record_max_bytes: int | None = None,
        **security: Any,
    ) -> None:
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        # unknown keys and bad values are refused here, with Kafka's message (ConfigError)
        self.config = cluster_config(config or {})
        # security_protocol, sasl_mechanisms, users, super_users, authorizer, ssl_client_auth
        settings = SecurityConfig.from_arguments(**security)
        self.security = ClusterSecurity(settings, self.config) if settings.secured else None
        semantics = semantics or Semantics.KAFKA_4_4
        served = [h.api_key for h in listed(semantics.release)]
        self.features = {**fresh_features(semantics.release, served), **(features or {})}
        self.cluster_id = cluster_id
        self.controller = Controller(
            semantics=semantics,
            cluster_id=cluster_id,
            session_timeout_ms=int(self.config["broker.session.timeout.ms"]),
            default_partitions=int(self.config["num.partitions"]),
            default_replication_factor=int(self.config["default.replication.factor"]),
            **(self.security.controller_settings() if self.security else {}),
        )
        self.controller.static_configs = {
            name: value for name, value in self.config.items() if name not in BROKER_ONLY
        }
        self.groups = GroupCoordinator(int(self.config["group.initial.rebalance.delay.ms"]))
        self.consumer_groups = ConsumerGroupCoordinator(self.groups)
        self.share_groups = ShareCoordinator()
        self.streams_groups = StreamsCoordinator()
        # a committed transaction's offsets go where the group keeps them, whatever its kind
        self.transactions = TransactionCoordinator(
            GroupOffsets(self.consumer_groups, self.streams_groups), self._write_marker
        )
        self.network = Network(self._address_of)
        self.faults = Faults(self.network)
        self.recorder = (
            Recorder(
                record,
                clients_only=record_clients_only,
                is_node=lambda peer: self.faults.source_of(peer) is not None,
                max_bytes=record_max_bytes,
            )
            if record
            else None
        )
        self._nursery: trio.Nursery | None = None
        self._metadata_changed = trio.Event()
        services = ClusterServices(
            cluster_id=cluster_id,
            config=self.config,
            network=self.network,
            faults=self.faults,
            recorder=self.recorder,
            groups=self.groups,
            consumer_groups=self.consumer_groups,
            share_groups=self.share_groups,
            streams_groups=self.streams_groups,
            transactions=self.transactions,
            coordinator_for=self.coordinator_for,
            high_watermark=self._high_watermark,
            caught_up=self.caught_up,
            metadata_changed=self.metadata_changed,
            recovering_rejects_fetch=semantics.recovering_rejects_fetch,
            release=semantics.release,
            security=self.security,
        )
        self.nodes = {
            i: BrokerNode(i, port + i - 1 if port else 0, services) for i in range(1, brokers + 1)
        }
        self._runners = {i: BrokerRunner(n, self.network) for i, n in self.nodes.items()}
        self.controller_node = ControllerNode(
            self.controller,
            self.network,
            self.faults,
            self.recorder,
            self.max_request_bytes,
            limits=NodeLimits.from_config(self.config),
        )
        self.data_dir = DataDir(self.config["log.dirs"]) if self.config.get("log.dirs") else None
        self._controller_security = None
        if self.security is not None:
            self._controller_security = self.security.secure_controller(self.controller_node)

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def max_request_bytes(self) -> int:
        """socket.request.max.bytes: larger frames are refused before they are read."""
        return int(self.config["socket.request.max.bytes"])

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the controller and every broker; serve until cancelled."""
        try:
            with paced_full_collections():
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    self.controller.tick(self.controller_node.now_ms())
                    if self.data_dir is None or not self.data_dir.load(self):
                        self._bootstrap()
                    await open_listeners(
                        nursery, self.controller_node, 0, self._controller_security
                    )
                    nursery.start_soon(self.controller_node.run_clock)
                    async with trio.open_nursery() as starting:
                        for node in self.nodes.values():
                            previous = node.log_dirs.take_previous_epoch()  # -1 in memory
                            starting.start_soon(self._start_node, node, previous)
                    await self.caught_up()
                    nursery.start_soon(self.groups.run_timers)
                    nursery.start_soon(self.consumer_groups.run_timers)
                    nursery.start_soon(self.share_groups.run_timers)
                    nursery.start_soon(self.streams_groups.run_timers)
                    nursery.start_soon(self.transactions.run_timers)
                    if self.recorder is not None:
                        nursery.start_soon(self.recorder.run)
                    if self.data_dir is not None:
                        nursery.start_soon(self.data_dir.run, self)
                    task_status.started()
        finally:
            if self.data_dir is not None:  # the brokers still running then stop cleanly
                self.data_dir.close(self, [r.node for r in self._runners.values() if r.started])
            if self.recorder is not None:
                self.recorder.close()
            if self.security is not None:
                self.security.close()

    def _bootstrap(self) -> None:
        """The records a formatted cluster starts with: feature levels, cluster-wide configs."""
        for name, level in sorted(self.features.items()):
            self.controller.replay("FeatureLevelRecord", {"name": name, "feature_level": level})
        for name, value in sorted(self.config.items()):
            if name not in BROKER_ONLY:
                self.controller.replay(
                    "ConfigRecord",
                    {
                        "resource_type": ConfigResourceType.BROKER,
                        "resource_name": "",
                        "name": name,
                        "value": value,
                    },
                )
        if self.controller.state.elr_enabled and "min.insync.replicas" not in self.config:
            # as Kafka 4.4's format with ELR on (KIP-966): the cluster's min.insync.replicas
            # written as a dynamic cluster-level config, which every topic inherits
            self.controller.replay(
                "ConfigRecord",
                {
                    "resource_type": ConfigResourceType.BROKER,
                    "resource_name": "",
                    "name": "min.insync.replicas",
                    "value": "1",
                },
            )
        for name, record in self.security.bootstrap_records() if self.security else ():
            self.controller.append(name, record)

    async def _start_node(self, node: BrokerNode, previous_epoch: int) -> None:
        assert self._nursery is not None
        await self._runners[node.node_id].start(self._nursery, previous_epoch)

    def metadata_changed(self) -> None:
        """A broker replayed metadata: wake `caught_up` and `wait_until`."""
        self._metadata_changed.set()
        self._metadata_changed = trio.Event()

    async def caught_up(self, timeout: float = 10.0) -> None:
        """Wait until every running broker has replayed the whole metadata log."""
        with trio.move_on_after(timeout):
            while True:
                last = self.controller.end_offset - 1
                # a broker cut off from the controller cannot catch up until the cut heals
                reachable = [
                    n
                    for n in self.nodes.values()
                    if n.running and not self.network.is_cut(n.node_id, CONTROLLER)
                ]
                if all(n.image.offset >= last for n in reachable):
                    return
                await self._metadata_changed.wait()
        raise ClusterError(f"brokers did not catch up with the metadata log in {timeout} s")

    # -- brokers ----------------------------------------------------------------------------

    def node(self, broker_id: int) -> BrokerNode:
        """A broker by id; ClusterError if there is none."""
        try:
            return self.nodes[broker_id]
        except KeyError:
            brokers = sorted(self.nodes)
            raise UnknownResource(f"no broker {broker_id} (brokers: {brokers})") from None

    async def stop_broker(self, broker_id: int, clean: bool = True) -> None:
        """Stop a broker. clean: a controlled shutdown (it leaves every ISR and leadership), its
        logs flushed and the CleanShutdownFile written; unclean: it disappears and loses every
        record above each log's flushed offset (flush.messages, flush.ms, `flush`)."""
        node = self.node(broker_id)
        if not node.running:
            raise WrongState(f"broker {broker_id} is not running")
        reachable = not self.network.is_cut(broker_id, CONTROLLER)
        await self._runners[broker_id].stop(clean, reachable)
        if not clean:
            # what the session timeout would do, without waiting for it
            self.controller.fence(broker_id)
            self.controller_node.log_grew()
        await self.caught_up()

    async def start_broker(self, broker_id: int) -> None:
        """Restart a stopped broker on its port; it registers as a new incarnation with the
        epoch of its CleanShutdownFile as PreviousBrokerEpoch (-1 after an unclean stop)."""
        node = self.node(broker_id)
        if node.running:
            raise WrongState(f"broker {broker_id} is already running")
        previous = node.log_dirs.take_previous_epoch()
        node.reset_incarnation()
        await self._start_node(node, previous_epoch=previous)
        await self.caught_up()

    def flush(self, broker_id: int) -> None:
        """Flush every log of a broker: its records now survive an unclean shutdown."""
        self.node(broker_id).flush()

    @property
    def logs(self) -> dict[tuple[str, int], PartitionLog]:
        """Each partition's log on the running broker that leads it by the controller and by its
        own metadata (the log consumers read); a leader still replaying its election is absent."""
        out = {}
        for p in self.controller.state.partitions():
            key = (p.topic, p.partition_id)
            node = self.nodes.get(p.leader)
            if node is not None and node.running and node.replication.state(key) is not None:
                out[key] = node.replica_log(*key)
        return out

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

    async def _admin(self, api_key: int, api_version: int, body: Any) -> Any:
        """An admin request from the test API, through the first running broker."""
        running = [n for _, n in sorted(self.nodes.items()) if n.running]
        # a broker cut off from the controller would hold the request until the cut heals
        reachable = [n for n in running if not self.network.is_cut(n.node_id, CONTROLLER)]
        running = reachable or running
        if not running:
            raise ClusterError("no broker is running")
        return await running[0].forward(api_key, api_version, body)

    async def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a topic through the controller; ClusterError with its error otherwise."""
        response = await self._admin(
            ApiKey.CREATE_TOPICS,
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
            raise ClusterError(f"create_topic({name!r}): {message}", result["error_code"])

    def partition(self, topic: str, index: int) -> Any:
        """The controller's view of a partition."""
        return self.controller.partition(topic, index)

    def _high_watermark(self, topic: str, index: int) -> int | None:
        """The high watermark at a partition's leader (None when it is not running)."""
        try:
            leader = self.controller.partition(topic, index).leader
        except KeyError:
            return None
        node = self.nodes.get(leader)
        if node is None or not node.running:
            return None
        log = node.logs.get((topic, index))
        return log.high_watermark if log is not None else 0

    def _write_marker(self, topic: str, index: int, pid: int, epoch: int, commit: bool) -> None:
        leader = self.controller.partition(topic, index).leader
        node = self.nodes.get(leader)
        if node is None or not node.running:
            return  # an offline partition misses its marker, as with Kafka's unwritable markers
        node.replica(topic, index).append_marker(pid, epoch, commit)

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """True once `predicate()` holds (checked on every metadata change and every 10 ms)."""
        with trio.move_on_after(timeout):
            while not predicate():
                with trio.move_on_after(0.01):
                    await self._metadata_changed.wait()
            return True
        raise TimeoutError(f"condition still false after {timeout} s")

    # -- faults and metrics -----------------------------------------------------------------

    def _address_of(self, node_id: NodeId) -> str:
        if node_id == CONTROLLER:
            return self.controller_node.internal_address
        if isinstance(node_id, int):
            return self.node(node_id).internal_address
        raise UnknownResource(
            f"no node {node_id!r} (brokers are ints, the controller {CONTROLLER!r})"
        )

    def partition_network(self, *groups: NodeId | Iterable[NodeId]) -> CutInjection:
        """Cut the network until `heal` or the handle's `remove()`: `partition_network(a, b)`
        cuts the link between two nodes (broker ids or CONTROLLER) both ways;
        `partition_network([1], [2, CONTROLLER])` every link between nodes of different groups."""
        if len(groups) < 2:
            raise ValueError(f"a network partition needs two groups or more, got {len(groups)}")
        if len(groups) == 2 and all(isinstance(g, int | str) for g in groups):
            a, b = groups
            self._address_of(a), self._address_of(b)
            return self.faults.cut(a, b)
        lists = [[g] if isinstance(g, int | str) else list(g) for g in groups]
        for node in (n for group in lists for n in group):
            self._address_of(node)
        return self.faults.cut_groups(lists)

    def isolate(self, broker_id: NodeId) -> CutInjection:
        """Cut a node off from every other node; its clients still reach it."""
        self._address_of(broker_id)
        return self.faults.isolate(broker_id)

    def heal(self) -> None:
        """End every network cut and isolation."""
        self.faults.heal()

    async def faults_reached(self) -> None:
        """Every node applies the faults made and removed so far: at once in-process (process
        mode waits for its children)."""

    def inject_error(
        self,
        api_key: int,
        error_code: int,
        count: int = 1,
        broker: int | None = None,
        link: tuple[NodeId, NodeId] | None = None,
        partition: PartitionKey | None = None,
    ) -> ErrorInjection:
        """The next `count` requests of `api_key` (to `broker`, over `link`, or any) answer
        `error_code`; with `partition=(topic, index)` only that partition of them does."""
        return self.faults.inject_error(api_key, error_code, count, broker, link, partition)

    def add_latency(
        self,
        ms: float,
        broker: int | None = None,
        link: tuple[NodeId, NodeId] | None = None,
    ) -> LatencyInjection:
        """Set added latency: on a broker's responses, on a link (one way), or on every broker."""
        if ms < 0:
            raise ValueError(f"latency cannot be negative, got {ms} ms")
        if broker is not None and link is not None:
            raise ValueError("add_latency takes a broker or a link, not both")
        if link is not None:
            self._address_of(link[0]), self._address_of(link[1])
        elif broker is not None:
            self.node(broker)
        return self.faults.add_latency(ms / 1000, broker, link)

    def metrics(self) -> dict[str, Any]:
        """KIP-966's controller metrics and the high watermark of every partition."""
        return cluster_metrics(self)

    def describe(self) -> dict[str, Any]:
        """Every broker (id, host, port, state: running, stopped or fenced) and the controller."""
        return views.describe_cluster(self)

    def describe_partition(self, topic: str, index: int) -> dict[str, Any]:
        """A partition's leader (-1 without one), epoch, ISR, ELR, last known ELR and HWM."""
        return views.describe_partition(self, topic, index)

    @property
    def bootstrap_servers(self) -> str:
        """host:port of every broker, comma-separated."""
        return ",".join(n.address for _, n in sorted(self.nodes.items()))


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
