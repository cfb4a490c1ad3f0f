"""A broker's log directory: its partitions' segment files, checkpoints and CleanShutdownFile.

Without `log.dirs` the directory is in memory (the logs are the broker's only copy). With it,
`<entry>/broker-<id>` per comma-separated entry is a Kafka log directory (`segment_files.py` has
the format): `meta.properties` (with the directory's KIP-858 `directory.id`, kept across
restarts), one `<topic>-<partition>` directory per replica it holds (its segments and
`partition.metadata`, `leader-epoch-checkpoint`), the offset checkpoints of those replicas and
the CleanShutdownFile. Which directory a new replica goes to is `replica_dirs.ReplicaDirs`'
choice; `move_log` carries a replica's files to another directory (AlterReplicaLogDirs). A log
on disk is made of `file_segment.FileSegment`s: the batches reach the files when the log
flushes, so an unclean stop loses exactly what was not flushed. `load_logs` rebuilds every log
at start, recovering each segment (a cut or corrupt tail truncated, indexes rebuilt), with the
log start offset and high watermark of the checkpoints (written on a clean stop, as Kafka
writes them on its shutdown), and says where it found each (`loaded_from`).

`PartitionStore` is a simpler append-only directory of segments, for a log that only grows and
is rebuilt by replaying it (the controller's metadata log).

Kafka's LogManager writes `.kafka_cleanshutdown` holding the broker epoch on a clean stop and
deletes it while loading; the restarted broker sends that epoch as PreviousBrokerEpoch, or -1
when the file is missing (from any of the directories) or unreadable (KIP-966, kip-rules D.18).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from ..errors import ClusterError
from . import segment_files as files
from .file_segment import PartitionFiles
from .log import PartitionLog
from .log_config import LogConfig
from .replica_dirs import log_dir_paths, random_directory_id

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: The end of a log's copy in progress to another directory (Kafka's future log).
FUTURE_SUFFIX = "-future"
NO_EPOCH = -1
#: Kafka's default log.segment.bytes.
SEGMENT_BYTES = 1024 * 1024 * 1024


class LogDirError(ClusterError):
    """A log directory that cannot be used (another cluster's, unreadable)."""


class BatchLike(Protocol):
    """What a store writes of a batch: its offsets, its largest timestamp, its bytes."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


class PartitionStore:
    """An append-only directory of segments, read back whole."""

    def __init__(
        self,
        directory: Path,
        segment_bytes: Callable[[], int] = lambda: SEGMENT_BYTES,
        interval_bytes: int = files.INDEX_INTERVAL_BYTES,
    ) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.interval_bytes = interval_bytes
        self.segments: list[files.SegmentFile] = []

    @property
    def end_offset(self) -> int:
        """The offset after the last batch on disk (0 when empty)."""
        return self.segments[-1].next_offset if self.segments else 0

    def load(self) -> list[files.SegmentBatch]:
        """Every batch on disk, each segment recovered first."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segments = []
        batches: list[files.SegmentBatch] = []
        for segment, found in files.iter_segment_batches(self.directory, self.interval_bytes):
            self.segments.append(segment)
            batches.extend(found.batches)
        return batches

    def write(self, batches: Iterable[BatchLike]) -> None:
        """Append batches (those past the disk's end) and fsync them; a new segment rolls when
        the active one would pass segment.bytes."""
        pending: list[files.SegmentBatch] = []
        pending_size = 0
        expected = self.end_offset
        limit = self.segment_bytes()
        for batch in batches:
            if batch.last_offset < expected:
                continue
            active = self.segments[-1] if self.segments else None
            size = active.size + pending_size if active is not None else 0
            if active is None or (size > 0 and size + len(batch.data) > limit):
                self._flush_pending(pending)
                pending, pending_size = [], 0
                if active is not None:
                    active.close(sync=True)
                self.directory.mkdir(parents=True, exist_ok=True)
                self.segments.append(
                    files.SegmentFile(self.directory, batch.base_offset, self.interval_bytes)
                )
            data = bytes(batch.data)
            pending.append(
                files.SegmentBatch(batch.base_offset, batch.last_offset, batch.max_timestamp, data)
            )
            pending_size += len(data)
            expected = batch.last_offset + 1
        self._flush_pending(pending)

    def _flush_pending(self, pending: list[files.SegmentBatch]) -> None:
        if pending:
            self.segments[-1].append(pending, sync=True)


class LogDirs:
    """A broker's log directories: one in memory, or `<entry>/broker-<id>` per `log.dirs` entry."""

    def __init__(
        self,
        base: str | None,
        node_id: int,
        cluster_id: str = "kipwire-mock",
    ) -> None:
        self.paths = [Path(p) for p in log_dir_paths(base, node_id)]
        self.node_id = node_id
        self.cluster_id = cluster_id
        self._memory: dict[str, str] = {}
        #: Topic ids of the logs loaded from disk, until the metadata confirms or refutes them.
        self.unchecked: dict[tuple[str, int], uuid.UUID] = {}
        #: The directory each loaded log was found in (the replica's log dir).
        self.loaded_from: dict[tuple[str, int], Path] = {}
        # each on-disk log's partition directory and segment files, which a move relocates
        self._files: dict[tuple[str, int], PartitionFiles] = {}

    @property
    def on_disk(self) -> bool:
        """Whether the logs are kept in files."""
        return bool(self.paths)

    def format(self) -> None:
        """Create each directory and its meta.properties (with a new directory.id), or check
        the one there is ours."""
        for path in self.paths:
            path.mkdir(parents=True, exist_ok=True)
            meta = files.read_meta_properties(path)
            if not meta:
                directory_id = random_directory_id()
                files.write_meta_properties(path, self.node_id, self.cluster_id, directory_id)
                continue
            ours = (self.cluster_id, str(self.node_id))
            if (meta.get("cluster.id"), meta.get("node.id")) != ours:
                raise LogDirError(
                    f"{path}: meta.properties is node {meta.get('node.id')} of cluster "
                    f"{meta.get('cluster.id')!r}, not node {self.node_id} of {self.cluster_id!r}"
                )

    def _dir_of(self, key: tuple[str, int]) -> Path | None:
        held = self._files.get(key)
        return held.directory if held is not None else None

    def new_log(
        self,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None,
        config: LogConfig,
        log_dir: str | None = None,
    ) -> PartitionLog:
        """An empty log for a replica: in memory, or in its new `<topic>-<partition>` directory
        under `log_dir` (the first directory when not given), with its partition.metadata,
        whose segment files take what the log flushes."""
        if not self.paths:
            return PartitionLog(config=config)
        name = files.partition_dir_name(topic, partition)
        for path in self.paths:  # a deleted topic's leftovers, in whichever directory
            shutil.rmtree(path / name, ignore_errors=True)
        directory = (Path(log_dir) if log_dir else self.paths[0]) / name
        directory.mkdir(parents=True)
        if topic_id is not None:
            files.write_partition_metadata(directory, topic_id)
        held = self._files[topic, partition] = PartitionFiles(directory, {})
        return PartitionLog(config=config, new_segment=held.factory)

    def remove_log(self, topic: str, partition: int) -> None:
        """A replica's directory goes with its topic."""
        self._files.pop((topic, partition), None)
        for path in self.paths:
            shutil.rmtree(path / files.partition_dir_name(topic, partition), True)

    def move_log(self, topic: str, partition: int, log_dir: str) -> None:
        """Move a replica's partition directory under `log_dir` (AlterReplicaLogDirs): copied
        to a `-future` directory there, renamed into place, the old one deleted, as Kafka's
        future replica is promoted; the log's segments write to the new files from then on."""
        held = self._files.get((topic, partition))
        if held is None or held.directory.parent == Path(log_dir):
            return
        target = Path(log_dir) / held.directory.name
        future = Path(log_dir) / f"{held.directory.name}.{uuid.uuid4().hex}{FUTURE_SUFFIX}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(held.directory, future)
        os.replace(future, target)
        shutil.rmtree(held.directory)
        held.relocate(target)

    def size_on_disk(self, topic: str, partition: int) -> int:
        """The bytes of the replica's `.log` files (0 when it has none on disk)."""
        directory = self._dir_of((topic, partition))
        if directory is None:
            return 0
        return sum(p.stat().st_size for p in directory.glob("*" + files.LOG) if p.is_file())

    def load_logs(
        self, config_of: Callable[[str], LogConfig]
    ) -> dict[tuple[str, int], PartitionLog]:
        """Every replica's log rebuilt from its segments (each recovered: a cut or corrupt tail
        truncated, indexes rebuilt), with the checkpoints' log start offset and high watermark;
        nothing in memory. `loaded_from` says which directory held each."""
        if not self.paths:
            return {}
        self.format()
        self.unchecked = {}
        self.loaded_from = {}
        self._files = {}
        logs = {}
        for path in self.paths:
            starts = files.read_offsets_checkpoint(path / files.LOG_START_CHECKPOINT)
            watermarks = files.read_offsets_checkpoint(path / files.REPLICATION_CHECKPOINT)
            for directory in sorted(p for p in path.iterdir() if p.is_dir()):
                key = files.parse_partition_dir(directory.name)
                if directory.name.endswith(FUTURE_SUFFIX) or (key is not None and key in logs):
                    # a move cut short: its partial copy, or a whole second copy, goes (the
                    # replica stays in the first directory that has it)
                    shutil.rmtree(directory)
                    continue
                if key is None:
                    continue
                logs[key] = self._load_log(
                    key, directory, config_of, starts.get(key, 0), watermarks.get(key, 0)
                )
        return logs

    def _load_log(
        self,
        key: tuple[str, int],
        directory: Path,
        config_of: Callable[[str], LogConfig],
        start: int,
        watermark: int,
    ) -> PartitionLog:
        found: dict[int, files.SegmentFile] = {}
        segments = []
        for segment, recovered in files.iter_segment_batches(directory):
            found[segment.base_offset] = segment
            segments.append((segment.base_offset, [b.data for b in recovered.batches]))
        if not segments and start:
            segments.append((start, []))
        held = self._files[key] = PartitionFiles(directory, found)
        log = PartitionLog(config=config_of(key[0]), new_segment=held.factory)
        log.load_segments(segments)
        if start > log.log_start_offset:
            log.log_start_offset = start
            log.segments[0].drop_before(start)
        log.high_watermark = min(max(watermark, start), log.end_offset)
        self.loaded_from[key] = directory.parent
        topic_id = files.read_partition_metadata(directory)
        if topic_id is not None:
            self.unchecked[key] = topic_id
        return log

    def stale(self, key: tuple[str, int], topic_id: uuid.UUID) -> bool:
        """Whether a loaded log belongs to another topic of that name (checked once)."""
        loaded = self.unchecked.pop(key, None)
        return loaded is not None and loaded != topic_id

    def write_checkpoints(self, logs: Mapping[tuple[str, int], PartitionLog]) -> None:
        """Each directory's offset checkpoints (of the replicas it holds) and each partition's
        leader-epoch-checkpoint, as Kafka writes them (periodically, and on a clean stop)."""
        for path in self.paths:
            path.mkdir(parents=True, exist_ok=True)
            held = {k: log for k, log in logs.items() if self._in(k, path)}
            files.write_offsets_checkpoint(
                path / files.RECOVERY_POINT_CHECKPOINT,
                {k: log.flushed_offset for k, log in held.items()},
            )
            files.write_offsets_checkpoint(
                path / files.LOG_START_CHECKPOINT,
                {k: log.log_start_offset for k, log in held.items() if log.log_start_offset},
            )
            files.write_offsets_checkpoint(
                path / files.REPLICATION_CHECKPOINT,
                {k: log.high_watermark for k, log in held.items()},
            )
            for (topic, partition), log in held.items():
                directory = path / files.partition_dir_name(topic, partition)
                if directory.is_dir():
                    files.write_leader_epochs(directory, log.epoch_starts)

    def _in(self, key: tuple[str, int], path: Path) -> bool:
        directory = self._dir_of(key)
        if directory is not None:
            return directory.parent == path
        return path == self.paths[0]  # a log this object did not make: the first directory's

    def write_clean_shutdown(self, broker_epoch: int) -> None:
        """Write the CleanShutdownFile in every directory: `{"version":0,"BrokerEpoch":N}`."""
        text = json.dumps({"version": 0, "BrokerEpoch": broker_epoch}, separators=(",", ":"))
        if not self.paths:
            self._memory[CLEAN_SHUTDOWN_FILE] = text
            return
        for path in self.paths:
            path.mkdir(parents=True, exist_ok=True)
            (path / CLEAN_SHUTDOWN_FILE).write_text(text)

    def clean_shutdown_text(self) -> str | None:
        """The CleanShutdownFile's content, or None unless every directory has the same one."""
        if not self.paths:
            return self._memory.get(CLEAN_SHUTDOWN_FILE)
        texts = set()
        for path in self.paths:
            file = path / CLEAN_SHUTDOWN_FILE
            if not file.is_file():
                return None
            texts.add(file.read_text())
        return texts.pop() if len(texts) == 1 else None

    def take_previous_epoch(self) -> int:
        """The epoch of the last clean shutdown (-1 if none, or if a directory missed it),
        deleting the files as Kafka does."""
        text = self.clean_shutdown_text()
        self._memory.pop(CLEAN_SHUTDOWN_FILE, None)
        for path in self.paths:
            (path / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
        if text is None:
            return NO_EPOCH
        try:
            content = json.loads(text)
            epoch = content["BrokerEpoch"]
        except (ValueError, KeyError, TypeError):
            return NO_EPOCH
        return epoch if isinstance(epoch, int) and content.get("version") == 0 else NO_EPOCH
