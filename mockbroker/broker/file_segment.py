"""The file back end of a log segment: a `Segment` whose flushed batches are in Kafka's files.

The batches stay in memory (reads and the log's bookkeeping use them); the segment's `.log`,
`.index` and `.timeindex` (`segment_files.SegmentFile`) get them when the log flushes, so an
unclean stop loses exactly what was not flushed. A truncation cuts the file too, a compaction
rewrites it, retention deletes it; DeleteRecords' `drop_before` leaves the file whole until the
segment goes, as Kafka keeps a segment's bytes below the log start offset.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .segment import Segment, StoredBatch
from .segment_files import INDEX_INTERVAL_BYTES, SegmentBatch, SegmentFile


def _on_disk(batch: StoredBatch) -> SegmentBatch:
    return SegmentBatch(batch.base_offset, batch.last_offset, batch.max_timestamp, batch.data)


class FileSegment(Segment):
    """A segment mirrored into its files on each flush."""

    def __init__(
        self, base_offset: int, created_ms: int, files: dict[int, SegmentFile], file: SegmentFile
    ) -> None:
        super().__init__(base_offset, created_ms)
        self.files = files
        self.file = file

    def flush(self) -> None:
        """Write and fsync the batches the file does not have yet."""
        super().flush()
        written = self.file.next_offset if self.file.positions else -1
        new: list[StoredBatch] = []
        for batch in reversed(self.batches):
            if batch.last_offset < written:
                break
            new.append(batch)
        if new:
            self.file.append([_on_disk(b) for b in reversed(new)], sync=True)

    def truncate_to(self, offset: int) -> None:
        """Drop the batches at or past `offset` in memory and in the file."""
        super().truncate_to(offset)
        if self.file.positions and self.file.next_offset > offset:
            self.file.truncate_to(offset)

    def replace(self, batches: Iterable[StoredBatch]) -> None:
        """Compaction's batches: the file keeps those it had, rewritten."""
        kept = list(batches)
        written = self.file.next_offset if self.file.positions else -1
        super().replace(kept)
        if self.file.positions:
            self.file.rewrite(_on_disk(b) for b in kept if b.last_offset < written)

    def delete(self) -> None:
        """Retention or truncation removed the segment: its files go."""
        super().delete()
        self.file.delete()
        if self.files.get(self.base_offset) is self.file:
            del self.files[self.base_offset]


class PartitionFiles:
    """A log's partition directory and the segment files in it, by base offset: each new
    segment gets its file here, and a segment made again at a base offset (the log's first,
    made once more as it loads) takes the same file, until the segment is deleted."""

    def __init__(self, directory: Path, files: dict[int, SegmentFile]) -> None:
        self.directory = directory
        self.files = files

    def factory(self, base_offset: int, created_ms: int) -> Segment:
        """The log's segment factory (`PartitionLog(new_segment=...)`)."""
        file = self.files.get(base_offset)
        if file is None:
            file = SegmentFile(self.directory, base_offset, INDEX_INTERVAL_BYTES)
            self.files[base_offset] = file
        return FileSegment(base_offset, created_ms, self.files, file)

    def relocate(self, directory: Path) -> None:
        """The directory moved (its files copied there): new segments and every file's writes
        go to the new place."""
        self.directory = directory
        for file in self.files.values():
            file.log_path = directory / file.log_path.name
            file.index_path = directory / file.index_path.name
            file.time_index_path = directory / file.time_index_path.name
