"""A broker's incarnations on the network: listen, register, fetch metadata, unfence, heartbeat,
and stop (a controlled shutdown first when clean).

The in-process cluster (`cluster.py`) keeps one `BrokerRunner` per broker in its own nursery; in
process mode (`processes/`) each child process keeps one for its broker. Neither the runner nor
the node holds the controller: everything goes over the broker's controller connections.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import trio

from kipwire.codec import ApiKey, ErrorCode

from .broker.controller_channel import ControllerConnection, fetch_metadata
from .broker_node import BrokerNode
from .controller.features import CONTROLLER_FEATURES, METADATA_VERSION
from .errors import ClusterError
from .network import Network
from .serve import open_listeners

BROKER_REGISTRATION_VERSION, BROKER_HEARTBEAT_VERSION = 4, 1
#: SecurityProtocol.PLAINTEXT's id in a registration's listeners.
PLAINTEXT = 0
#: A controlled shutdown takes a few heartbeats at most.
SHUTDOWN_HEARTBEATS = 100
#: The longest pause between two of those heartbeats, waiting for new metadata.
SHUTDOWN_WAIT = 0.05
#: The pause before a refused registration is tried again.
REGISTRATION_BACKOFF = 0.1


class BrokerRunner:
    """Starts and stops the incarnations of one broker in a nursery it is given."""

    def __init__(self, node: BrokerNode, network: Network) -> None:
        self.node = node
        self.network = network
        self._scope: trio.CancelScope | None = None
        self._ended: trio.Event | None = None

    @property
    def started(self) -> bool:
        """Whether an incarnation is running (started and not yet stopped)."""
        return self._scope is not None

    @property
    def heartbeat_interval(self) -> float:
        """broker.heartbeat.interval.ms, in seconds."""
        return int(self.node.config["broker.heartbeat.interval.ms"]) / 1000

    async def start(self, nursery: trio.Nursery, previous_epoch: int) -> None:
        """Start an incarnation; returns once the broker is registered and unfenced."""
        scope = self._scope = trio.CancelScope()
        ended = self._ended = trio.Event()
        await nursery.start(self._run, scope, previous_epoch, ended)

    async def stop(self, clean: bool, reachable: bool) -> None:
        """End the running incarnation. clean: a controlled shutdown first (it leaves every ISR
        and leadership), then the logs flushed and the CleanShutdownFile written; unclean: every
        record above each log's flushed offset is lost. `reachable`: the controller can hear it."""
        node = self.node
        if clean:
            for _ in range(SHUTDOWN_HEARTBEATS):
                if (await self.heartbeat(want_shut_down=True))["should_shut_down"]:
                    break
                # the controller lets it go once its metadata has the leadership moves: with
                # the broker in another process they may still be on their way
                with trio.move_on_after(SHUTDOWN_WAIT):
                    await node.wait_for_metadata(node.image.offset + 1)
        # Kafka fences a lost broker a session timeout after its last heartbeat, so whatever it
        # had sent is answered first; the cluster fences at once, so the request on the wire is
        # answered first (one answered after the fence would unfence a dead broker). Across a
        # cut the answer cannot come, and nothing sent since the cut reaches the controller.
        connection = node.controller_connection
        assert self._scope is not None and self._ended is not None
        async with connection.idle() if reachable and connection else nullcontext():
            self._scope.cancel()
            # A task of this incarnation may already hold a response (a metadata batch, replica
            # records): it must end before the disk changes or a new incarnation resets the
            # image, or it replays into the next incarnation's image from its own offset.
            await self._ended.wait()
        self._scope = self._ended = None
        node.running = False
        if clean:
            node.shut_down_cleanly()
        else:
            node.lose_unflushed()

    async def _run(
        self,
        scope: trio.CancelScope,
        previous_epoch: int,
        ended: trio.Event,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        node = self.node
        connections: list[ControllerConnection] = []
        with _setting_on_exit(ended), scope:
            try:
                async with trio.open_nursery() as nursery:
                    await open_listeners(nursery, node, node.port, node.listener_security)
                    requests = await ControllerConnection.open(self.network, node.node_id)
                    connections.append(requests)
                    fetches = await ControllerConnection.open(self.network, node.node_id)
                    connections.append(fetches)
                    try:
                        node.controller_connection = requests
                        await self._register(previous_epoch)
                        nursery.start_soon(fetch_metadata, node, fetches)
                        # unfenced once its metadata has caught up with its own registration
                        await node.wait_for_metadata(node.epoch)
                        for topic, index in node.drop_stray_logs():
                            node.log.info("dropped stray log %s-%d", topic, index)
                        await self.heartbeat()
                        node.running = True
                        nursery.start_soon(self._heartbeats)
                        nursery.start_soon(node.replication.run)
                        nursery.start_soon(node.cleaner.run)
                        task_status.started()
                        await trio.sleep_forever()
                    finally:
                        node.running = False
            finally:
                # Closed only once every task of this incarnation has ended: a task still
                # waiting for the connection (a forwarded request, a heartbeat) would otherwise
                # meet a closed connection instead of its own cancellation.
                with trio.CancelScope(shield=True):
                    for connection in connections:
                        await connection.aclose()

    async def _register(self, previous_epoch: int) -> None:
        # Kafka's broker retries a refused registration: a previous incarnation that could not
        # finish its controlled shutdown keeps its session until the session timeout
        session_timeout = int(self.node.config["broker.session.timeout.ms"]) / 1000
        deadline = trio.current_time() + session_timeout + REGISTRATION_BACKOFF
        while True:
            code = await self._register_once(previous_epoch)
            if code != ErrorCode.DUPLICATE_BROKER_REGISTRATION or trio.current_time() > deadline:
                break
            await trio.sleep(REGISTRATION_BACKOFF)
        if code:
            raise ClusterError(
                f"broker {self.node.node_id} registration failed: {ErrorCode(code).name}"
            )

    async def _register_once(self, previous_epoch: int) -> int:
        node = self.node
        low, high = CONTROLLER_FEATURES[node.release][METADATA_VERSION]
        response = await node.controller_connection.call(
            ApiKey.BROKER_REGISTRATION,
            BROKER_REGISTRATION_VERSION,
            {
                "broker_id": node.node_id,
                "cluster_id": node.cluster_id,
                "incarnation_id": node.incarnation_id,
                "listeners": [
                    {
                        "name": "PLAINTEXT",
                        "host": node.host,
                        "port": node.port,
                        "security_protocol": PLAINTEXT,
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
                "log_dirs": node.replica_dirs.ids(),
                "previous_broker_epoch": previous_epoch,
            },
        )
        if response["error_code"] == ErrorCode.NONE:
            node.epoch = response["broker_epoch"]
        return response["error_code"]

    async def heartbeat(self, want_shut_down: bool = False) -> Any:
        """One BrokerHeartbeat; the controller's answer."""
        node = self.node
        return await node.controller_connection.call(
            ApiKey.BROKER_HEARTBEAT,
            BROKER_HEARTBEAT_VERSION,
            {
                "broker_id": node.node_id,
                "broker_epoch": node.epoch,
                "current_metadata_offset": node.image.offset,
                "want_fence": False,
                "want_shut_down": want_shut_down,
            },
        )

    async def _heartbeats(self) -> None:
        interval = self.heartbeat_interval
        while True:
            await trio.sleep(interval)
            await self.heartbeat()


@contextmanager
def _setting_on_exit(event: trio.Event) -> Iterator[None]:
    try:
        yield
    finally:
        event.set()
