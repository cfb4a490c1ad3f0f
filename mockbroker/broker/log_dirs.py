"""A broker's log directory: its partitions' segment files, checkpoints and CleanShutdownFile.

Without `log.dirs` the directory is in memory (the logs are the broker's only copy). With it,
`<log.dirs>/broker-<id>` is a Kafka log directory (`segment_files.py` has the format):
`meta.properties`, one `<topic>-<partition>` directory per replica, the offset checkpoints.

A partition's `PartitionStore` is its log's storage back end: the log hands it the batches it
flushes (`write`: what survives an unclean shutdown is exactly what was flushed, so records reach
the files only when flushed), and mirrors truncations and deletions of its prefix. `load_logs`
rebuilds every log from the files at start, recovering each segment (a cut or corrupt tail
truncated, indexes rebuilt), with the log start offset and high watermark of the checkpoints.

Kafka's LogManager writes `.kafka_cleanshutdown` holding the broker epoch on a clean stop and
deletes it while loading; the restarted broker sends that epoch as PreviousBrokerEpoch, or -1
when the file is missing or unreadable (KIP-966, kip-rules D.18).
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Container, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import ClusterError
from . import segment_files as files

if TYPE_CHECKING:
    from .log import PartitionLog

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
    """One partition's directory of segments: the flushed part of its log."""

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

    def write(self, batches: Iterable[BatchLike], roll_at: Container[int] | None = None) -> None:
        """Append flushed batches (those past the disk's end) and fsync them. A new segment
        rolls at a batch whose base offset is in `roll_at` (the log's own segments), or without
        it when the active one would pass segment.bytes."""
        pending: list[files.SegmentBatch] = []
        pending_size = 0
        expected = self.end_offset
        limit = self.segment_bytes()
        for batch in batches:
            if batch.last_offset < expected:
                continue
            active = self.segments[-1] if self.segments else None
            if active is None:
                roll = True
            elif roll_at is not None:
                roll = batch.base_offset in roll_at and active.base_offset != batch.base_offset
            else:
                size = active.size + pending_size
                roll = size > 0 and size + len(batch.data) > limit
            if roll:
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

    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or past `offset` (whole segments, then the straddled one)."""
        while self.segments and self.segments[-1].base_offset >= offset and len(self.segments) > 1:
            self.segments.pop().delete()
        if self.segments and self.segments[-1].next_offset > offset:
            self.segments[-1].truncate_to(offset)

    def delete_before(self, offset: int) -> None:
        """Delete the segments wholly below `offset` (never the active one)."""
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            self.segments.pop(0).delete()

    def remove(self) -> None:
        """Delete the partition's directory (its topic was deleted)."""
        self.segments = []
        shutil.rmtree(self.directory, ignore_errors=True)


class LogDirs:
    """One log directory per broker: in memory, or `<log.dirs>/broker-<id>` on disk."""

    def __init__(
        self,
        base: str | None,
        node_id: int,
        cluster_id: str = "kipwire-mock",
        segment_bytes: Callable[[str], int] | None = None,
    ) -> None:
        self.path = Path(base) / f"broker-{node_id}" if base else None
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.segment_bytes = segment_bytes or (lambda topic: SEGMENT_BYTES)
        self._memory: dict[str, str] = {}

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

    def store(self, topic: str, partition: int, topic_id: uuid.UUID | None) -> PartitionStore:
        """The store of a replica's directory (created, with its partition.metadata)."""
        assert self.path is not None
        directory = self.path / files.partition_dir_name(topic, partition)
        directory.mkdir(parents=True, exist_ok=True)
        if topic_id is not None and files.read_partition_metadata(directory) != topic_id:
            files.write_partition_metadata(directory, topic_id)
        return PartitionStore(directory, lambda: self.segment_bytes(topic))

    def load_logs(
        self, make_log: Callable[[], PartitionLog]
    ) -> dict[tuple[str, int], PartitionLog]:
        """Every replica's log rebuilt from its segments (recovered), with the checkpoints'
        log start offset and high watermark; empty in memory."""
        if self.path is None:
            return {}
        self.format()
        starts = files.read_offsets_checkpoint(self.path / files.LOG_START_CHECKPOINT)
        watermarks = files.read_offsets_checkpoint(self.path / files.REPLICATION_CHECKPOINT)
        logs = {}
        for directory in sorted(p for p in self.path.iterdir() if p.is_dir()):
            key = files.parse_partition_dir(directory.name)
            if key is None:
                continue
            store = PartitionStore(directory, lambda t=key[0]: self.segment_bytes(t))
            log = make_log()
            batches = store.load()
            if batches:
                log.append_replicated(b"".join(b.data for b in batches))
            start = max(starts.get(key, 0), batches[0].base_offset if batches else 0)
            if not batches:
                log.end_offset = start
            log.log_start_offset = start
            log.flushed_offset = log.end_offset
            log.high_watermark = min(max(watermarks.get(key, 0), start), log.end_offset)
            log.store = store
            logs[key] = log
        return logs

    def write_checkpoints(self, logs: Mapping[tuple[str, int], PartitionLog]) -> None:
        """The offset checkpoints and each partition's leader-epoch-checkpoint, as Kafka
        writes them (periodically, and on a clean stop)."""
        if self.path is None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        on_disk = {k: log for k, log in logs.items() if log.store is not None}
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
        for log in on_disk.values():
            files.write_leader_epochs(log.store.directory, log.epoch_starts)

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
