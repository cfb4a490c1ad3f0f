"""A broker's log directory: its partitions' segment files, checkpoints and CleanShutdownFile.

Without `log.dirs` the directory is in memory (the logs are the broker's only copy). With it,
`<log.dirs>/broker-<id>` is a Kafka log directory (`segment_files.py` has the format):
`meta.properties`, one `<topic>-<partition>` directory per replica (its segments and
`partition.metadata`, `leader-epoch-checkpoint`), and the offset checkpoints. A log on disk is
made of `file_segment.FileSegment`s: the batches reach the files when the log flushes, so an
unclean stop loses exactly what was not flushed. `load_logs` rebuilds every log at start,
recovering each segment (a cut or corrupt tail truncated, indexes rebuilt), with the log start
offset and high watermark of the checkpoints (written on a clean stop, as Kafka writes them on
its shutdown).

`PartitionStore` is a simpler append-only directory of segments, for a log that only grows and
is rebuilt by replaying it (the controller's metadata log).

Kafka's LogManager writes `.kafka_cleanshutdown` holding the broker epoch on a clean stop and
deletes it while loading; the restarted broker sends that epoch as PreviousBrokerEpoch, or -1
when the file is missing or unreadable (KIP-966, kip-rules D.18).
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from ..errors import ClusterError
from . import segment_files as files
from .file_segment import segment_factory
from .log import PartitionLog
from .log_config import LogConfig

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
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
    """One log directory per broker: in memory, or `<log.dirs>/broker-<id>` on disk."""

    def __init__(
        self,
        base: str | None,
        node_id: int,
        cluster_id: str = "kipwire-mock",
    ) -> None:
        self.path = Path(base) / f"broker-{node_id}" if base else None
        self.node_id = node_id
        self.cluster_id = cluster_id
        self._memory: dict[str, str] = {}
        #: Topic ids of the logs loaded from disk, until the metadata confirms or refutes them.
        self.unchecked: dict[tuple[str, int], uuid.UUID] = {}

    @property
    def on_disk(self) -> bool:
        """Whether the logs are kept in files."""
        return self.path is not None

    def format(self) -> None:
        """Create the directory and its meta.properties, or check the one there is ours."""
        assert self.path is not None
        self.path.mkdir(parents=True, exist_ok=True)
        meta = files.read_meta_properties(self.path)
        if not meta:
            files.write_meta_properties(self.path, self.node_id, self.cluster_id, uuid.uuid4())
            return
        if meta.get("cluster.id") != self.cluster_id or meta.get("node.id") != str(self.node_id):
            raise LogDirError(
                f"{self.path}: meta.properties is node {meta.get('node.id')} of cluster "
                f"{meta.get('cluster.id')!r}, not node {self.node_id} of {self.cluster_id!r}"
            )

    def new_log(
        self, topic: str, partition: int, topic_id: uuid.UUID | None, config: LogConfig
    ) -> PartitionLog:
        """An empty log for a replica: in memory, or in its new `<topic>-<partition>` directory
        (with its partition.metadata) whose segment files take what the log flushes."""
        if self.path is None:
            return PartitionLog(config=config)
        directory = self.path / files.partition_dir_name(topic, partition)
        shutil.rmtree(directory, ignore_errors=True)  # a deleted topic's leftovers
        directory.mkdir(parents=True)
        if topic_id is not None:
            files.write_partition_metadata(directory, topic_id)
        return PartitionLog(config=config, new_segment=segment_factory(directory, {}))

    def remove_log(self, topic: str, partition: int) -> None:
        """A replica's directory goes with its topic."""
        if self.path is not None:
            shutil.rmtree(self.path / files.partition_dir_name(topic, partition), True)

    def load_logs(
        self, config_of: Callable[[str], LogConfig]
    ) -> dict[tuple[str, int], PartitionLog]:
        """Every replica's log rebuilt from its segments (each recovered: a cut or corrupt tail
        truncated, indexes rebuilt), with the checkpoints' log start offset and high watermark;
        nothing in memory."""
        if self.path is None:
            return {}
        self.format()
        self.unchecked = {}
        starts = files.read_offsets_checkpoint(self.path / files.LOG_START_CHECKPOINT)
        watermarks = files.read_offsets_checkpoint(self.path / files.REPLICATION_CHECKPOINT)
        logs = {}
        for directory in sorted(p for p in self.path.iterdir() if p.is_dir()):
            key = files.parse_partition_dir(directory.name)
            if key is None:
                continue
            found: dict[int, files.SegmentFile] = {}
            segments = []
            for segment, recovered in files.iter_segment_batches(directory):
                found[segment.base_offset] = segment
                segments.append((segment.base_offset, [b.data for b in recovered.batches]))
            start = starts.get(key, 0)
            if not segments and start:
                segments.append((start, []))
            log = PartitionLog(
                config=config_of(key[0]), new_segment=segment_factory(directory, found)
            )
            log.load_segments(segments)
            if start > log.log_start_offset:
                log.log_start_offset = start
                log.segments[0].drop_before(start)
            log.high_watermark = min(max(watermarks.get(key, 0), start), log.end_offset)
            logs[key] = log
            topic_id = files.read_partition_metadata(directory)
            if topic_id is not None:
                self.unchecked[key] = topic_id
        return logs

    def stale(self, key: tuple[str, int], topic_id: uuid.UUID) -> bool:
        """Whether a loaded log belongs to another topic of that name (checked once)."""
        loaded = self.unchecked.pop(key, None)
        return loaded is not None and loaded != topic_id

    def write_checkpoints(self, logs: Mapping[tuple[str, int], PartitionLog]) -> None:
        """The offset checkpoints and each partition's leader-epoch-checkpoint, as Kafka
        writes them (periodically, and on a clean stop)."""
        if self.path is None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        on_disk = dict(logs)
        files.write_offsets_checkpoint(
            self.path / files.RECOVERY_POINT_CHECKPOINT,
            {k: log.flushed_offset for k, log in on_disk.items()},
        )
        files.write_offsets_checkpoint(
            self.path / files.LOG_START_CHECKPOINT,
            {k: log.log_start_offset for k, log in on_disk.items() if log.log_start_offset},
        )
        files.write_offsets_checkpoint(
            self.path / files.REPLICATION_CHECKPOINT,
            {k: log.high_watermark for k, log in on_disk.items()},
        )
        for (topic, partition), log in on_disk.items():
            directory = self.path / files.partition_dir_name(topic, partition)
            if directory.is_dir():
                files.write_leader_epochs(directory, log.epoch_starts)

    def write_clean_shutdown(self, broker_epoch: int) -> None:
        """Write the CleanShutdownFile: `{"version":0,"BrokerEpoch":N}`."""
        text = json.dumps({"version": 0, "BrokerEpoch": broker_epoch}, separators=(",", ":"))
        if self.path is None:
            self._memory[CLEAN_SHUTDOWN_FILE] = text
            return
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / CLEAN_SHUTDOWN_FILE).write_text(text)

    def clean_shutdown_text(self) -> str | None:
        """The CleanShutdownFile's content, or None when there is none."""
        if self.path is None:
            return self._memory.get(CLEAN_SHUTDOWN_FILE)
        file = self.path / CLEAN_SHUTDOWN_FILE
        return file.read_text() if file.is_file() else None

    def take_previous_epoch(self) -> int:
        """The epoch of the last clean shutdown (-1 if none), deleting the file as Kafka does."""
        text = self.clean_shutdown_text()
        if self.path is None:
            self._memory.pop(CLEAN_SHUTDOWN_FILE, None)
        elif text is not None:
            (self.path / CLEAN_SHUTDOWN_FILE).unlink()
        if text is None:
            return NO_EPOCH
        try:
            content = json.loads(text)
            epoch = content["BrokerEpoch"]
        except (ValueError, KeyError, TypeError):
            return NO_EPOCH
        return epoch if isinstance(epoch, int) and content.get("version") == 0 else NO_EPOCH
