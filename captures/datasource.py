"""The `kafkacapture` PySpark data source, and the per-connection decode step that follows it.

Design: the source reads capture files (one partition per file, a large file one partition per
packet range after a quick `scan_index`) and yields *segment fragments*: per TCP connection seen
in the partition, one row holding that partition's segments of it (timestamps, sequence
numbers, flags, payloads as Arrow lists). Rows carry the connection key (both endpoints, in a
direction-independent order), the file's rotation ordinal and the first packet's index, so after
a shuffle by connection key and a sort by (key, file_ord, first_index) every connection's segments
arrive at one task in capture order, whichever ranges or rotated files (tcpdump -C) they came
from. `decode_fragments` (run by `mapInArrow`) then reassembles, frames, decodes and pairs each
connection and emits the rows of all three tables in one union schema (`table` column), or,
given an output folder, writes them as Parquet part files itself (`ParquetSink`).
Problems with the file itself travel as fragment rows with `issue_*` set.

Most inputs need no shuffle at all: a whole file that is not part of a rotation set holds every
packet of its connections, so with the `out` option the reader decodes it where it reads it
(`decode_file`) and yields no fragments.

    spark.dataSource.register(KafkaCaptureDataSource)
    frags = spark.read.format("kafkacapture").load(["/caps/2024-05-01"])
"""

from __future__ import annotations

import json
import os
import re
import struct
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .packets import TcpSegment, parse_tcp
from .pcap import (
    PCAP_MAGIC_NS,
    PCAP_MAGIC_US,
    PCAPNG_SHB,
    CaptureFormatError,
    FileIssue,
    PacketRange,
    PacketReader,
    scan_index,
)
from .pipeline import issue_row, rows_for_connections
from .reassembly import TcpReassembler
from .schema import TABLES, TIMESTAMP_COLUMNS, to_table

__all__ = [
    "DEFAULT_SPLIT_BYTES",
    "FRAGMENTS",
    "FRAGMENT_DDL",
    "STATS",
    "UNION",
    "CaptureFile",
    "CapturePartition",
    "KafkaCaptureDataSource",
    "ParquetSink",
    "decode_file",
    "decode_fragments",
    "expand_inputs",
    "fragments_of",
    "natural_key",
]

DEFAULT_SPLIT_BYTES = 64 << 20
# A fragment is closed at this many payload bytes or segments, so no Spark row grows huge
_FRAG_BYTES = 4 << 20
_FRAG_SEGS = 20_000
_BATCH_BYTES = 8 << 20  # Arrow batch size the reader aims for
_OUT_ROWS = 4096  # rows per output batch of the decode step

_CAPTURE_SUFFIX = re.compile(r"\.(pcap|pcapng|cap|dmp)\d*$", re.IGNORECASE)
_MAGICS = {
    struct.pack(endian + "I", magic)
    for endian in "<>"
    for magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS, PCAPNG_SHB)
}

FRAGMENTS = pa.schema(
    [
        ("group", pa.int32()),
        ("a_ip", pa.binary()),
        ("a_port", pa.int32()),
        ("b_ip", pa.binary()),
        ("b_port", pa.int32()),
        ("file", pa.string()),
        ("file_ord", pa.int32()),
        ("first_index", pa.int64()),
        ("ts", pa.list_(pa.int64())),
        ("seq", pa.list_(pa.int64())),
        ("ack", pa.list_(pa.int64())),
        ("flags", pa.list_(pa.int16())),
        ("wire_len", pa.list_(pa.int32())),
        ("from_a", pa.list_(pa.bool_())),
        ("payload", pa.list_(pa.binary())),
        ("issue_status", pa.string()),
        ("issue_offset", pa.int64()),
        ("issue_length", pa.int64()),
        ("issue_message", pa.string()),
    ]
)
FRAGMENT_DDL = (
    "group int, a_ip binary, a_port int, b_ip binary, b_port int, file string, file_ord int, "
    "first_index bigint, ts array<bigint>, seq array<bigint>, ack array<bigint>, "
    "flags array<smallint>, wire_len array<int>, from_a array<boolean>, payload array<binary>, "
    "issue_status string, issue_offset bigint, issue_length bigint, issue_message string"
)


def _union_schema() -> pa.Schema:
    """All columns of the three tables once (timestamps as int64 microseconds), plus `table`."""
    fields: dict[str, pa.Field] = {"table": pa.field("table", pa.string())}
    for schema in TABLES.values():
        for f in schema:
            typ = pa.int64() if pa.types.is_timestamp(f.type) else f.type
            prior = fields.get(f.name)
            if prior is not None and prior.type != typ:
                raise TypeError(f"column {f.name} has two types in the table schemas")
            fields.setdefault(f.name, pa.field(f.name, typ))
    return pa.schema(list(fields.values()))


UNION = _union_schema()


@dataclass(frozen=True, slots=True)
class CaptureFile:
    """One input file: the name as given (goes to the `file` column) and where to open it."""

    name: str
    path: str
    ord: int  # rotation order among all inputs (natural sort: cap, cap1, cap2, ..., cap10)
    group: int = 0  # rotation set: a connection is followed across the files of one set only


class CapturePartition(InputPartition):
    """A whole file, or one packet range of a large file (with the scan's leftover issues).

    `whole` marks a partition that holds every packet of its connections (a whole file that is
    not part of a rotation set): it can be decoded where it is read, with no shuffle.
    """

    def __init__(
        self,
        file: CaptureFile,
        packet_range: PacketRange | None = None,
        issues: Sequence[FileIssue] = (),
        *,
        index: int = 0,
        whole: bool = False,
    ) -> None:
        super().__init__(file.name)
        self.file = file
        self.packet_range = packet_range
        self.issues = tuple(issues)
        self.index = index
        self.whole = whole


def natural_key(path: str) -> tuple:
    """Sort key that orders tcpdump -C names as written: cap, cap1, cap2, ..., cap10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path))


def _looks_like_capture(path: Path) -> bool:
    """A capture by its name (also rotated names such as `x.pcap12`) or by its magic number."""
    if _CAPTURE_SUFFIX.search(path.name):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) in _MAGICS
    except OSError:
        return False


def expand_inputs(inputs: Iterable[str]) -> list[CaptureFile]:
    """Local files as given, and capture files found recursively in folders, in rotation order."""
    names: list[tuple[str, str]] = []
    for given in inputs:
        local = _local_path(given)
        p = Path(local)
        if p.is_dir():
            found = [q for q in sorted(p.rglob("*")) if q.is_file() and _looks_like_capture(q)]
            names.extend((os.path.join(given, str(q.relative_to(p))), str(q)) for q in found)
        else:
            # a file named explicitly is read even when it does not look like a capture: its
            # problems become rows, never a silent skip
            names.append((given, local))
    names.sort(key=lambda n: natural_key(n[0]))
    groups: dict[tuple[str, str], int] = {}
    return [
        CaptureFile(name, path, i, groups.setdefault(rotation_set(name), len(groups)))
        for i, (name, path) in enumerate(names)
    ]


def rotation_set(name: str) -> tuple[str, str]:
    """Files of one rotated capture share folder and name once digits are removed.

    tcpdump -C writes cap, cap1, cap2 ...; -W numbers them cap0, cap1 ...; -G puts the time in
    the name. Separate captures in one folder (other names) never merge their connections,
    even when a 4-tuple repeats.
    """
    head, tail = os.path.split(name)
    # trailing counter (-C/-W), and long digit runs (timestamps of -G or dumpcap ring buffers);
    # short numbers in a name (v7, 01-) tell separate captures apart
    return head, re.sub(r"\d{5,}", "#", re.sub(r"\d+$", "", tail))


def _local_path(given: str) -> str:
    return given[len("file://") :] if given.startswith("file://") else given


def is_remote(path: str) -> bool:
    """True for URIs (hdfs://, s3a://, ...) that only Spark/Hadoop can open."""
    return "://" in path and not path.startswith("file://")


# --- reading: files to segment fragments -------------------------------------------------


class _Frag:
    __slots__ = (
        "a",
        "b",
        "first_index",
        "ts",
        "seq",
        "ack",
        "flags",
        "wire",
        "from_a",
        "pay",
        "nbytes",
    )

    def __init__(self, a: tuple[bytes, int], b: tuple[bytes, int], first_index: int) -> None:
        self.a, self.b, self.first_index = a, b, first_index
        self.ts: list[int] = []
        self.seq: list[int] = []
        self.ack: list[int] = []
        self.flags: list[int] = []
        self.wire: list[int] = []
        self.from_a: list[bool] = []
        self.pay: list[bytes] = []
        self.nbytes = 0


def _batch(frags: list[_Frag], issues: Sequence[FileIssue], file: CaptureFile) -> pa.RecordBatch:
    n = len(frags) + len(issues)
    none = [None] * len(issues)
    cols: dict[str, list[Any]] = {
        "group": [file.group] * n,
        "a_ip": [f.a[0] for f in frags] + none,
        "a_port": [f.a[1] for f in frags] + none,
        "b_ip": [f.b[0] for f in frags] + none,
        "b_port": [f.b[1] for f in frags] + none,
        "file": [file.name] * n,
        "file_ord": [file.ord] * n,
        "first_index": [f.first_index for f in frags] + [i.offset for i in issues],
        "ts": [f.ts for f in frags] + none,
        "seq": [f.seq for f in frags] + none,
        "ack": [f.ack for f in frags] + none,
        "flags": [f.flags for f in frags] + none,
        "wire_len": [f.wire for f in frags] + none,
        "from_a": [f.from_a for f in frags] + none,
        "payload": [f.pay for f in frags] + none,
        "issue_status": [None] * len(frags) + [i.status for i in issues],
        "issue_offset": [None] * len(frags) + [i.offset for i in issues],
        "issue_length": [None] * len(frags) + [i.length for i in issues],
        "issue_message": [None] * len(frags) + [i.message for i in issues],
    }
    return pa.RecordBatch.from_pydict(cols, schema=FRAGMENTS)


def fragments_of(
    source: str | bytes | memoryview,
    file: CaptureFile,
    packet_range: PacketRange | None = None,
    extra_issues: Sequence[FileIssue] = (),
) -> Iterator[pa.RecordBatch]:
    """Segment fragments (Arrow batches of `FRAGMENTS`) of one file or packet range of it."""
    try:
        reader = PacketReader(source, packet_range=packet_range)
    except (CaptureFormatError, OSError) as exc:
        size = len(source) if not isinstance(source, str) else _size(source)
        yield _batch([], [FileIssue(0, "malformed", size, f"not readable: {exc}")], file)
        return
    open_: dict[tuple, _Frag] = {}
    done: list[_Frag] = []
    done_bytes = 0
    for pkt in reader:
        seg = parse_tcp(pkt.linktype, pkt.data)
        if type(seg) is str:
            continue  # not TCP: carries no Kafka bytes
        src, dst = (seg.src, seg.sport), (seg.dst, seg.dport)
        from_a = src <= dst
        key = (src, dst) if from_a else (dst, src)
        frag = open_.get(key)
        if frag is None:
            frag = open_[key] = _Frag(key[0], key[1], pkt.index)
        payload = bytes(seg.payload)
        frag.ts.append(pkt.ts_ns)
        frag.seq.append(seg.seq)
        frag.ack.append(seg.ack)
        frag.flags.append(seg.flags)
        frag.wire.append(seg.wire_len)
        frag.from_a.append(from_a)
        frag.pay.append(payload)
        frag.nbytes += len(payload)
        if len(frag.pay) >= _FRAG_SEGS or frag.nbytes >= _FRAG_BYTES:
            # closed early so rows stay small; the next fragment of this key sorts after it
            done.append(open_.pop(key))
            done_bytes += frag.nbytes
            if done_bytes >= _BATCH_BYTES:
                yield _batch(done, (), file)
                done, done_bytes = [], 0
    done.extend(sorted(open_.values(), key=lambda f: f.first_index))
    issues = list(reader.issues) + list(extra_issues)
    if done or issues:
        yield _batch(done, issues, file)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


class KafkaCaptureReader(DataSourceReader):
    """Plans partitions (files and packet ranges) and reads them into segment fragments.

    With the `out` option (a local folder) a partition that holds whole connections is decoded
    right here and written as Parquet part files under `out`: it yields no fragments at all, so
    only connections that may continue in another partition cross the JVM and the shuffle.
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.split_bytes = int(options.get("splitBytes", DEFAULT_SPLIT_BYTES))
        self.out = options.get("out") or None
        self.capture = options.get("capture", "")
        self.broker_ports = tuple(json.loads(options.get("brokerPorts", "[]")))
        self.with_body_json = options.get("bodyJson", "true") == "true"
        if "files" in options:
            # the job passes names, paths and rotation order already resolved
            self.files = [CaptureFile(*f) for f in json.loads(options["files"])]
        else:
            paths = json.loads(options["paths"]) if "paths" in options else []
            if options.get("path"):
                paths.append(options["path"])
            self.files = expand_inputs(paths)

    def partitions(self) -> Sequence[InputPartition]:
        """One partition per file; a file over `splitBytes` is cut into packet ranges."""
        return plan_partitions(self.files, self.split_bytes)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Yield Arrow batches of segment fragments for one partition (none if decoded here)."""
        assert isinstance(partition, CapturePartition)
        if self.out is not None and partition.whole:
            sink = ParquetSink(self.out, f"r{partition.index:05d}")
            decode_file(
                partition.file,
                sink,
                capture=self.capture,
                broker_ports=self.broker_ports,
                with_body_json=self.with_body_json,
            )
            sink.close()
            return iter(())
        return fragments_of(
            partition.file.path, partition.file, partition.packet_range, partition.issues
        )


def plan_partitions(files: Sequence[CaptureFile], split_bytes: int) -> list[CapturePartition]:
    """Partitions for `files`: whole small files, packet ranges of big ones."""
    members = Counter(f.group for f in files)
    parts: list[CapturePartition] = []

    def add(f: CaptureFile, rng: PacketRange | None = None, issues: Sequence = ()) -> None:
        # a file alone in its rotation set, read whole, holds all of its connections
        whole = rng is None and members[f.group] == 1
        parts.append(CapturePartition(f, rng, issues, index=len(parts), whole=whole))

    for f in files:
        if _size(f.path) <= split_bytes:
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


class KafkaCaptureDataSource(DataSource):
    """`spark.read.format("kafkacapture").load(paths)`: TCP segment fragments of captures.

    Options: `splitBytes` (default 64 MiB), or `files` (JSON [[name, path, ord], ...]) instead of
    paths. Decode the result with `decode_fragments` after a shuffle by connection key
    (`captures.job.decode_dataframe` does it). With `out` (a local folder; and `capture`,
    `brokerPorts` as JSON, `bodyJson` "true"/"false") partitions of whole connections are
    decoded by the reader into Parquet under `out` and yield no rows.
    """

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "kafkacapture"

    def schema(self) -> str:
        """Schema of the fragment rows."""
        return FRAGMENT_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        """A reader for the configured inputs."""
        return KafkaCaptureReader(dict(self.options))


# --- decoding: fragments (sorted by key) to table rows --------------------------------------


class _Out:
    """Buffers rows of the three tables and turns them into union-schema Arrow batches."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict]] = {name: [] for name in TABLES}
        self.count = 0

    def add(self, table: str, rows: list[dict]) -> None:
        self.rows[table].extend(rows)
        self.count += len(rows)

    def batch(self) -> pa.RecordBatch:
        parts = []
        for name, rows in self.rows.items():
            if not rows:
                continue
            cols = {"table": [name] * len(rows)}
            names = set(TABLES[name].names)
            for f in UNION:
                if f.name == "table":
                    continue
                if f.name not in names:
                    cols[f.name] = [None] * len(rows)
                elif f.name in TIMESTAMP_COLUMNS:
                    cols[f.name] = [
                        None if r.get(f.name) is None else r[f.name] // 1000 for r in rows
                    ]
                else:
                    cols[f.name] = [r.get(f.name) for r in rows]
            parts.append(pa.Table.from_pydict(cols, schema=UNION))
        self.rows = {name: [] for name in TABLES}
        self.count = 0
        return pa.concat_tables(parts).combine_chunks().to_batches()[0]


STATS = pa.schema([("table", pa.string()), ("rows", pa.int64())])
STATS_DDL = "table string, rows bigint"


class ParquetSink:
    """Writes rows of the three tables straight to Parquet part files under `out/<table>/`.

    Decoded rows never cross into the JVM: that conversion, a cache and three filtered writes
    cost more than the decode itself. A part file is written under a dot name (which Spark and
    pyarrow skip) and renamed when complete, and its name depends only on `tag` (the partition),
    so a retried or speculative task attempt replaces it instead of adding a duplicate.
    """

    def __init__(self, out: str, tag: str) -> None:
        self.out = out
        self.tag = tag
        self.rows: dict[str, list[dict]] = {name: [] for name in TABLES}
        self.count = 0
        self.written = dict.fromkeys(TABLES, 0)
        self.writers: dict[str, tuple[pq.ParquetWriter, str, str]] = {}

    def add(self, table: str, rows: list[dict]) -> None:
        """Buffer rows of `table`; written once `_OUT_ROWS` rows are waiting."""
        self.rows[table].extend(rows)
        self.count += len(rows)
        if self.count >= _OUT_ROWS:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one row group per table."""
        for name, rows in self.rows.items():
            if not rows:
                continue
            if name not in self.writers:
                folder = os.path.join(self.out, name)
                os.makedirs(folder, exist_ok=True)
                final = os.path.join(folder, f"part-{self.tag}.parquet")
                tmp = os.path.join(folder, f".tmp-part-{self.tag}-{os.getpid()}.parquet")
                self.writers[name] = (pq.ParquetWriter(tmp, TABLES[name]), tmp, final)
            self.writers[name][0].write_table(to_table(rows, TABLES[name]))
            self.written[name] += len(rows)
        self.rows = {name: [] for name in TABLES}
        self.count = 0

    def close(self) -> dict[str, int]:
        """Write what is left, publish the part files; rows written per table."""
        self.flush()
        for writer, tmp, final in self.writers.values():
            writer.close()
            os.replace(tmp, final)
        self.writers = {}
        return self.written

    def stats(self) -> pa.RecordBatch:
        """Rows written per table, as a `STATS` batch."""
        return pa.RecordBatch.from_pydict(
            {"table": list(self.written), "rows": list(self.written.values())}, schema=STATS
        )


def decode_file(
    file: CaptureFile,
    sink: Any,
    *,
    capture: str,
    broker_ports: Iterable[int] = (),
    with_body_json: bool = True,
) -> None:
    """Decode one whole capture file into `sink`, the same rows as `pipeline.decode_capture`."""
    from .pairing import load_codec
    from .pipeline import decode_capture

    try:
        rows = decode_capture(
            file.path,
            capture=capture,
            file=file.name,
            broker_ports=broker_ports,
            decoder=load_codec(),
            with_body_json=with_body_json,
        )
    except (CaptureFormatError, OSError) as exc:
        issue = FileIssue(0, "malformed", _size(file.path), f"not readable: {exc}")
        sink.add("pdus", [issue_row(capture, file.name, issue)])
        return
    sink.add("pdus", rows.pdus)
    sink.add("pairs", rows.pairs)
    sink.add("connections", rows.connections)


class _Decoder:
    """Feeds fragments to a reassembler and decodes the connections into rows."""

    def __init__(self, capture: str, broker_ports: Iterable[int], with_body_json: bool) -> None:
        self.capture = capture
        self.broker_ports = tuple(broker_ports)
        self.with_body_json = with_body_json
        self.reasm = TcpReassembler(self.broker_ports)
        # connection key -> ([first ts of each fragment], [its file]), in replay order
        self.files: dict[tuple, tuple[list[int], list[str]]] = {}

    def feed(self, a: tuple[bytes, int], b: tuple[bytes, int], file: str, cols: dict) -> None:
        ts = cols["ts"]
        if not ts:
            return
        stamps, names = self.files.setdefault((a, b), ([], []))
        if not names or names[-1] != file:
            stamps.append(ts[0])
            names.append(file)
        add = self.reasm.add
        for t, seq, ack, flags, wire, fa, pay in zip(
            ts,
            cols["seq"],
            cols["ack"],
            cols["flags"],
            cols["wire_len"],
            cols["from_a"],
            cols["payload"],
            strict=True,
        ):
            src, dst = (a, b) if fa else (b, a)
            add(t, TcpSegment(src[0], src[1], dst[0], dst[1], seq, ack, flags, pay, wire))

    def flush(self, out: Any, decoder: Any) -> None:
        conns = self.reasm.finish()
        for conn in conns:
            ends = sorted((conn.client, conn.server))
            stamps, names = self.files.get((ends[0], ends[1]), ([], [""]))
            rows = rows_for_connections(
                [conn],
                capture=self.capture,
                file=names[0],
                decoder=decoder,
                with_body_json=self.with_body_json,
            )
            if len(names) > 1:
                # a connection spanning rotated files: each row names the file holding its start
                def file_at(ts: int | None, stamps: list[int] = stamps, names=names) -> str:
                    if ts is None:
                        return names[0]
                    return names[max(bisect_right(stamps, ts) - 1, 0)]

                for r in rows.pdus:
                    r["file"] = file_at(r["ts"])
                for r in rows.pairs:
                    r["file"] = file_at(r["request_ts"] or r["response_ts"])
            out.add("pdus", rows.pdus)
            out.add("pairs", rows.pairs)
            out.add("connections", rows.connections)
        self.files = {}


def decode_fragments(
    batches: Iterable[pa.RecordBatch],
    *,
    capture: str,
    broker_ports: Iterable[int] = (),
    with_body_json: bool = True,
    keys_sorted: bool = True,
    out_dir: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: fragments to union rows of the three tables.

    With `keys_sorted` (after the shuffle and sort) each connection is decoded as soon as its
    key ends, so memory holds one connection at a time; otherwise all at the end. With
    `out_dir` the rows go to Parquet part files there (`ParquetSink`) and the only batch
    yielded is the `STATS` of what was written.
    """
    from .pairing import load_codec

    codec = load_codec()
    state = _Decoder(capture, broker_ports, with_body_json)
    sink = None
    if out_dir is not None:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        sink = ParquetSink(out_dir, f"s{ctx.partitionId() if ctx else 0:05d}")
    out: Any = sink if sink is not None else _Out()
    current: tuple | None = None
    for batch in batches:
        cols = batch.to_pydict()
        for i in range(batch.num_rows):
            status = cols["issue_status"][i]
            if status is not None:
                issue = FileIssue(
                    cols["issue_offset"][i],
                    status,
                    cols["issue_length"][i],
                    cols["issue_message"][i],
                )
                out.add("pdus", [issue_row(capture, cols["file"][i], issue)])
                continue
            a = (cols["a_ip"][i], cols["a_port"][i])
            b = (cols["b_ip"][i], cols["b_port"][i])
            group = cols["group"][i]
            if current is not None and group != current[0]:
                state.flush(out, codec)  # another rotation set: its connections are apart
            elif keys_sorted and current is not None and (a, b) != current[1]:
                state.flush(out, codec)
            current = (group, (a, b))
            row = {k: cols[k][i] for k in ("ts", "seq", "ack", "flags", "wire_len", "from_a")}
            row["payload"] = cols["payload"][i]
            state.feed(a, b, cols["file"][i], row)
            if sink is None and out.count >= _OUT_ROWS:
                yield out.batch()
    state.flush(out, codec)
    if sink is not None:
        sink.close()
        yield sink.stats()
    elif out.count:
        yield out.batch()
