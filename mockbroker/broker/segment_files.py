"""Kafka's on-disk log format: segment files, partition directories, checkpoint files.

A partition is a directory `<topic>-<partition>` of segments named by their base offset (20
digits): `.log` holds the record batches exactly as the log stores them, `.index` 8-byte entries
(offset relative to the base: int32, file position: int32), `.timeindex` 12-byte entries
(timestamp: int64, relative offset: int32). An index entry is written for a batch once more than
`index.interval.bytes` were appended since the last one, pointing at that batch's last offset and
position; the time index follows it with the largest timestamp so far (and the last offset of the
batch carrying it), only when that timestamp grew, as Kafka's LogSegment does. Next to the
segments, `partition.metadata` (`version: 0`, `topic_id: <base64 uuid>`) and
`leader-epoch-checkpoint`; in the log directory, the offset checkpoints
(`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
`replication-offset-checkpoint`) and `meta.properties`. Indexes are written trimmed to their
entries (as Kafka leaves them after a clean close), so Kafka's DumpLogSegments reads them.

`recover_segment` validates a segment's batches with the codec's reader and truncates the log at
the first one that is cut short or corrupt, then rebuilds both indexes, as Kafka recovers the
segments after the recovery point on a start without a CleanShutdownFile.
"""

from __future__ import annotations

import base64
import os
import struct
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kipwire.codec import DecodeError
from kipwire.codec.records import iter_batches

LOG, INDEX, TIME_INDEX = ".log", ".index", ".timeindex"
PARTITION_METADATA = "partition.metadata"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
META_PROPERTIES = "meta.properties"
#: Kafka's default index.interval.bytes (log.index.interval.bytes).
INDEX_INTERVAL_BYTES = 4096
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_CHECKPOINT_VERSION = 0


def segment_name(base_offset: int) -> str:
    """A segment's file stem: its base offset in 20 digits."""
    return f"{base_offset:020d}"


def partition_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>`, as Kafka names a partition's directory."""
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a partition directory's name, or None for any other name."""
    topic, sep, index = name.rpartition("-")
    if not sep or not topic or not index.isdigit():
        return None
    return topic, int(index)


def uuid_text(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_uuid(text: str) -> uuid.UUID:
    """The UUID of Kafka's base64 form."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


@dataclass(slots=True)
class SegmentIndexes:
    """A segment's offset and time index entries, built batch by batch as Kafka appends."""

    base_offset: int
    interval_bytes: int = INDEX_INTERVAL_BYTES
    offsets: list[tuple[int, int]] = field(default_factory=list)  # (relative offset, position)
    times: list[tuple[int, int]] = field(default_factory=list)  # (timestamp, relative offset)
    size: int = 0
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1
    _since_entry: int = 0

    def add(self, last_offset: int, max_timestamp: int, length: int) -> None:
        """A batch of `length` bytes appended at the end of the segment."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, last_offset
        if self._since_entry > self.interval_bytes:
            self.offsets.append((last_offset - self.base_offset, self.size))
            self._time_entry()
            self._since_entry = 0
        self.size += length
        self._since_entry += length

    def close(self) -> None:
        """The segment is no longer active: its largest timestamp gets a time index entry."""
        self._time_entry()

    def _time_entry(self) -> None:
        last = self.times[-1][0] if self.times else -1
        if self.max_timestamp > last:
            self.times.append((self.max_timestamp, self.offset_of_max_timestamp - self.base_offset))

    def index_bytes(self) -> bytes:
        """The `.index` file's content."""
        return b"".join(_INDEX_ENTRY.pack(*entry) for entry in self.offsets)

    def time_index_bytes(self) -> bytes:
        """The `.timeindex` file's content."""
        return b"".join(_TIME_ENTRY.pack(*entry) for entry in self.times)


def read_index(data: bytes) -> list[tuple[int, int]]:
    """The (relative offset, position) entries of an `.index` file (zero padding dropped)."""
    entries = [_INDEX_ENTRY.unpack_from(data, i) for i in range(0, len(data) - 7, 8)]
    # a preallocated index ends in zeros; only the first entry may be (0, 0)
    return [e for i, e in enumerate(entries) if i == 0 or e != (0, 0)]


def read_time_index(data: bytes) -> list[tuple[int, int]]:
    """The (timestamp, relative offset) entries of a `.timeindex` file."""
    entries = [_TIME_ENTRY.unpack_from(data, i) for i in range(0, len(data) - 11, 12)]
    return [e for e in entries if e != (0, 0)]


@dataclass(slots=True)
class SegmentBatch:
    """One batch read back from a segment: its offsets, timestamp and bytes."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


@dataclass(slots=True)
class Recovered:
    """What reading a segment found: its valid batches, and bytes cut off after them."""

    batches: list[SegmentBatch]
    truncated_bytes: int


def valid_batches(data: bytes) -> Recovered:
    """The batches of a `.log` up to the first cut short or corrupt one (CRC, lengths, magic)."""
    batches: list[SegmentBatch] = []
    good = 0
    try:
        for batch in iter_batches(data, verify_crc=True):
            if batch.truncated or batch.magic != 2:
                break
            raw = bytes(batch.raw)
            batches.append(
                SegmentBatch(batch.base_offset, batch.last_offset, batch.max_timestamp, raw)
            )
            good += len(raw)
    except DecodeError:
        pass
    return Recovered(batches, len(data) - good)


def _write(path: Path, data: bytes, *, sync: bool) -> None:
    """Replace a file's content through a temporary file, as Kafka writes its checkpoints."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(data)
        if sync:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)


class SegmentFile:
    """One segment on disk: its `.log` and indexes appended to, rewritten after a cut."""

    def __init__(self, directory: Path, base_offset: int, interval_bytes: int) -> None:
        self.base_offset = base_offset
        self.log_path = directory / (segment_name(base_offset) + LOG)
        self.index_path = self.log_path.with_suffix(INDEX)
        self.time_index_path = self.log_path.with_suffix(TIME_INDEX)
        self.indexes = SegmentIndexes(base_offset, interval_bytes)
        self.next_offset = base_offset
        self.positions: list[tuple[int, int]] = []  # (batch base offset, file position)
        # entries in the .index and .timeindex files; None until this object wrote them
        self._entries_written: tuple[int, int] | None = None

    @property
    def size(self) -> int:
        """The `.log`'s length in bytes."""
        return self.indexes.size

    def track(self, batch: SegmentBatch) -> None:
        """A batch that is in the `.log` (written or read back): its index entries."""
        self.positions.append((batch.base_offset, self.indexes.size))
        self.indexes.add(batch.last_offset, batch.max_timestamp, len(batch.data))
        self.next_offset = batch.last_offset + 1

    def append(self, batches: Iterable[SegmentBatch], *, sync: bool) -> None:
        """Append batches to the `.log` and rewrite the indexes (a new segment replaces a
        stale file of the same name)."""
        with open(self.log_path, "ab" if self.positions else "wb") as out:
            for batch in batches:
                out.write(batch.data)
                self.track(batch)
            if sync:
                out.flush()
                os.fsync(out.fileno())
        self._append_indexes(sync=sync)

    def _append_indexes(self, *, sync: bool) -> None:
        """Append the index entries made since the last write (entries are only ever added
        until a cut rebuilds them), so a flush costs what it adds, not the segment's size."""
        fresh = self._entries_written is None
        offsets, times = self._entries_written or (0, 0)
        for path, entries, done, entry in (
            (self.index_path, self.indexes.offsets, offsets, _INDEX_ENTRY),
            (self.time_index_path, self.indexes.times, times, _TIME_ENTRY),
        ):
            if len(entries) == done and not fresh:
                continue
            with open(path, "wb" if fresh else "ab") as out:
                out.write(b"".join(entry.pack(*e) for e in entries[done:]))
                if sync:
                    out.flush()
                    os.fsync(out.fileno())
        self._entries_written = (len(self.indexes.offsets), len(self.indexes.times))

    def write_indexes(self, *, sync: bool) -> None:
        """Write both index files anew from the entries tracked so far."""
        _write(self.index_path, self.indexes.index_bytes(), sync=sync)
        _write(self.time_index_path, self.indexes.time_index_bytes(), sync=sync)
        self._entries_written = (len(self.indexes.offsets), len(self.indexes.times))

    def close(self, *, sync: bool) -> None:
        """The segment rolled: its final time index entry."""
        self.indexes.close()
        self._append_indexes(sync=sync)

    def rewrite(self, batches: Iterable[SegmentBatch]) -> None:
        """Replace the `.log` with `batches` (compaction's), through a `.cleaned` file swapped
        in, as Kafka's cleaner does, and rebuild the indexes."""
        kept = list(batches)
        cleaned = self.log_path.with_suffix(LOG + ".cleaned")
        _write(cleaned, b"".join(b.data for b in kept), sync=True)
        os.replace(cleaned, self.log_path)
        self._rebuild(kept)
        self.write_indexes(sync=True)

    def truncate_to(self, offset: int) -> None:
        """Cut the `.log` before the first batch at or past `offset` and rebuild the indexes."""
        keep = [p for p in self.positions if p[0] < offset]
        cut = self.positions[len(keep)][1] if len(keep) < len(self.positions) else self.size
        with open(self.log_path, "r+b") as out:
            out.truncate(cut)
        data = self.log_path.read_bytes()
        self._rebuild(valid_batches(data).batches)
        self.write_indexes(sync=True)

    def _rebuild(self, batches: list[SegmentBatch]) -> None:
        self.indexes = SegmentIndexes(self.base_offset, self.indexes.interval_bytes)
        self.positions = []
        self.next_offset = self.base_offset
        for batch in batches:
            self.track(batch)

    def delete(self) -> None:
        """Remove the segment's three files."""
        for path in (self.log_path, self.index_path, self.time_index_path):
            path.unlink(missing_ok=True)


def recover_segment(segment: SegmentFile) -> Recovered:
    """Read a segment's `.log`, truncate it at the first bad batch, rebuild its indexes."""
    data = segment.log_path.read_bytes() if segment.log_path.exists() else b""
    found = valid_batches(data)
    if found.truncated_bytes:
        with open(segment.log_path, "r+b") as out:
            out.truncate(len(data) - found.truncated_bytes)
    segment._rebuild(found.batches)
    segment.write_indexes(sync=True)
    return found


def segment_bases(directory: Path) -> list[int]:
    """The base offsets of the segments in a partition directory, in order."""
    bases = []
    for path in directory.glob("*" + LOG):
        if path.stem.isdigit() and len(path.stem) == 20:
            bases.append(int(path.stem))
    return sorted(bases)


# -- small files -----------------------------------------------------------------------------


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    """`partition.metadata`: `version: 0` and the topic id in Kafka's base64 form."""
    text = f"version: 0\ntopic_id: {uuid_text(topic_id)}\n"
    _write(directory / PARTITION_METADATA, text.encode(), sync=True)


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    """The topic id of `partition.metadata`, or None without a readable one."""
    path = directory / PARTITION_METADATA
    if not path.is_file():
        return None
    fields = dict(line.split(": ", 1) for line in path.read_text().splitlines() if ": " in line)
    try:
        return parse_uuid(fields["topic_id"].strip())
    except (KeyError, ValueError):
        return None


def checkpoint_text(entries: Iterable[Iterable[object]]) -> str:
    """Kafka's CheckpointFile: version 0, the entry count, one space-separated entry a line."""
    lines = [" ".join(str(v) for v in entry) for entry in entries]
    return "\n".join([str(_CHECKPOINT_VERSION), str(len(lines)), *lines]) + "\n"


def read_checkpoint(path: Path) -> list[list[str]]:
    """A CheckpointFile's entries as fields; [] when missing, of another version or malformed."""
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()
    if len(lines) < 2 or lines[0].strip() != str(_CHECKPOINT_VERSION):
        return []
    try:
        count = int(lines[1])
    except ValueError:
        return []
    entries = [line.split() for line in lines[2 : 2 + count]]
    return entries if len(entries) == count else []


def write_leader_epochs(directory: Path, epochs: Iterable[tuple[int, int]]) -> None:
    """`leader-epoch-checkpoint`: (leader epoch, its start offset) entries."""
    _write(directory / LEADER_EPOCH_CHECKPOINT, checkpoint_text(epochs).encode(), sync=True)


def read_leader_epochs(directory: Path) -> list[tuple[int, int]]:
    """The (epoch, start offset) entries of `leader-epoch-checkpoint`."""
    return [(int(e), int(o)) for e, o in read_checkpoint(directory / LEADER_EPOCH_CHECKPOINT)]


def write_offsets_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    """An offset checkpoint of the log directory: `topic partition offset` per partition."""
    entries = [(t, p, o) for (t, p), o in sorted(offsets.items())]
    _write(path, checkpoint_text(entries).encode(), sync=True)


def read_offsets_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """The partitions and offsets of an offset checkpoint file."""
    out = {}
    for entry in read_checkpoint(path):
        if len(entry) == 3 and entry[1].isdigit():
            out[entry[0], int(entry[1])] = int(entry[2])
    return out


def write_meta_properties(
    directory: Path, node_id: int, cluster_id: str, directory_id: uuid.UUID
) -> None:
    """`meta.properties` as a KRaft node writes it (version 1)."""
    text = (
        "#\n"
        f"node.id={node_id}\n"
        f"directory.id={uuid_text(directory_id)}\n"
        "version=1\n"
        f"cluster.id={cluster_id}\n"
    )
    _write(directory / META_PROPERTIES, text.encode(), sync=True)


def read_meta_properties(directory: Path) -> dict[str, str]:
    """The properties of `meta.properties` ({} when there is none)."""
    path = directory / META_PROPERTIES
    if not path.is_file():
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines())
    return {p[0].strip(): p[1].strip() for p in pairs if len(p) == 2 and not p[0].startswith("#")}


def iter_segment_batches(
    directory: Path, interval_bytes: int = INDEX_INTERVAL_BYTES
) -> Iterator[tuple[SegmentFile, Recovered]]:
    """Each segment of a partition directory, recovered (bad tails cut, indexes rebuilt)."""
    for base in segment_bases(directory):
        segment = SegmentFile(directory, base, interval_bytes)
        yield segment, recover_segment(segment)
