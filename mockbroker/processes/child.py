"""One node in a process of its own: `python -m kipwire.mockbroker.processes.child HOST:PORT ID`,
ID a broker id (this module) or `controller` (`controller_child.py`).

The child dials the parent's control listener at HOST:PORT, says which broker it is, and is told
its settings (`setup`); then the parent starts and stops the broker's incarnations
(`broker_runner.BrokerRunner`, the same code as in-process), mirrors the faults into it, tells it
where the other nodes are, and reads its high watermarks. The child tells the parent whenever its
metadata image moves (so `caught_up` works in the parent), what its faults fired, and, with a
recorder, every frame its connections carry. It exits when the control channel closes.

What a broker needs of the rest of the cluster it finds here: the group and transaction
coordinators are its own (a client reaches a group's coordinator through FindCoordinator, which
picks by the same hash over the live brokers of its metadata image), and their committed offsets
are replicated through the parent (`offsets.py`); transaction markers for
partitions led elsewhere go to their leader as WriteTxnMarkers; a share group's lag reads only
the high watermarks of partitions this broker leads.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import zlib
from types import MappingProxyType
from typing import Any

import trio

from kipwire.codec import ApiKey

from ..broker.controller_channel import ControllerConnection
from ..broker_node import BrokerNode, ClusterServices
from ..broker_runner import BrokerRunner
from ..coordinators.consumer_groups import ConsumerGroupCoordinator
from ..coordinators.group_offsets import GroupOffsets
from ..coordinators.groups import GroupCoordinator
from ..coordinators.share_groups import ShareCoordinator
from ..coordinators.streams_groups import StreamsCoordinator
from ..coordinators.transactions import TransactionCoordinator
from ..data_dir import DataDir
from ..errors import ClusterError
from ..network import CONTROLLER, NodeId
from ..security.runtime import ClusterSecurity
from .channel import Channel
from .controller_child import ChildController
from .faults import MirrorFaults
from .links import process_network
from .offsets import ReplicatedOffsets
from .taps import ForwardingTaps

WRITE_TXN_MARKERS_VERSION = 1
#: The producer ids a broker process hands out start at its id times this.
PRODUCER_ID_BLOCK = 1 << 40
#: With log.dirs, each run of a broker process takes the next this many ids of its block.
PRODUCER_IDS_PER_RUN = 1 << 24
log = logging.getLogger("kipwire.mockbroker.processes")


class ChildBroker:
    """The broker of this process and what the parent may ask of it."""

    def __init__(self, channel: Channel, settings: dict[str, Any], nursery: trio.Nursery) -> None:
        self.channel = channel
        self.nursery = nursery
        self.addresses: dict[NodeId, str] = dict(settings["addresses"])
        self.network = process_network(self._resolve)
        self.faults = MirrorFaults(self.network, channel.post)
        for fid, (method, args) in settings["faults"].items():
            self.faults.apply(fid, method, args)
        config = settings["config"]
        shared = settings["security"]
        #: The cluster's TLS files, SASL users and token key, as the parent's brokers would have
        self.security = ClusterSecurity.from_shared(shared) if shared is not None else None
        groups = GroupCoordinator(int(config["group.initial.rebalance.delay.ms"]))
        consumer_groups = ConsumerGroupCoordinator(groups)
        share_groups = ShareCoordinator()
        streams_groups = StreamsCoordinator()
        transactions = TransactionCoordinator(
            GroupOffsets(consumer_groups, streams_groups), self._write_marker
        )
        self.coordinators = (groups, consumer_groups, share_groups, streams_groups, transactions)
        services = ClusterServices(
            cluster_id=settings["cluster_id"],
            config=config,
            network=self.network,
            faults=self.faults,
            recorder=ForwardingTaps(channel) if settings["record"] else None,
            groups=groups,
            consumer_groups=consumer_groups,
            share_groups=share_groups,
            streams_groups=streams_groups,
            transactions=transactions,
            coordinator_for=self._coordinator_for,
            high_watermark=self._high_watermark,
            caught_up=self._caught_up,
            metadata_changed=self._metadata_changed,
            recovering_rejects_fetch=settings["recovering_rejects_fetch"],
            release=settings["release"],
            security=self.security,
        )
        self.node = BrokerNode(settings["node_id"], settings["port"], services)
        self.runner = BrokerRunner(self.node, self.network)
        #: Every group's committed offsets, as the parent keeps them.
        self.offsets = ReplicatedOffsets(channel, consumer_groups, streams_groups)
        self.node.handlers = MappingProxyType(self.offsets.wrap(self.node.handlers))
        #: log.dirs: the node loaded its own logs (the parent writes the committed offsets).
        self.data_dir = DataDir(config["log.dirs"]) if config.get("log.dirs") else None
        #: Set when the parent ends the cluster in order (a parent that dies sends nothing).
        self.ending_cleanly = False
        # each process hands out producer ids from a block of its own (Kafka's brokers take
        # blocks from the controller): two producers never share an id across brokers, nor
        # with a producer of an earlier run on the same directory
        transactions.skip_producer_ids_below(self._first_producer_id())

    def _first_producer_id(self) -> int:
        """The start of this process's producer ids: a block per broker and, with log.dirs, a
        part of it per run (the run's number is on disk before any id is handed out)."""
        block = self.node.node_id * PRODUCER_ID_BLOCK
        if self.data_dir is None:
            return block
        runs = self.data_dir.path / f"producer-id-runs-broker-{self.node.node_id}"
        run = int(runs.read_text()) + 1 if runs.is_file() else 0
        if run >= PRODUCER_ID_BLOCK // PRODUCER_IDS_PER_RUN:
            raise ClusterError(f"broker {self.node.node_id} has used every producer id block")
        self.data_dir.path.mkdir(parents=True, exist_ok=True)
        with open(runs.with_suffix(".tmp"), "w") as out:
            out.write(str(run))
            out.flush()
            os.fsync(out.fileno())
        os.replace(runs.with_suffix(".tmp"), runs)
        return block + run * PRODUCER_IDS_PER_RUN

    def ops(self) -> dict[str, Any]:
        """The calls and events the parent sends."""
        return {
            "start": self.start,
            "stop": self.stop,
            "flush": self.node.flush,
            "addresses": self.addresses.update,
            "fault": self.faults.apply,
            "unfault": self.faults.unapply,
            "heal": self.faults.heal,
            "applied": lambda: None,  # answered after every fault sent before it
            "closing": self._closing,
            "high_watermarks": self.high_watermarks,
            "telemetry": self.node.client_metrics.pushed,
            "replica_offsets": self.offsets.apply,
        }

    def _resolve(self, node: NodeId) -> str:
        try:
            return self.addresses[node]
        except KeyError:
            # not started yet: the dialer backs off and tries again, as for a refused connection
            raise OSError(f"node {node!r} has no address yet") from None

    async def start(self, first: bool) -> dict[str, Any]:
        """Start an incarnation (a restart registers with its CleanShutdownFile's epoch)."""
        previous = self.node.log_dirs.take_previous_epoch()  # -1 in memory
        if not first:
            self.node.reset_incarnation()
        await self.runner.start(self.nursery, previous)
        return {
            "port": self.node.port,
            "internal_address": self.node.internal_address,
            "epoch": self.node.epoch,
            "offset": self.node.image.offset,
        }

    async def stop(self, clean: bool, reachable: bool) -> None:
        """Stop the running incarnation (see `BrokerRunner.stop`)."""
        await self.runner.stop(clean, reachable)

    def high_watermarks(self) -> dict[tuple[str, int], tuple[int, int, int, int]]:
        """Every log this broker holds: high watermark, log start, size in bytes, segments."""
        return {
            key: (log.high_watermark, log.log_start_offset, log.size, len(log.segments))
            for key, log in self.node.logs.items()
        }

    def _metadata_changed(self) -> None:
        self.channel.post("offset", self.node.node_id, self.node.image.offset)

    async def _caught_up(self) -> None:
        await self.channel.call("caught_up")

    def _coordinator_for(self, key: str) -> Any:
        live = self.node.image.live_brokers()
        return live[zlib.crc32(key.encode()) % len(live)] if live else None

    def _high_watermark(self, topic: str, index: int) -> int | None:
        part = self.node.image.partition(topic, index)
        if part is None or part.leader != self.node.node_id or not self.node.running:
            return None
        log = self.node.logs.get((topic, index))
        return log.high_watermark if log is not None else 0

    def _write_marker(self, topic: str, index: int, pid: int, epoch: int, commit: bool) -> None:
        part = self.node.image.partition(topic, index)
        if part is None or part.leader < 0:
            return  # an offline partition misses its marker, as with Kafka's unwritable markers
        if part.leader == self.node.node_id:
            self.node.replica(topic, index).append_marker(pid, epoch, commit)
            return
        body = {
            "markers": [
                {
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "transaction_result": commit,
                    "topics": [{"name": topic, "partition_indexes": [index]}],
                    "coordinator_epoch": 0,
                }
            ]
        }
        self.nursery.start_soon(self._send_marker, part.leader, body)

    async def _send_marker(self, leader: int, body: dict) -> None:
        try:
            stream = await self.network.connect(self.node.node_id, leader)
        except OSError as exc:
            log.info("transaction marker for broker %d not sent: %s", leader, exc)
            return
        connection = ControllerConnection(stream, f"txn-markers-{self.node.node_id}")
        try:
            await connection.call(ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body)
        finally:
            await connection.aclose()

    async def run_timers(self) -> None:
        """The coordinators' timers, until cancelled."""
        async with trio.open_nursery() as nursery:
            for coordinator in self.coordinators:
                nursery.start_soon(coordinator.run_timers)

    def _closing(self) -> None:
        self.ending_cleanly = True

    def close(self) -> None:
        """The cluster ended: in order, with log.dirs, a running broker flushes and writes its
        checkpoints and CleanShutdownFile (as in-process); after its parent died, the disk
        keeps only what was flushed, as for a killed process."""
        if self.data_dir is None or not self.ending_cleanly:
            return
        if self.runner.started:
            self.node.shut_down_cleanly()


async def serve(address: str, node_id: NodeId) -> None:
    """Dial the parent, say hello, take the settings, then serve the parent until it hangs up."""
    host, port = address.rsplit(":", 1)
    channel = Channel(await trio.open_tcp_stream(host, int(port)))
    made: list[ChildBroker | ChildController] = []
    async with trio.open_nursery() as nursery:

        async def setup(settings: dict[str, Any]) -> None:
            if node_id == CONTROLLER:
                controller = ChildController(channel, settings, nursery)
                channel.ops.update(controller.ops())
                made.append(controller)
                return
            child = ChildBroker(channel, settings, nursery)
            channel.ops.update(child.ops())
            made.append(child)
            nursery.start_soon(child.run_timers)

        channel.ops["setup"] = setup
        channel.post("hello", node_id)
        await channel.run()
        nursery.cancel_scope.cancel()
    # every task has ended: what reaches the disk now is the node's last state
    for node in made:
        node.close()


def main(argv: list[str] | None = None) -> None:
    """The child's entry point."""
    address, node = (argv if argv is not None else sys.argv[1:])[:2]
    # Ctrl-C reaches the whole process group: the parent decides when its nodes stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    trio.run(serve, address, CONTROLLER if node == CONTROLLER else int(node))


if __name__ == "__main__":
    main()
