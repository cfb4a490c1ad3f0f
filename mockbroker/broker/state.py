"""One broker's runtime state: its partition logs, its metadata image, its wake-ups.

The broker's network node (`..broker_node.BrokerNode`) serves clients on top of this state; the
state knows the cluster only through its metadata image and the static configuration it was
built with.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

import trio

from kipwire.codec import ErrorCode

from .cleaner import LogCleaner
from .fetch_sessions import FetchSessions
from .log import LogError, PartitionLog
from .log_config import LogConfig
from .log_dirs import LogDirs
from .metadata_image import MetadataImage, PartitionInfo
from .partition import Partition
from .replication import Replication

if TYPE_CHECKING:
    from ..network import Network
    from .controller_channel import ControllerConnection


class BrokerState:
    """A broker: its own log per replica; leads some partitions, follows the others.

    `logs` and `log_dirs` are its disk: they outlive a stop and a restart (an unclean stop
    first loses what was not flushed). `config` is its static configuration (the cluster's
    settings it was started with), `network` the link layer it dials other nodes through, and
    `recovering_rejects_fetch` whether a KIP-704 leader refuses consumers while RECOVERING.
    """

    def __init__(
        self,
        node_id: int,
        config: Mapping[str, str],
        network: Network,
        *,
        recovering_rejects_fetch: bool = False,
    ) -> None:
        self.node_id = node_id
        self.config = config
        self.network = network
        self.recovering_rejects_fetch = recovering_rejects_fetch
        self.epoch = -1
        self.incarnation_id = uuid.uuid4()
        self.image = MetadataImage()
        self.running = False
        self.log = logging.getLogger(f"kipwire.mockbroker.broker.{node_id}")
        self._data_arrived = trio.Event()
        self._partition_waits: dict[tuple[str, int], trio.Event] = {}
        self._replayed = trio.Event()
        self.controller_connection: ControllerConnection | None = None
        self.cleaner = LogCleaner(self)
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self.log_dirs = LogDirs(config.get("log.dirs"), node_id)
        self.fetch_sessions = FetchSessions()
        self.replication = Replication(self)

    def reset_incarnation(self) -> None:
        """A restart: a new incarnation id, an empty metadata image, no leadership."""
        self.incarnation_id = uuid.uuid4()
        self.image = MetadataImage()
        self.fetch_sessions = FetchSessions()
        self.replication = Replication(self)

    def replica_log(self, topic: str, index: int) -> PartitionLog:
        """This broker's log of a partition (created empty on first use)."""
        log = self.logs.get((topic, index))
        if log is None:
            log = self.logs[topic, index] = self.new_log(topic, index)
        return log

    def new_log(self, topic: str, index: int) -> PartitionLog:
        """An empty log for a partition, with its topic's segment and retention settings (a
        storage back end gives the log its own segment factory here)."""
        return self.adopt_log(
            topic, index, PartitionLog(config=LogConfig.of_topic(self.image, topic))
        )

    def adopt_log(self, topic: str, index: int, log: PartitionLog) -> PartitionLog:
        """Join a log, new or loaded by a storage back end, to this broker: its name, the
        cleaner's clock, and the cleaner's watch once it has (or rolls) more than one segment."""
        key = (topic, index)
        log.name = f"{topic}-{index}"
        log.clock = self.cleaner.now_ms
        log.on_roll = functools.partial(self.cleaner.watch, key)
        if len(log.segments) > 1:
            self.cleaner.watch(key)
        return log

    def configs_changed(self) -> None:
        """A config changed: every log takes its topic's settings anew."""
        by_topic: dict[str, LogConfig] = {}
        for (topic, _), log in self.logs.items():
            config = by_topic.get(topic)
            if config is None:
                config = by_topic[topic] = LogConfig.of_topic(self.image, topic)
            log.config = config

    def flush(self) -> None:
        """Every log's records survive an unclean shutdown (cluster.flush)."""
        for log in self.logs.values():
            log.flush()

    def shut_down_cleanly(self) -> None:
        """Flush every log and write the CleanShutdownFile with this broker epoch (D.18)."""
        self.flush()
        self.log_dirs.write_clean_shutdown(self.epoch)

    def lose_unflushed(self) -> None:
        """An unclean shutdown: every record above a log's flushed offset is gone."""
        for log in self.logs.values():
            log.truncate_to(log.flushed_offset)

    def leads(self, topic: str, index: int) -> PartitionInfo:
        """The partition when this broker is its leader; raises LogError otherwise."""
        part = self.image.partition(topic, index)
        if part is None:
            raise LogError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} is unknown")
        if part.leader != self.node_id:
            raise LogError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {part.leader} leads")
        return part

    def partition_log(self, topic: str, index: int, leader_epoch: int = -1) -> PartitionLog:
        """The log of a partition this broker leads; LogError when it does not lead it."""
        part = self.leads(topic, index)
        if leader_epoch >= 0 and leader_epoch != part.leader_epoch:
            code = (
                ErrorCode.FENCED_LEADER_EPOCH
                if leader_epoch < part.leader_epoch
                else ErrorCode.UNKNOWN_LEADER_EPOCH
            )
            raise LogError(code, f"leader epoch {leader_epoch} is not {part.leader_epoch}")
        return self.replica_log(topic, index)

    def partition(self, topic: str, index: int, leader_epoch: int = -1) -> Partition:
        """A partition this broker leads; LogError (as `partition_log`) when it does not."""
        self.partition_log(topic, index, leader_epoch)
        return Partition(self, topic, index)

    def replica(self, topic: str, index: int) -> Partition:
        """A partition of this broker, leader or not."""
        return Partition(self, topic, index)

    def metadata_replayed(self) -> None:
        """New metadata records are in the image: wake fetches and anyone waiting on it."""
        self._replayed.set()
        self._replayed = trio.Event()
        delta = self.image.take_delta()
        if delta.configs:
            self.configs_changed()
        self.replication.metadata_changed(delta)
        self.data_arrived()
        waits, self._partition_waits = self._partition_waits, {}
        for waiting in waits.values():  # leadership may have moved under any of them
            waiting.set()

    async def wait_for_metadata(self, offset: int) -> None:
        """Return once the image has replayed the metadata log up to `offset`."""
        while self.image.offset < offset:
            await self._replayed.wait()

    def data_arrived(self, key: tuple[str, int] | None = None) -> None:
        """Wake every fetch waiting on this broker (records or marks moved); with `key`, also
        what waits on that one partition: its acks=all appends and the followers' sessions."""
        self._data_arrived.set()
        self._data_arrived = trio.Event()
        if key is not None:
            waiting = self._partition_waits.pop(key, None)
            if waiting is not None:
                waiting.set()
            self.fetch_sessions.changed(key)

    async def wait_for_data(self, key: tuple[str, int] | None = None) -> None:
        """Sleep until the next `data_arrived` (of `key`, or a metadata change, when given): a
        partition's waiters are not woken by every other partition's changes."""
        if key is None:
            await self._data_arrived.wait()
            return
        waiting = self._partition_waits.get(key)
        if waiting is None:
            waiting = self._partition_waits[key] = trio.Event()
        await waiting.wait()
