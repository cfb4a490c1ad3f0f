"""A cluster's data directory (`log.dirs`, `serve --data-dir`): what a restart finds again.

Under each comma-separated entry: `broker-<id>/` per broker (one of its Kafka log
directories, `broker/log_dirs.py`; a replica's files are in the one `broker/replica_dirs.py`
names); under the first entry also `controller/__cluster_metadata-0/` (the controller's
metadata log as segment files, `controller/metadata_files.py`) and `group-offsets.json`
(committed offsets, `coordinators/offsets_file.py`; the mock keeps no `__consumer_offsets`
log).

At start the controller replays the metadata log found there (topics, configs, ACLs, the
brokers' last registrations) instead of writing a new cluster's bootstrap records, the groups
get their committed offsets back, and new producer ids start past those in the logs; each broker
loads its own logs when it is built. Open transactions and group members are not kept.

While running, the controller's records reach the disk as they are appended
(`ControllerNode.log_grew`) and the committed offsets once a second when they changed. A clean
end of the cluster flushes every running broker and writes its checkpoints and CleanShutdownFile;
a process killed instead keeps what was flushed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from .controller.metadata_files import MetadataLogFiles
from .coordinators import offsets_file

if TYPE_CHECKING:
    from .broker.state import BrokerState
    from .cluster import Cluster
    from .coordinators.consumer_groups import ConsumerGroupCoordinator
    from .coordinators.streams_groups import StreamsCoordinator
    from .coordinators.transactions import TransactionCoordinator

OFFSETS_FILE = "group-offsets.json"
#: How often changed committed offsets are written (Kafka commits them to a log at once).
OFFSETS_INTERVAL_S = 1.0


class DataDir:
    """The files of a cluster's `log.dirs`."""

    def __init__(self, log_dirs: str, offsets_file: str = OFFSETS_FILE) -> None:
        # the controller's log and the offsets live in the first entry, as Kafka's
        # metadata.log.dir defaults to the first of log.dirs
        #: Every `log.dirs` entry, as configured.
        self.entries = [Path(e.strip()) for e in log_dirs.split(",") if e.strip()]
        self.path = self.entries[0]
        self.metadata = MetadataLogFiles(str(self.path))
        #: The committed offsets' file under `path` (process mode: one per broker process).
        self.offsets_file = offsets_file
        self._saved_offsets: str | None = None

    def load(self, cluster: Cluster) -> bool:
        """Replay the last run's metadata log into the new cluster's controller, restore its
        committed offsets and producer ids; False for a new directory (nothing to replay)."""
        cluster.controller_node.metadata_files = self.metadata
        self.restore_offsets(cluster.consumer_groups, cluster.streams_groups)
        self.restore_producer_ids(cluster.transactions, cluster.nodes.values())
        framed = self.metadata.load()
        for data in framed:
            cluster.controller.append_bytes(data)
        return bool(framed)

    def restore_offsets(
        self, consumer: ConsumerGroupCoordinator, streams: StreamsCoordinator
    ) -> None:
        """Committed offsets of the last run back into the coordinators."""
        document = self.load_offsets()
        if document is not None:
            offsets_file.restore(document, consumer, streams)

    def load_offsets(self) -> dict[str, Any] | None:
        """The last run's committed offsets document; None when there is none to read."""
        path = self.path / self.offsets_file
        if not path.is_file():
            return None
        try:
            document = json.loads(path.read_text())
        except ValueError:
            return None  # a file cut short by a crash: the offsets are lost, as unflushed ones are
        self._saved_offsets = json.dumps(document, sort_keys=True)
        return document

    @staticmethod
    def restore_producer_ids(
        transactions: TransactionCoordinator, brokers: Iterable[BrokerState]
    ) -> None:
        """New producer ids start past every id the loaded logs hold, so a new producer's
        first sequence is never taken for a retry of an old producer's batch."""
        ids = [
            producer_id
            for broker in brokers
            for log in broker.logs.values()
            for producer_id, *_ in log.producers.active()
        ]
        if ids:
            transactions.skip_producer_ids_below(max(ids) + 1)

    def save_offsets(self, consumer: ConsumerGroupCoordinator, streams: StreamsCoordinator) -> None:
        """Write the committed offsets when they changed since the last write."""
        self.save_offsets_document(offsets_file.snapshot(consumer, streams))

    def save_offsets_document(self, document: dict[str, Any]) -> None:
        """Write an offsets document (`offsets_file`'s form) when it changed since the last."""
        text = json.dumps(document, sort_keys=True)
        if text == self._saved_offsets:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / (self.offsets_file + ".tmp")
        with open(tmp, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path / self.offsets_file)
        self._saved_offsets = text

    async def run(self, cluster: Cluster) -> None:
        """Write what changed, once a second, until cancelled."""
        while True:
            await trio.sleep(OFFSETS_INTERVAL_S)
            self.metadata.sync(cluster.controller)
            self.save_offsets(cluster.consumer_groups, cluster.streams_groups)

    def close(self, cluster: Cluster, running: Iterable[BrokerState]) -> None:
        """A clean end: the metadata log, the offsets, and a clean stop of the brokers that
        were running."""
        self.metadata.sync(cluster.controller)
        self.save_offsets(cluster.consumer_groups, cluster.streams_groups)
        for broker in running:
            broker.shut_down_cleanly()
