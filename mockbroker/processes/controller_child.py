"""The controller in a process of its own (process mode): `python -m
kipwire.mockbroker.processes.child HOST:PORT controller`.

The parent formats the cluster (its bootstrap records, or the metadata log of a data directory)
and hands the framed records over in `setup`; this process appends them, serves the controller's
listener with the same `ControllerNode` as in-process (its clock, session timeouts, the metadata
log's long poll), and sends every record it appends afterwards to the parent, whose copy of the
`Controller` replays them (what `cluster.controller` and `wait_until` read). The parent's calls:
`start`, the other nodes' `addresses`, the faults' mirror (`fault`, `unfault`, `heal`,
`applied`, as in a broker process), `fence` (an unclean stop, without the session timeout),
`metrics`, and `end_offset` (answered after every record sent before it, so the parent knows its
copy is complete).
"""

from __future__ import annotations

from typing import Any

import trio

from ..controller import Controller
from ..controller.metadata_files import MetadataLogFiles
from ..controller_node import ControllerNode
from ..limits import NodeLimits
from ..network import NodeId
from ..security.runtime import ClusterSecurity
from ..serve import Taps, open_listeners
from .channel import Channel
from .faults import MirrorFaults
from .links import process_network
from .taps import ForwardingTaps


class ReportingControllerNode(ControllerNode):
    """A `ControllerNode` that sends each record it appends to the parent's copy."""

    def __init__(self, channel: Channel, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._channel = channel
        self._sent = self.controller.end_offset

    def log_grew(self) -> None:
        """Wake the metadata fetches and send the new records to the parent."""
        super().log_grew()
        entries = self.controller.records_since(self._sent)
        if entries:
            self._sent = entries[-1].offset + 1
            self._channel.post("records", [entry.data for entry in entries])


class ChildController:
    """The controller of this process and what the parent may ask of it."""

    def __init__(self, channel: Channel, settings: dict[str, Any], nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.addresses: dict[NodeId, str] = dict(settings["addresses"])
        network = process_network(self._resolve)
        self.faults = MirrorFaults(network, channel.post)
        for fid, (method, args) in settings["faults"].items():
            self.faults.apply(fid, method, args)
        shared = settings["security"]
        security = ClusterSecurity.from_shared(shared) if shared is not None else None
        controller = Controller(
            **settings["controller"],
            **(security.controller_settings() if security is not None else {}),
        )
        controller.static_configs = settings["static_configs"]
        for data in settings["log"]:
            controller.append_bytes(data)
        config = settings["config"]
        recorder: Taps | None = ForwardingTaps(channel) if settings["record"] else None
        self.node = ReportingControllerNode(
            channel,
            controller,
            network,
            self.faults,
            recorder,
            int(config["socket.request.max.bytes"]),
            limits=NodeLimits.from_config(config),
        )
        self.listener_security = security.secure_controller(self.node) if security else None
        if settings["metadata_dir"] is not None:
            # log.dirs: the records the parent handed over are on disk already, or a new
            # directory gets the bootstrap records; every append reaches the files at once
            self.node.metadata_files = MetadataLogFiles(settings["metadata_dir"])
            self.node.metadata_files.load()
            self.node.metadata_files.sync(controller)

    def close(self) -> None:
        """The cluster ends: every record is on disk already (`log_grew` syncs)."""
        if self.node.metadata_files is not None:
            self.node.metadata_files.sync(self.node.controller)

    def ops(self) -> dict[str, Any]:
        """The calls and events the parent sends."""
        return {
            "start": self.start,
            "addresses": self.addresses.update,
            "fault": self.faults.apply,
            "unfault": self.faults.unapply,
            "heal": self.faults.heal,
            "applied": lambda: None,  # answered after every fault sent before it
            "closing": lambda: None,  # every append is on disk already
            "fence": self.fence,
            "metrics": self.node.controller.metrics,
            "end_offset": lambda: self.node.controller.end_offset,
        }

    def _resolve(self, node: NodeId) -> str:
        try:
            return self.addresses[node]
        except KeyError:
            raise OSError(f"node {node!r} has no address yet") from None

    async def start(self) -> dict[str, Any]:
        """Listen and run the controller's clock; its ports."""
        self.node.controller.tick(self.node.now_ms())
        await open_listeners(self.nursery, self.node, 0, self.listener_security)
        self.nursery.start_soon(self.node.run_clock)
        return {"port": self.node.port, "internal_address": self.node.internal_address}

    def fence(self, broker_id: int) -> int:
        """Fence a broker as its session timeout would; the log's end offset after it."""
        self.node.controller.fence(broker_id)
        self.node.log_grew()
        return self.node.controller.end_offset
