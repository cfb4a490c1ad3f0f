"""The parent's view of its child processes (process mode): `BrokerProcess` stands where an
in-process cluster has a `BrokerNode`, `ControllerProcess` where it has the `ControllerNode`;
what the cluster reads of them the children report or are asked for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import trio

from ..errors import ClusterError
from ..network import CONTROLLER, NodeId
from .channel import Channel


@dataclass
class _Image:
    """What the parent knows of a child's metadata image: how far it has replayed."""

    offset: int = -1


@dataclass
class _Mark:
    """A log's marks as its broker last reported them (what the metrics read of a log)."""

    high_watermark: int
    log_start_offset: int
    size: int
    segment_count: int

    @property
    def segments(self) -> range:
        """Stands for the log's segments: only their number is read."""
        return range(self.segment_count)


@dataclass
class _Telemetry:
    """What clients pushed to a broker (KIP-714), as it last reported it."""

    last: dict[str, dict[str, Any]] = field(default_factory=dict)

    def pushed(self) -> dict[str, dict[str, Any]]:
        """By client instance id: client id, software name and metrics (`ClientMetrics`)."""
        return self.last


class NodeProcess:
    """The parent's view of one child process: its control channel and its addresses."""

    def __init__(self, node_id: NodeId, port: int) -> None:
        self.node_id = node_id
        self.host = "127.0.0.1"
        self.port = port
        #: The control channel, once the child is set up (what broadcasts reach).
        self.channel: Channel | None = None
        #: The channel the child dialed, from its hello on.
        self.dialed: Channel | None = None
        self.process: trio.Process | None = None
        self.hello = trio.Event()
        self._internal_address: str | None = None

    @property
    def address(self) -> str:
        """host:port of the client listener."""
        return f"{self.host}:{self.port}"

    @property
    def internal_address(self) -> str:
        """host:port other nodes dial."""
        if self._internal_address is None:
            raise OSError(f"node {self.node_id} has not started")
        return self._internal_address

    def call(self, op: str, *args: Any) -> Any:
        """Call `op` in the child (awaitable)."""
        if self.channel is None:
            raise ClusterError(f"node {self.node_id}'s process is not connected")
        return self.channel.call(op, *args)


class BrokerProcess(NodeProcess):
    """A broker process, as `Cluster`'s methods read a node: running, its metadata offset, its
    logs' marks and its clients' telemetry (the last two as last read from it)."""

    def __init__(self, node_id: int, port: int) -> None:
        super().__init__(node_id, port)
        self.running = False
        self.image = _Image()
        self.logs: dict[tuple[str, int], _Mark] = {}
        self.client_metrics = _Telemetry()


class ControllerProcess(NodeProcess):
    """The controller's process (`controller_child.py`), as `cluster.controller_node`."""

    def __init__(self) -> None:
        super().__init__(CONTROLLER, 0)
        #: Set once it listens: brokers start registering then.
        self.started = trio.Event()
