"""Which log directory holds each of a broker's replicas: the one place that says it (KIP-113,
KIP-858).

A broker has one directory per `log.dirs` entry (comma-separated; `<entry>/broker-<id>`, as
`log_dirs.LogDirs` lays them out), or one in-memory directory without it; each has an id the
broker registers (BrokerRegistration's LogDirs): the `directory.id` of the directory's
`meta.properties` when it has one (as Kafka keeps it), else a new one. When the metadata first
names this broker as a replica, the replica is placed as Kafka's LogManager#getOrCreateLog
places a new log: in the directory AlterReplicaLogDirs asked for beforehand, else the one the
partition record names, else the one holding the fewest replicas (nextLogDirs). A directory
other than the recorded one is reported to the controller with AssignReplicasToDirs
(`report_assignments`), which records it in a PartitionChangeRecord's Directories
(`controller/dir_assignment.py`).

AlterReplicaLogDirs moves a replica to another of the broker's directories. In memory the copy
is immediate (there is no future replica to catch up); the move is reported as a placement is.
Code that keeps logs on disk finds a replica's directory with `dir_of` and registers moves and
loads through `move` and `adopt`.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio

from kipwire.codec import ApiKey, ErrorCode

from ..controller.directories import LOST, RESERVED_BELOW, UNASSIGNED

if TYPE_CHECKING:
    from .metadata_image import MetadataImage

Key = tuple[str, int]
#: Where the in-memory directories of brokers without `log.dirs` say they are.
MEMORY_ROOT = "/kipwire-memory"
ASSIGN_VERSION = 0
RETRY_BACKOFF = 0.1
#: The length limit of a future log's directory name (`<topic>-<n>.<32 hex>-future`, KAFKA-4893).
MAX_DIR_NAME = 255
_FUTURE_NAME_EXTRA = len(".") + 32 + len("-future")

log = logging.getLogger(__name__)


META_PROPERTIES = "meta.properties"


def stored_directory_id(path: str) -> uuid.UUID | None:
    """The `directory.id` a directory's meta.properties holds (Kafka's base64 Uuid), or None."""
    try:
        lines = (Path(path) / META_PROPERTIES).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "directory.id":
            try:
                raw = base64.urlsafe_b64decode(value.strip() + "==")
            except (binascii.Error, ValueError):
                return None
            return uuid.UUID(bytes=raw) if len(raw) == 16 else None
    return None


def log_dir_paths(log_dirs: str | None, node_id: int) -> list[str]:
    """A broker's log directories' absolute paths: `<entry>/broker-<id>` per comma-separated
    `log.dirs` entry (none without it)."""
    entries = [e.strip() for e in (log_dirs or "").split(",") if e.strip()]
    return [os.path.abspath(Path(e) / f"broker-{node_id}") for e in entries]


def random_directory_id() -> uuid.UUID:
    """A new directory id outside Kafka's reserved range (DirectoryId#random)."""
    while True:
        candidate = uuid.uuid4()
        if candidate.int >= RESERVED_BELOW:
            return candidate


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log directory of a broker: its absolute path, id and whether it is on disk."""

    path: str
    directory_id: uuid.UUID
    on_disk: bool

    def space(self) -> tuple[int, int]:
        """(total, usable) bytes of the volume holding it; (-1, -1), unknown, in memory."""
        if not self.on_disk:
            return -1, -1
        existing = Path(self.path)
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        usage = shutil.disk_usage(existing)
        return usage.total, usage.free


def future_name_too_long(topic: str, index: int) -> bool:
    """Whether the replica's future log directory name exceeds what a file system allows."""
    return len(f"{topic}-{index}") + _FUTURE_NAME_EXTRA > MAX_DIR_NAME


class ReplicaDirs:
    """A broker's log directories and the directory of each replica it holds."""

    def __init__(self, log_dirs: str | None, node_id: int) -> None:
        on_disk = log_dir_paths(log_dirs, node_id)
        paths = on_disk or [f"{MEMORY_ROOT}/broker-{node_id}"]
        self.dirs = [
            LogDir(p, (on_disk and stored_directory_id(p)) or random_directory_id(), bool(on_disk))
            for p in paths
        ]
        self._where: dict[Key, LogDir] = {}
        self._preferred: dict[Key, LogDir] = {}
        # placements and moves the metadata does not record yet, for AssignReplicasToDirs
        self._unreported: dict[Key, LogDir] = {}
        self._report_wanted = trio.Event()

    def ids(self) -> list[uuid.UUID]:
        """The directory ids, as the broker registers them."""
        return [d.directory_id for d in self.dirs]

    def by_path(self, path: str) -> LogDir | None:
        """The directory at an absolute path, or None when it is not one of this broker's."""
        return next((d for d in self.dirs if d.path == path), None)

    def by_id(self, directory_id: uuid.UUID) -> LogDir | None:
        """The directory with this id, or None."""
        return next((d for d in self.dirs if d.directory_id == directory_id), None)

    def dir_of(self, topic: str, index: int) -> LogDir | None:
        """The directory holding this broker's replica of the partition, None if it holds none."""
        return self._where.get((topic, index))

    def replicas_in(self, log_dir: LogDir) -> list[Key]:
        """The replicas the directory holds, by topic and index."""
        return sorted(key for key, d in self._where.items() if d == log_dir)

    def hosts(self, topic: str, index: int) -> bool:
        """Whether this broker holds a replica of the partition."""
        return (topic, index) in self._where

    def replayed(self, image: MetadataImage, node_id: int, keys: Iterable[Key]) -> None:
        """Follow the metadata's replica assignments of the partitions `keys` changed: place a
        replica new to this broker, forget one it lost, and note what the controller should
        record."""
        for key in sorted(keys):  # placement by counts: the same order every run
            part = image.partition(*key)
            if part is None or node_id not in part.replicas:
                self._where.pop(key, None)
                self._unreported.pop(key, None)
                continue
            recorded = None
            if len(part.directories) == len(part.replicas):
                recorded = part.directories[part.replicas.index(node_id)]
            where = self._where.get(key)
            if where is None:
                where = self._where[key] = self._place(key, recorded)
            # no Directories in the record: a metadata version before KIP-858, nothing to tell
            if recorded is None or recorded == where.directory_id:
                self._unreported.pop(key, None)
            else:
                self._report(key, where)

    def _place(self, key: Key, recorded: uuid.UUID | None) -> LogDir:
        preferred = self._preferred.pop(key, None)
        if preferred is not None:
            return preferred
        if recorded is not None and recorded not in (UNASSIGNED, LOST):
            named = self.by_id(recorded)
            if named is not None:
                return named
        counts = {d: 0 for d in self.dirs}
        for d in self._where.values():
            counts[d] += 1
        return min(self.dirs, key=counts.__getitem__)  # first in config order on a tie

    def place(self, topic: str, index: int) -> LogDir:
        """The replica's directory, placed now (as a new replica is) when it has none yet."""
        where = self._where.get((topic, index))
        if where is None:
            where = self._where[topic, index] = self._place((topic, index), None)
        return where

    def prefer(self, topic: str, index: int, log_dir: LogDir) -> None:
        """Place the replica in `log_dir` when it arrives (maybeUpdatePreferredLogDir)."""
        if self._where.get((topic, index)) != log_dir:
            self._preferred[topic, index] = log_dir

    def move(self, topic: str, index: int, log_dir: LogDir) -> None:
        """Move a replica this broker holds to another of its directories, and report it."""
        key = (topic, index)
        if key not in self._where or self._where[key] == log_dir:
            return
        self._where[key] = log_dir
        self._report(key, log_dir)

    def adopt(self, topic: str, index: int, log_dir: LogDir) -> None:
        """A replica found in `log_dir` (a log loaded from disk) stays there."""
        self._where[topic, index] = log_dir

    def forget(self, topic: str, index: int) -> None:
        """A replica whose log went without the metadata saying so (a stray log dropped)."""
        self._where.pop((topic, index), None)
        self._unreported.pop((topic, index), None)

    def _report(self, key: Key, log_dir: LogDir) -> None:
        self._unreported[key] = log_dir
        self._report_wanted.set()

    def take_unreported(self) -> dict[Key, LogDir]:
        """The assignments to send now (they are reported again if the send fails)."""
        out, self._unreported = self._unreported, {}
        return out

    def requeue(self, assignments: dict[Key, LogDir]) -> None:
        """Send these again, unless the replica has moved or gone since."""
        for key, log_dir in assignments.items():
            if self._where.get(key) == log_dir and key not in self._unreported:
                self._report(key, log_dir)

    async def wait_unreported(self) -> None:
        """Return once there is an assignment to report."""
        while not self._unreported:
            await self._report_wanted.wait()
            self._report_wanted = trio.Event()


def assignment_request(
    node_id: int, epoch: int, image: MetadataImage, assignments: dict[Key, LogDir]
) -> dict:
    """The AssignReplicasToDirs body for these assignments (topics the image lost are left out)."""
    by_dir: dict[uuid.UUID, dict[uuid.UUID, list[int]]] = {}
    for (topic, index), log_dir in sorted(assignments.items()):
        info = image.topics.get(topic)
        if info is not None:
            by_dir.setdefault(log_dir.directory_id, {}).setdefault(info.topic_id, []).append(index)
    return {
        "broker_id": node_id,
        "broker_epoch": epoch,
        "directories": [
            {
                "id": dir_id,
                "topics": [
                    {"topic_id": t, "partitions": [{"partition_index": i} for i in parts]}
                    for t, parts in topics.items()
                ],
            }
            for dir_id, topics in by_dir.items()
        ],
    }


class _Controller(Protocol):
    async def call(self, api_key: int, version: int, body: Any) -> Any: ...


class Reporter(Protocol):
    """The broker as `report_assignments` sees it (a `state.BrokerState`)."""

    node_id: int
    epoch: int
    image: MetadataImage
    replica_dirs: ReplicaDirs
    controller_connection: _Controller | None


async def report_assignments(node: Reporter) -> None:
    """Send AssignReplicasToDirs for every placement and move the metadata does not record
    yet, until cancelled; a refused or failed send is retried after a short backoff."""
    dirs = node.replica_dirs
    while True:
        await dirs.wait_unreported()
        assignments = dirs.take_unreported()
        body = assignment_request(node.node_id, node.epoch, node.image, assignments)
        if not body["directories"]:
            continue
        connection = node.controller_connection
        try:
            if connection is None:
                raise OSError("no controller connection")
            response = await connection.call(ApiKey.ASSIGN_REPLICAS_TO_DIRS, ASSIGN_VERSION, body)
        except OSError as e:
            log.debug("AssignReplicasToDirs failed: %s", e)
            response = {"error_code": ErrorCode.NETWORK_EXCEPTION}
        if response["error_code"] == ErrorCode.UNSUPPORTED_VERSION:
            continue  # the metadata version has no directories to record
        if response["error_code"] != ErrorCode.NONE:
            await trio.sleep(RETRY_BACKOFF)
            dirs.requeue(assignments)
