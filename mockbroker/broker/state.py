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
from .replica_dirs import LogDir, ReplicaDirs
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
        cluster_id: str = "kipwire-mock",
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
        self.log_dirs = LogDirs(config.get("log.dirs") or None, node_id, cluster_id)
        if self.log_dirs.on_disk:
            self.log_dirs.format()  # before ReplicaDirs reads each directory.id
        #: Which log directory holds each replica (AlterReplicaLogDirs, DescribeLogDirs).
        self.replica_dirs = ReplicaDirs(config.get("log.dirs"), node_id)
        self.logs: dict[tuple[str, int], PartitionLog] = self.load_logs()
        self.fetch_sessions = FetchSessions()
        self.replication = Replication(self)

    def reset_incarnation(self) -> None:
        """A restart: a new incarnation id, an empty metadata image, no leadership; logs on
        disk are loaded again from their files, as a restarted process finds them."""
        self.incarnation_id = uuid.uuid4()
        self.image = MetadataImage()
        if self.log_dirs.on_disk:
            self.logs = self.load_logs()
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
        topic_info = self.image.topics.get(topic)
        topic_id = topic_info.topic_id if topic_info is not None else None
        config = LogConfig.of_topic(self.image, topic)
        where = self.replica_dirs.place(topic, index).path
        log = self.log_dirs.new_log(topic, index, topic_id, config, where)
        return self.adopt_log(topic, index, log)

    def load_logs(self) -> dict[tuple[str, int], PartitionLog]:
        """The logs in the log directories' files (none in memory), joined to this broker,
        each replica placed in the directory it was found in."""
        loaded = self.log_dirs.load_logs(lambda topic: LogConfig.of_topic(self.image, topic))
        for key, path in self.log_dirs.loaded_from.items():
            log_dir = self.replica_dirs.by_path(str(path))
            if log_dir is not None:
                self.replica_dirs.adopt(*key, log_dir)
        return {key: self.adopt_log(*key, log) for key, log in loaded.items()}

    def move_replica(self, topic: str, index: int, log_dir: LogDir) -> None:
        """AlterReplicaLogDirs: the replica goes to another of this broker's directories, its
        files with it when it is on disk."""
        if self.replica_dirs.dir_of(topic, index) == log_dir:
            return
        self.replica_dirs.move(topic, index, log_dir)
        if log_dir.on_disk:
            self.log_dirs.move_log(topic, index, log_dir.path)

    def _drop_stale_logs(self, keys: set[tuple[str, int]]) -> None:
        """Logs loaded from disk whose topic id is not the topic's now: the topic was deleted
        (and made again) while this broker was down, so its old records go, as Kafka drops a
        log whose partition.metadata names another topic id."""
        for key in keys:
            topic = self.image.topics.get(key[0])
            if topic is not None and self.log_dirs.stale(key, topic.topic_id):
                self.remove_log(*key)

    def drop_stray_logs(self) -> list[tuple[str, int]]:
        """Once the image has caught up (at registration): logs loaded from disk that the
        metadata no longer assigns here (their topic deleted, and not made again, while this
        broker was down; or the replica moved to other brokers) go, as Kafka's LogManager
        deletes stray logs at startup. Returns their keys."""
        stray = []
        for key in sorted(self.log_dirs.loaded_from):
            part = self.image.partition(*key)
            if key in self.logs and (part is None or self.node_id not in part.replicas):
                stray.append(key)
                self.remove_log(*key)
                self.replica_dirs.forget(*key)
        self.log_dirs.loaded_from = {}
        self.log_dirs.unchecked = {}
        return stray

    def remove_log(self, topic: str, index: int) -> None:
        """A deleted topic's replica: its log and its directory go."""
        self.logs.pop((topic, index), None)
        self.log_dirs.remove_log(topic, index)

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
        """Flush every log, write the checkpoints and the CleanShutdownFile with this broker
        epoch (D.18)."""
        self.flush()
        self.log_dirs.write_checkpoints(self.logs)
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
        if self.log_dirs.unchecked:
            self._drop_stale_logs(delta.partitions)
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
