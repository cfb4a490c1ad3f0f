"""The `kafkacapture` PySpark data source: inputs planned into partitions, read as fragments.

One partition per input; a pcap file larger than `splitBytes` becomes one partition per packet
range after a quick `scan_index`. A partition yields segment fragments (`fragments`)
for the job to shuffle by connection key and decode (`fragment_decode`). Most inputs
need no shuffle at all: a whole input that is not part of a rotation set holds every packet of
its connections, so with the `out` option the reader decodes it where it reads it and writes its
rows as Parquet under `out` (`table_files.ParquetSink`), yielding no fragments. With `wholeSets`
(the job sets it with `out`) a rotation set of at most `splitBytes` is such a partition too, its
files read in rotation order: a task's worth of work, as a file of that size is.

    spark.dataSource.register(KafkaCaptureDataSource)
    frags = spark.read.format("kafkacapture").load(["/caps/2024-05-01"])
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..reading.inputs import CaptureFile, expand_inputs, file_size
from ..reading.pcap import CaptureFormatError, FileIssue, PacketRange, scan_index
from .schema import FRAGMENTS, spark_ddl

__all__ = [
    "DEFAULT_SPLIT_BYTES",
    "CapturePartition",
    "KafkaCaptureDataSource",
    "KafkaCaptureReader",
    "plan_partitions",
]

DEFAULT_SPLIT_BYTES = 64 << 20


class CapturePartition(InputPartition):
    """A whole input, or one packet range of a large pcap file (with the scan's leftover issues).

    `whole` marks a partition that holds every packet of its connections (a whole input that is
    not part of a rotation set, or every file of one: `members`, in rotation order): it can be
    decoded where it is read, with no shuffle.
    """

    def __init__(
        self,
        file: CaptureFile,
        packet_range: PacketRange | None = None,
        issues: Sequence[FileIssue] = (),
        *,
        index: int = 0,
        whole: bool = False,
        members: Sequence[CaptureFile] = (),
    ) -> None:
        super().__init__(file.name)
        self.file = file
        self.packet_range = packet_range
        self.issues = tuple(issues)
        self.index = index
        self.whole = whole
        self.members = tuple(members) or (file,)


def plan_partitions(
    files: Sequence[CaptureFile], split_bytes: int, *, whole_sets: bool = False
) -> list[CapturePartition]:
    """Partitions for `files`: whole small inputs, packet ranges of big pcap files.

    With `whole_sets`, a rotation set of at most `split_bytes` in all is one partition.
    """
    sets: dict[int, list[CaptureFile]] = {}
    for f in files:
        sets.setdefault(f.group, []).append(f)
    members = Counter({g: len(fs) for g, fs in sets.items()})
    parts: list[CapturePartition] = []
    done: set[int] = set()

    def add(f: CaptureFile, rng: PacketRange | None = None, issues: Sequence = ()) -> None:
        # a file alone in its rotation set, read whole, holds all of its connections
        whole = rng is None and members[f.group] == 1
        parts.append(CapturePartition(f, rng, issues, index=len(parts), whole=whole))

    for f in files:
        if f.group in done:
            continue
        group = sets[f.group]
        if whole_sets and len(group) > 1 and sum(map(_size, group)) <= split_bytes:
            done.add(f.group)
            parts.append(CapturePartition(f, index=len(parts), whole=True, members=group))
            continue
        if f.kind != "pcap" or file_size(f.path) <= split_bytes:
            add(f)
            continue
        try:
            index = scan_index(f.path)
        except (CaptureFormatError, OSError):
            add(f)  # the reader reports it as a malformed file
            continue
        ranges = index.split(split_bytes)
        # issues past the last whole packet are seen by no range reader: report them once
        leftover = [i for i in index.issues if i.offset >= index.data_end]
        if not ranges:
            add(f)
            continue
        for i, rng in enumerate(ranges):
            add(f, rng, leftover if i == len(ranges) - 1 else ())
    return parts


def _size(f: CaptureFile) -> int:
    """Bytes of an input, with its peer file (the other half of a tcpflow or frame-dump pair)."""
    return file_size(f.path) + (file_size(f.peer) if f.peer else 0)


class KafkaCaptureReader(DataSourceReader):
    """Plans partitions (inputs and packet ranges) and reads them into segment fragments.

    With the `out` option (a local folder) a partition that holds whole connections is decoded
    right here and written as Parquet part files under `out`: it yields no fragments at all, so
    only connections that may continue in another partition cross the JVM and the shuffle.
    """

    def __init__(self, options: dict[str, str]) -> None:
        # Spark hands the options over with their names lower-cased (`splitBytes` arrives as
        # `splitbytes`): look them up that way, or the split size and port hints are lost
        options = {k.lower(): v for k, v in options.items()}
        self.options = options
        self.split_bytes = int(options.get("splitbytes", DEFAULT_SPLIT_BYTES))
        self.out = options.get("out") or None
        self.capture = options.get("capture", "")
        self.broker_ports = tuple(json.loads(options.get("brokerports", "[]")))
        self.with_body_json = options.get("bodyjson", "true") == "true"
        self.whole_sets = options.get("wholesets", "false") == "true"
        if "files" in options:
            # the job passes names, paths, kinds and rotation order already resolved
            self.files = [CaptureFile(*f) for f in json.loads(options["files"])]
        else:
            paths = json.loads(options["paths"]) if "paths" in options else []
            if options.get("path"):
                paths.append(options["path"])
            self.files = expand_inputs(paths)

    def partitions(self) -> Sequence[InputPartition]:
        """One partition per input; a pcap file over `splitBytes` is cut into packet ranges."""
        return plan_partitions(self.files, self.split_bytes, whole_sets=self.whole_sets)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Yield Arrow batches of segment fragments for one partition (none if decoded here)."""
        assert isinstance(partition, CapturePartition)
        # the decode's modules (the codec and the whole pipeline) load here, in the task, not on
        # import: Spark unpickles this class in fresh Python workers only to ask for the schema
        # and the partitions, and each paid their import (seconds on a loaded machine)
        from .fragments import fragments_of

        if self.out is not None and partition.whole:
            self._decode(partition)
            return iter(())
        if len(partition.members) > 1:
            return (b for f in partition.members for b in fragments_of(f))
        return fragments_of(partition.file, partition.packet_range, partition.issues)

    def _decode(self, partition: CapturePartition) -> None:
        """Decode a partition of whole connections into Parquet part files under `out`."""
        from .fragment_decode import decode_file, decode_fragment_groups, fewer_collections
        from .table_files import ParquetSink

        assert self.out is not None
        sink = ParquetSink(self.out, f"r{partition.index:05d}")
        opts = {
            "capture": self.capture,
            "broker_ports": self.broker_ports,
            "with_body_json": self.with_body_json,
        }
        with fewer_collections():  # as the local engine decodes: no cycles among the rows
            if len(partition.members) > 1:
                decode_fragment_groups(partition.members, sink, **opts)  # closes the sink
                return
            decode_file(partition.file, sink, **opts)
        sink.close()


class KafkaCaptureDataSource(DataSource):
    """`spark.read.format("kafkacapture").load(paths)`: TCP segment fragments of captures.

    Options: `splitBytes` (default 64 MiB), or `files` (JSON [[name, path, ord, group, kind,
    peer], ...]) instead of paths; `wholeSets` "true" reads a rotation set of at most
    `splitBytes` as one partition. Decode the result with `fragment_decode.decode_fragments`
    after a shuffle by connection key (`spark_job.decode_dataframe` does it). With `out` (a
    local folder; and `capture`, `brokerPorts` as JSON, `bodyJson` "true"/"false") partitions of
    whole connections are decoded by the reader into Parquet under `out` and yield no rows.
    """

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "kafkacapture"

    def schema(self) -> str:
        """Schema of the fragment rows."""
        return spark_ddl(FRAGMENTS)

    def reader(self, schema: Any) -> DataSourceReader:
        """A reader for the configured inputs."""
        return KafkaCaptureReader(dict(self.options))
