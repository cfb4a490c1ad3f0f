"""`ProcessCluster`: the mock cluster with each broker and the controller in an OS process of its
own.

The parent keeps `Cluster`'s public API, the faults' handles, the recorder's file and the test's
view of every node (`nodes.py`). It formats the cluster (the bootstrap records) into a copy of
the `Controller` and hands the framed records to the controller's process
(`controller_child.py`), which serves the controller as in-process and sends back every record
it appends, replayed into that copy: `cluster.controller`, `partition()`, `acls()` and
`wait_until` read the copy, and a call that changes metadata returns once the copy has what the
controller's process appended (`_controller_synced`) and every broker caught up. Each broker is a
child (`child.py`) running the same broker code as in-process. Every child is started as
`python -m kipwire.mockbroker.processes.child` and talks to the parent over a control channel
(`channel.py`). Inter-node connections go straight between processes, each node dialing from its
own loopback address (`links.py`); every process applies the parent's cuts and link latency to
the connections it dials (`faults.py`), so a cut between a broker and the controller acts in
both of their processes.

With `log.dirs`, the parent reads the last run's metadata log and the controller's process
writes it on; each broker process loads and writes its broker's directories. The parent keeps
every group's committed offsets (`offsets.py`: each broker process reports its changes before it
acknowledges them, and the parent passes them on to the other broker processes), so with
`log.dirs` it alone writes them, to `group-offsets.json` as in-process.

Not in process mode: `clock=` (MockClock cannot drive other processes; `MockCluster` refuses
it), and `logs` (the brokers' logs live in their
processes; `metrics()` and `describe_partition()` read high watermarks from them, and
`metrics()` the client telemetry each broker received).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import trio

from .. import views
from ..broker.controller_channel import ControllerConnection
from ..broker.log import PartitionLog
from ..cluster import BROKER_ONLY, Cluster
from ..controller import Controller, Semantics
from ..controller.broker_configs import cluster_config
from ..controller.features import fresh_features
from ..coordinators import offsets_file
from ..data_dir import OFFSETS_INTERVAL_S, DataDir
from ..errors import ClusterError, WrongState
from ..faults import CutInjection, ErrorInjection, LatencyInjection
from ..handlers.registry import listed
from ..metrics import cluster_metrics
from ..network import CONTROLLER, NodeId
from ..recorder import ConnectionTap, Recorder
from ..security.config import SecurityConfig
from ..security.runtime import ClusterSecurity
from .channel import Channel, ChannelClosed
from .faults import ParentFaults
from .links import process_network
from .nodes import BrokerProcess, ControllerProcess, NodeProcess, _Mark
from .offsets import OffsetsKeeper

#: How long a child may take to start and dial back.
START_TIMEOUT = 60.0
#: How long the children may take to exit once the parent hangs up.
STOP_TIMEOUT = 10.0
CHILD_MODULE = "kipwire.mockbroker.processes.child"


class ProcessCluster(Cluster):
    """A running cluster whose nodes are child processes; made by `open_process_cluster`."""

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
        # Cluster.__init__ builds in-process nodes; this keeps its methods and builds its own
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        self.config = cluster_config(config or {})
        #: log.dirs: the metadata log is read here and written by the controller's process;
        #: each broker process owns its brokers' directories
        self.data_dir = DataDir(self.config["log.dirs"]) if self.config.get("log.dirs") else None
        saved = self.data_dir.load_offsets() if self.data_dir is not None else None
        #: Every group's committed offsets, the copy each broker process starts from.
        self.offsets = OffsetsKeeper(offsets_file.groups_of(saved))
        settings = SecurityConfig.from_arguments(**security)
        # the CA lives here; each child serves the same certificate files (`SharedSecurity`)
        self.security = ClusterSecurity(settings, self.config) if settings.secured else None
        semantics = semantics or Semantics.KAFKA_4_4
        self.semantics = semantics
        served = [h.api_key for h in listed(semantics.release)]
        self.features = {**fresh_features(semantics.release, served), **(features or {})}
        self.cluster_id = cluster_id
        self._controller_settings = {
            "semantics": semantics,
            "cluster_id": cluster_id,
            "session_timeout_ms": int(self.config["broker.session.timeout.ms"]),
            "default_partitions": int(self.config["num.partitions"]),
            "default_replication_factor": int(self.config["default.replication.factor"]),
        }
        #: The controller's records replayed here as its process appends them: what
        #: `cluster.controller`, `partition()` and `wait_until` read (it never ticks or serves).
        self.controller = Controller(
            **self._controller_settings,
            **(self.security.controller_settings() if self.security else {}),
        )
        self.controller.static_configs = {
            name: value for name, value in self.config.items() if name not in BROKER_ONLY
        }
        self.network = process_network(self._address_of)
        self.faults = ParentFaults(self.network, self._broadcast)
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
        self.nodes = {  # type: ignore[assignment]
            i: BrokerProcess(i, port + i - 1 if port else 0) for i in range(1, brokers + 1)
        }
        self.controller_node = ControllerProcess()  # type: ignore[assignment]
        self._nursery: trio.Nursery | None = None
        self._metadata_changed = trio.Event()
        self._admin_connection: ControllerConnection | None = None

    # -- lifecycle --------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the controller's process, then a process per broker; serve until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                framed = self.data_dir.metadata.load() if self.data_dir is not None else []
                for data in framed:  # the last run's metadata log, handed on to the controller
                    self.controller.append_bytes(data)
                if not framed:
                    self._bootstrap()
                control = await nursery.start(
                    partial(trio.serve_tcp, self._serve_child, 0, host="127.0.0.1")
                )
                address = f"127.0.0.1:{control[0].socket.getsockname()[1]}"
                with trio.fail_after(START_TIMEOUT):
                    async with trio.open_nursery() as starting:
                        # every child imports kipwire at once; brokers register once the
                        # controller listens
                        starting.start_soon(self._spawn_controller, nursery, address)
                        for node in self.nodes.values():
                            starting.start_soon(self._spawn, nursery, node, address)
                await self._synced_and_caught_up()
                if self.data_dir is not None:
                    nursery.start_soon(self._save_offsets, self.data_dir)
                if self.recorder is not None:
                    nursery.start_soon(self.recorder.run)
                task_status.started()
        finally:
            if self._admin_connection is not None:
                with trio.CancelScope(shield=True):
                    await self._admin_connection.aclose()
            if self.recorder is not None:
                self.recorder.close()
            if self.security is not None:
                self.security.close()

    async def _launch(
        self, nursery: trio.Nursery, node: NodeProcess, address: str, settings: dict[str, Any]
    ) -> None:
        """Start a child and set it up; broadcasts reach it from then on (an event sent before
        its setup had run would find no handler there)."""
        command = [sys.executable, "-m", CHILD_MODULE, address, str(node.node_id)]
        node.process = await nursery.start(partial(trio.run_process, command, check=False))
        await node.hello.wait()
        assert node.dialed is not None
        await node.dialed.call("setup", settings)
        node.channel = node.dialed
        node.channel.post("addresses", self._addresses())
        if isinstance(node, BrokerProcess):
            # before its start call: a new coordinator has the offsets before it serves
            node.channel.post("replica_offsets", dict(self.offsets.groups))

    async def _spawn_controller(self, nursery: trio.Nursery, address: str) -> None:
        node = self.controller_node
        await self._launch(nursery, node, address, self._controller_setup())
        started = await node.call("start")
        node.port = started["port"]
        node._internal_address = started["internal_address"]
        self._broadcast("addresses", self._addresses())
        node.started.set()

    def _controller_setup(self) -> dict[str, Any]:
        return {
            "controller": self._controller_settings,
            "static_configs": self.controller.static_configs,
            "log": [entry.data for entry in self.controller.records_since(0)],
            "config": dict(self.config),
            "record": self.recorder is not None,
            "addresses": self._addresses(),
            "faults": dict(self.faults.calls),
            "security": self.security.shared() if self.security is not None else None,
            "metadata_dir": str(self.data_dir.path) if self.data_dir is not None else None,
        }

    async def _spawn(self, nursery: trio.Nursery, node: BrokerProcess, address: str) -> None:
        await self._launch(nursery, node, address, self._settings(node))
        await self.controller_node.started.wait()
        await self._start(node, first=True)

    def _settings(self, node: BrokerProcess) -> dict[str, Any]:
        return {
            "node_id": node.node_id,
            "port": node.port,
            "cluster_id": self.cluster_id,
            "config": dict(self.config),
            "release": self.semantics.release,
            "recovering_rejects_fetch": self.semantics.recovering_rejects_fetch,
            "record": self.recorder is not None,
            "addresses": self._addresses(),
            "faults": dict(self.faults.calls),
            "security": self.security.shared() if self.security is not None else None,
        }

    def _children(self) -> list[NodeProcess]:
        return [*self.nodes.values(), self.controller_node]

    def _addresses(self) -> dict[NodeId, str]:
        return {
            n.node_id: n._internal_address
            for n in self._children()
            if n._internal_address is not None
        }

    async def _serve_child(self, stream: trio.SocketStream) -> None:
        """One child's control channel, from its hello until it hangs up."""
        channel = Channel(stream)
        taps: dict[int, ConnectionTap] = {}

        def hello(node_id: NodeId) -> None:
            node = self.controller_node if node_id == CONTROLLER else self.nodes[node_id]
            node.dialed = channel
            node.hello.set()

        def offset(node_id: int, value: int) -> None:
            self.nodes[node_id].image.offset = value
            self.metadata_changed()

        def records(framed: list[bytes]) -> None:
            for data in framed:
                self.controller.append_bytes(data)
            self.metadata_changed()

        def tap(tap_id: int, what: str, *args: Any) -> None:
            if self.recorder is None:
                return
            if what == "open":
                taps[tap_id] = ConnectionTap(self.recorder, *args)
            elif what == "close":
                taps.pop(tap_id).close(by_client=args[0])
            else:
                getattr(taps[tap_id], what)(*args)

        def offsets(changes: dict[str, Any]) -> None:
            others = [
                n.channel
                for n in self.nodes.values()
                if n.channel is not None and n.channel is not channel
            ]
            self.offsets.take(changes, others)

        channel.ops.update(
            hello=hello,
            offsets=offsets,
            offset=offset,
            records=records,
            tap=tap,
            caught_up=self._synced_and_caught_up,
            fired=self.faults.fired,
            observed=self.faults.observed,
        )
        await channel.run()

    async def stop_children(self) -> None:
        """Hang up on every broker and wait for it to exit, then on the controller (so no
        broker sees its controller vanish first and reports it as a failure)."""
        with trio.move_on_after(STOP_TIMEOUT):
            for group in (list(self.nodes.values()), [self.controller_node]):
                for node in group:
                    if isinstance(node, BrokerProcess):
                        node.running = False
                    if node.channel is not None:
                        with contextlib.suppress(ChannelClosed):  # a child already gone
                            await node.channel.call("closing")  # an orderly end: not a crash
                        await node.channel.stream.aclose()
                for node in group:
                    if node.process is not None:
                        await node.process.wait()
        if self.data_dir is not None:
            self.data_dir.save_offsets_document(self.offsets.document())

    async def _save_offsets(self, data_dir: DataDir) -> None:
        while True:
            await trio.sleep(OFFSETS_INTERVAL_S)
            data_dir.save_offsets_document(self.offsets.document())

    def _broadcast(self, op: str, *args: Any) -> None:
        for node in self._children():
            if node.channel is not None:
                node.channel.post(op, *args)

    async def _start(self, node: BrokerProcess, first: bool) -> None:
        started = await node.call("start", first)
        node.port = started["port"]
        node._internal_address = started["internal_address"]
        node.image.offset = max(node.image.offset, started["offset"])
        node.running = True
        self._broadcast("addresses", self._addresses())

    async def _controller_synced(self) -> None:
        """Wait until this copy of the controller has every record its process appended so far
        (the channel keeps order: each record was sent before the answer)."""
        end = await self.controller_node.call("end_offset")
        if self.controller.end_offset < end:
            raise ClusterError(f"the controller's copy is at {self.controller.end_offset} of {end}")

    async def _synced_and_caught_up(self) -> None:
        """What a broker waits for after forwarding a request to the controller: this copy has
        what the controller appended for it, and every running broker has replayed that."""
        await self._controller_synced()
        await self.caught_up()

    # -- faults: each returns once every process has it ---------------------------------------

    async def faults_reached(self) -> None:
        """Wait until every child has applied the faults made and removed so far (its channel
        keeps order: a fault's event is handled before this call is answered)."""
        for node in self._children():
            if node.channel is not None:
                await node.channel.call("applied")

    async def inject_error(self, *args: Any, **kwargs: Any) -> ErrorInjection:  # type: ignore[override]
        """`Cluster.inject_error`; the next request to any process meets it."""
        handle = super().inject_error(*args, **kwargs)
        await self.faults_reached()
        return handle

    async def add_latency(self, *args: Any, **kwargs: Any) -> LatencyInjection:  # type: ignore[override]
        """`Cluster.add_latency`, in every process when this returns."""
        handle = super().add_latency(*args, **kwargs)
        await self.faults_reached()
        return handle

    async def partition_network(self, *groups: Any) -> CutInjection:  # type: ignore[override]
        """`Cluster.partition_network`, in every process when this returns."""
        handle = super().partition_network(*groups)
        await self.faults_reached()
        return handle

    async def isolate(self, broker_id: NodeId) -> CutInjection:  # type: ignore[override]
        """`Cluster.isolate`, in every process when this returns."""
        handle = super().isolate(broker_id)
        await self.faults_reached()
        return handle

    async def heal(self) -> None:  # type: ignore[override]
        """`Cluster.heal`, in every process when this returns."""
        super().heal()
        await self.faults_reached()

    # -- brokers ----------------------------------------------------------------------------

    async def stop_broker(self, broker_id: int, clean: bool = True) -> None:
        """`Cluster.stop_broker`, in the broker's process."""
        node = self.node(broker_id)
        if not node.running:
            raise WrongState(f"broker {broker_id} is not running")
        reachable = not self.network.is_cut(broker_id, CONTROLLER)
        await node.call("stop", clean, reachable)
        node.running = False
        if not clean:
            # what the session timeout would do, without waiting for it
            await self.controller_node.call("fence", broker_id)
        await self._synced_and_caught_up()

    async def start_broker(self, broker_id: int) -> None:
        """`Cluster.start_broker`, in the broker's process."""
        node = self.node(broker_id)
        if node.running:
            raise WrongState(f"broker {broker_id} is already running")
        await self._start(node, first=False)
        await self._synced_and_caught_up()

    async def flush(self, broker_id: int) -> None:  # type: ignore[override]
        """Flush every log of a broker: its records now survive an unclean shutdown."""
        await self.node(broker_id).call("flush")

    @property
    def logs(self) -> dict[tuple[str, int], PartitionLog]:
        """Not in process mode: each broker's logs live in its own process."""
        raise ClusterError("the brokers' logs live in their processes (processes=True)")

    # -- topics, metrics --------------------------------------------------------------------

    async def _admin(self, api_key: int, api_version: int, body: Any) -> Any:
        """An admin request from the test API, sent to the controller as a broker forwards it."""
        if self._admin_connection is None:
            host, port = self.controller_node.internal_address.rsplit(":", 1)
            stream = await trio.open_tcp_stream(host, int(port))
            self._admin_connection = ControllerConnection(stream, "kipwire-test-api")
        response = await self._admin_connection.call(api_key, api_version, body)
        await self._synced_and_caught_up()
        return response

    async def _read_marks(self) -> None:
        for node in self.nodes.values():
            if node.running:
                marks = await node.call("high_watermarks")
                node.logs = {key: _Mark(*value) for key, value in marks.items()}

    async def metrics(self) -> dict[str, Any]:  # type: ignore[override]
        """KIP-966's controller metrics (from its process), the high watermark of every
        partition and what clients pushed (KIP-714), read from the brokers' processes."""
        await self._read_marks()
        for node in self.nodes.values():
            if node.running:
                node.client_metrics.last = await node.call("telemetry")
        metrics = cluster_metrics(self)  # type: ignore[arg-type]
        metrics.update(await self.controller_node.call("metrics"))
        return metrics

    async def describe_partition(self, topic: str, index: int) -> dict[str, Any]:  # type: ignore[override]
        """A partition's leader (-1 without one), epoch, ISR, ELR, last known ELR and HWM."""
        await self._read_marks()
        return views.describe_partition(self, topic, index)


@asynccontextmanager
async def open_process_cluster(**kwargs: Any) -> AsyncIterator[ProcessCluster]:
    """A running cluster whose nodes are processes: `async with open_process_cluster(...)`."""
    cluster = ProcessCluster(**kwargs)
    async with trio.open_nursery() as nursery:
        await nursery.start(cluster.run)
        try:
            yield cluster
        finally:
            with trio.CancelScope(shield=True):
                await cluster.stop_children()
            nursery.cancel_scope.cancel()
