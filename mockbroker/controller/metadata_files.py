"""The controller's metadata log on disk: `<log.dirs>/controller/__cluster_metadata-0/`.

The log's records are written as Kafka's KRaft controller stores them: record batches (in the
broker log's segment format, `broker/segment_files.py`) whose record values are the framed
metadata records. `sync` appends what the log gained since the last call, fsynced; `load` reads
them back (each segment recovered: a cut or corrupt tail is dropped) for the controller to
replay at start, so the state is the replay of the log from empty, as it always is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from kipwire.codec.records import build_batch, iter_batches

from ..broker.log_dirs import PartitionStore
from ..broker.segment_files import SegmentBatch, partition_dir_name
from .metadata_log import METADATA_TOPIC, LogEntry

#: Where under log.dirs the controller keeps its log (a KRaft node's metadata.log.dir).
CONTROLLER_DIR = "controller"
# The mock's single controller is the quorum's leader from its first epoch on.
_LEADER_EPOCH = 1
# Records per batch: Kafka bounds a metadata batch the same way (max 10,000 records).
_BATCH_RECORDS = 10_000


class MetadataLog(Protocol):
    """What is written of the controller: its log's entries from an offset."""

    def records_since(self, offset: int) -> list[LogEntry]:
        """Log entries from `offset` on."""
        ...


class MetadataLogFiles:
    """The controller's metadata log partition directory."""

    def __init__(self, base: str) -> None:
        directory = Path(base) / CONTROLLER_DIR / partition_dir_name(METADATA_TOPIC, 0)
        self.store = PartitionStore(directory)

    @property
    def directory(self) -> Path:
        """The `__cluster_metadata-0` directory."""
        return self.store.directory

    def load(self) -> list[bytes]:
        """The framed records on disk, in offset order (empty for a new directory)."""
        framed: list[bytes] = []
        for stored in self.store.load():
            for batch in iter_batches(stored.data, verify_crc=False):
                framed.extend(bytes(r.value) for r in batch.records if r.value is not None)
        return framed

    def sync(self, controller: MetadataLog) -> None:
        """Append the records the controller's log gained since the last sync, fsynced."""
        start = self.store.end_offset
        entries = controller.records_since(start)
        batches = []
        for at in range(0, len(entries), _BATCH_RECORDS):
            chunk = entries[at : at + _BATCH_RECORDS]
            data = build_batch(
                [{"key": None, "value": e.data, "headers": []} for e in chunk],
                base_offset=chunk[0].offset,
                partition_leader_epoch=_LEADER_EPOCH,
            )
            batches.extend(iter_batches(data, verify_crc=False))
        self.store.write(
            SegmentBatch(b.base_offset, b.last_offset, b.max_timestamp, bytes(b.raw))
            for b in batches
        )
