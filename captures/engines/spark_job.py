"""The PySpark decode job: inputs in, Parquet tables `pdus`, `pairs`, `connections` out.

Local inputs are read by the `kafkacapture` data source (split by input and packet range); URIs
such as hdfs:// or s3a:// through Spark's `binaryFile` source (any kind, told by name and
content), so the same job runs on a cluster. Both give segment fragments, which are shuffled by
connection key, sorted into capture order, and decoded per connection by
`captures.engines.fragment_decode` in `mapInArrow`.

For a local output folder (the default writer, "arrow") the job is one Spark pass: the reader
decodes whole inputs itself (and whole rotation sets within the task split size: then there is
no shuffle and no decode stage at all), the decode tasks write their rows as Parquet part
files, and only a few counts come back to the JVM; the summary is read from the written files.
Outputs only Spark can write (hdfs://, s3a://) go through Spark's writer (writer "spark").

Workers import kipwire as installed on them, or from `--py-files` (a wheel or a zip of the
`kipwire/` tree, see README): nothing here puts a source folder on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..reading.inputs import (
    CaptureFile,
    expand_inputs,
    file_size,
    input_label,
    input_set,
    is_remote,
    kind_of_bytes,
    local_path,
    natural_key,
)
from .balance import plan_tasks, salts
from .fragment_decode import decode_fragments
from .fragments import fragments_of
from .schema import FRAGMENTS, STATS, TABLES, UNION, spark_ddl
from .spark_datasource import DEFAULT_SPLIT_BYTES, plan_partitions
from .spark_session import connect_session, session, task_slots
from .table_files import ParquetSink, finish_tables, prepare_tables, summary_dict, summary_of_tables

__all__ = [
    "MAX_CONNECTIONS",
    "MIN_SPLIT_BYTES",
    "Fragments",
    "balance_connections",
    "capture_label",
    "connect_session",
    "decode_dataframe",
    "fragments_dataframe",
    "remote_fragments",
    "run_decode",
    "session",
    "task_split_bytes",
]

_KEY = ("group", "a_ip", "a_port", "b_ip", "b_port")
MIN_SPLIT_BYTES = 4 << 20
_CONNECT_MARKS = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")
# connections whose sizes the driver collects to plan the decode tasks; past it, keys are hashed
MAX_CONNECTIONS = 100_000


def capture_label(inputs: Sequence[str], name: str | None = None) -> str:
    """`name`, else the name of the first input as given (a file's or a folder's own name)."""
    return name or input_label(inputs[0])


def remote_fragments(
    batches: Iterable[pa.RecordBatch], ords: dict[str, int], groups: dict[str, int]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over `binaryFile` rows (path, modificationTime, content): whole files.

    Each file's kind comes from its bytes and name (`inputs.kind_of_bytes`); a tcpflow file is
    one direction, which meets the other in the shuffle by connection.
    """
    for batch in batches:
        mtimes = pc.cast(batch.column("modificationTime"), pa.int64()).to_pylist()
        for path, mtime_us, content in zip(
            batch.column("path").to_pylist(),
            mtimes,
            batch.column("content").to_pylist(),
            strict=True,
        ):
            kind = kind_of_bytes(path, content)
            f = CaptureFile(path, path, ords.get(path, 0), groups.get(path, 0), kind)
            yield from fragments_of(f, content=content, mtime=(mtime_us or 0) * 1000)


class Fragments(NamedTuple):
    """The fragment rows of all inputs, with how they were planned."""

    frame: DataFrame
    partitions: int  # read partitions (files and packet ranges)
    shuffled: int  # of them, those whose fragments must meet others after a shuffle


def task_split_bytes(files: Sequence[CaptureFile], split_bytes: int, slots: int) -> int:
    """`split_bytes`, lowered so the pcap inputs give at least two packet ranges per task slot.

    A whole input is decoded by one task: one large file alone would keep every other slot
    idle. Cut into packet ranges, its connections meet again after the shuffle and are decoded
    side by side (`balance_connections`). Never below `MIN_SPLIT_BYTES`: a range costs a task.
    With one slot there is no other slot to keep busy: `split_bytes` stays.
    """
    if slots <= 1:
        return split_bytes
    total = sum(file_size(f.path) for f in files if f.kind == "pcap")
    return min(split_bytes, max(MIN_SPLIT_BYTES, -(-total // (2 * max(slots, 1)))))


def fragments_dataframe(
    spark: SparkSession,
    inputs: Sequence[str],
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    decode_into: dict[str, str] | None = None,
    fmt: str | None = None,
    pairs: Sequence[Sequence[str]] = (),
) -> Fragments:
    """Segment fragments of all inputs.

    `decode_into` (the reader options `out`, `capture`, `brokerPorts`, `bodyJson`) lets the
    reader decode partitions that hold whole connections itself, writing Parquet under `out`;
    those partitions then yield no fragments. `fmt` forces the kind of local inputs; `pairs`
    are (requests, responses) frame dumps.
    """
    local = [i for i in inputs if not is_remote(i)]
    remote = [i for i in inputs if is_remote(i)]
    frames: list[DataFrame] = []
    parts = shuffled = 0
    files = expand_inputs(local, fmt=fmt, pairs=pairs)
    if files:
        split_bytes = task_split_bytes(files, split_bytes, task_slots(spark))
        # a rotation set within a task's split is one task's work, as a file that size is: read
        # it whole and decode it there, without the sizing job, the shuffle and the sort
        whole_sets = decode_into is not None
        opts = {
            "files": json.dumps([[f.name, f.path, f.ord, f.group, f.kind, f.peer] for f in files]),
            "splitBytes": str(split_bytes),
            "wholeSets": "true" if whole_sets else "false",
            **(decode_into or {}),
        }
        plan = plan_partitions(files, split_bytes, whole_sets=whole_sets)
        parts += len(plan)
        shuffled += sum(1 for p in plan if not (decode_into and p.whole))
        frames.append(spark.read.format("kafkacapture").options(**opts).load())
    if remote:
        raw = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .load(remote)
            .select("path", "modificationTime", "content")
        )
        paths = sorted(
            (r.path for r in raw.select("path").collect()),
            key=natural_key,
        )
        base = len(files)
        ords = {p: base + i for i, p in enumerate(paths)}
        sets: dict[tuple, int] = {}
        groups = {p: base + sets.setdefault(input_set(p), len(sets)) for p in paths}
        parts += len(paths)
        shuffled += len(paths)
        frames.append(
            raw.mapInArrow(
                lambda it: remote_fragments(it, ords, groups),
                spark_ddl(FRAGMENTS),
            )
        )
    if not frames:
        raise FileNotFoundError(f"no capture files in {list(inputs)}")
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return Fragments(df, parts, shuffled)


_WEIGHT = "aggregate(payload, 0L, (total, p) -> total + length(p)) + size(payload) * 64"


def balance_connections(fragments: DataFrame, fallback_tasks: int) -> tuple[DataFrame, list[int]]:
    """Fragments placed on decode tasks by `balance.plan_tasks`, sorted into capture order.

    Also each task's rank by where its first connection starts in the capture: the decode
    names its part files by it, so the tables' files follow the capture, not the task sizes.
    Needs the fragments twice (their sizes, then the decode): the caller persists them. Past
    `MAX_CONNECTIONS` connections the sizes are not collected and keys are hashed onto
    `fallback_tasks` partitions (with that many connections, hashing is even enough).
    """
    spark = fragments.sparkSession
    weights = (
        fragments.filter(F.col("issue_status").isNull())
        .groupBy(*_KEY)
        .agg(
            F.sum(F.expr(_WEIGHT)).alias("weight"),
            F.min(F.struct("file_ord", "first_index")).alias("first"),
        )
        .limit(MAX_CONNECTIONS + 1)
        .collect()
    )
    if len(weights) > MAX_CONNECTIONS or not weights:
        tasks = max(fallback_tasks, 1)
        placed = fragments.repartition(tasks, *_KEY)
        ranks = list(range(tasks))
    else:
        plan = plan_tasks([(tuple(r[k] for k in _KEY), r["weight"]) for r in weights])
        tasks = max(plan.values()) + 1
        starts = [(1 << 62, 0)] * tasks
        for r in weights:
            i = plan[tuple(r[k] for k in _KEY)]
            starts[i] = min(starts[i], (r["first"]["file_ord"], r["first"]["first_index"]))
        by_start = sorted(range(tasks), key=lambda i: starts[i])
        ranks = [0] * tasks
        for rank, i in enumerate(by_start):
            ranks[i] = rank
        salt = salts(tasks)
        fields = [FRAGMENTS.field(k) for k in _KEY] + [pa.field("salt", pa.int64())]
        keys = list(plan)
        cols = [[k[n] for k in keys] for n in range(len(_KEY))] + [[salt[plan[k]] for k in keys]]
        # from Arrow, not from a list of tuples: a list becomes a Python RDD, one more job with
        # Python workers to turn the rows into Spark's; Arrow batches the JVM reads itself
        arrays = [pa.array(c, f.type) for c, f in zip(cols, fields, strict=True)]
        table = spark.createDataFrame(pa.Table.from_arrays(arrays, schema=pa.schema(fields)))
        placed = (
            fragments.join(F.broadcast(table), on=list(_KEY), how="left")
            .repartition(tasks, "salt")
            .drop("salt")
        )
    return placed.sortWithinPartitions(*_KEY, "file_ord", "first_index"), ranks


def decode_dataframe(
    fragments: DataFrame,
    *,
    capture: str,
    partitions: int,
    broker_ports: Sequence[int] = (),
    with_body_json: bool = True,
    out_dir: str | None = None,
) -> DataFrame:
    """Decode segment fragments that may continue in other partitions, after a shuffle.

    Without `out_dir`: union rows of the three tables (`table` column). With it (a local
    folder): the rows are written there as Parquet by the Python workers, and the frame holds
    only `schema.STATS` rows. `partitions` is how many read partitions yield fragments.
    Persist `fragments` first when `partitions` > 1: they are read twice.
    """
    spark = fragments.sparkSession
    ports = tuple(broker_ports)
    if partitions > 1:
        # a connection may span packet ranges or rotated files: bring its fragments together,
        # in capture order (rotation ordinal, then packet index), on tasks of even size
        fallback = max(partitions, 4 * task_slots(spark))
        fragments, ranks = balance_connections(fragments, fallback)
        keys_sorted = True
    else:
        ranks = [0]
        keys_sorted = False  # one partition holds everything, already in capture order

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sink = None
        if out_dir is not None:
            ctx = TaskContext.get()
            pid = ctx.partitionId() if ctx else 0
            sink = ParquetSink(out_dir, f"s{ranks[pid] if pid < len(ranks) else pid:05d}")
        return decode_fragments(
            batches,
            capture=capture,
            broker_ports=ports,
            with_body_json=with_body_json,
            keys_sorted=keys_sorted,
            sink=sink,
        )

    schema = spark_ddl(STATS if out_dir is not None else UNION)
    return fragments.mapInArrow(decode, schema)


def _table(decoded: DataFrame, name: str) -> DataFrame:
    """One table's columns out of the union, timestamps from epoch ns to Spark's microseconds."""
    cols = []
    for f in TABLES[name]:
        if pa.types.is_timestamp(f.type):
            # integer division: epoch ns as a double would lose the last microsecond
            cols.append(F.expr(f"timestamp_micros(`{f.name}` div 1000)").alias(f.name))
        else:
            cols.append(F.col(f.name))
    return decoded.filter(F.col("table") == name).select(*cols)


def run_decode(
    inputs: Sequence[str] | str,
    out: str | os.PathLike,
    *,
    name: str | None = None,
    master: str | None = "local[*]",
    broker_ports: Iterable[int] = (),
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    spark: SparkSession | None = None,
    with_body_json: bool = True,
    progress: Callable[[str], None] | None = None,
    writer: str = "auto",
    fmt: str | None = None,
    pairs: Sequence[Sequence[str]] = (),
    log_level: str = "error",
    remote: str | None = None,
) -> dict[str, Any]:
    """Decode captures into Parquet tables under `out`; return a summary of what was written.

    Pass `spark` to reuse a running session (then `master` is ignored), or `remote` (an
    sc:// URL) to run the job through Spark Connect (then local inputs and `out` must be on a
    path the server sees too). `writer`: "arrow" has
    the Python workers write the tables (local `out` only; the fast path), "spark" has Spark
    write them (any `out` Spark can write, such as hdfs:// or s3a://); "auto" picks "arrow" for
    a local `out`. `fmt` forces the kind of local inputs; `pairs` are (requests, responses)
    frame dumps.
    """
    say = progress or (lambda _msg: None)
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    out_dir = str(out)
    if writer == "auto":
        writer = "spark" if is_remote(out_dir) else "arrow"
    t0 = time.perf_counter()
    own = spark is None
    # pyspark marks the whole process as Spark Connect in os.environ when it connects; put that
    # back once our own session ends, or a later classic session (or a child process) fails
    marks = {k: os.environ.get(k) for k in _CONNECT_MARKS}
    if spark is None and remote is not None:
        say(f"connecting to Spark Connect at {remote}")
        spark = connect_session(remote)
    elif spark is None:
        say(f"starting Spark ({master or 'as spark-submit set it'})")
        spark = session(master, log_level=log_level)
    t_start = time.perf_counter() - t0
    t1 = time.perf_counter()
    capture = capture_label(inputs or [p[0] for p in pairs], name)
    job = _Job(spark, inputs, out_dir, capture, tuple(broker_ports), split_bytes, with_body_json)
    job.fmt, job.pairs = fmt, pairs
    try:
        summary = job.write_with_arrow(say) if writer == "arrow" else job.write_with_spark(say)
    finally:
        if own:
            spark.stop()  # a clean stop: at exit, a local cluster's shutdown hook logs errors
            for key, value in marks.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    summary.update(
        capture=capture,
        out=out_dir,
        engine="spark",
        startup_s=t_start,
        decode_s=time.perf_counter() - t1,
    )
    say("done")
    return summary


class _Job:
    """One decode's settings, and its two ways of writing the tables."""

    def __init__(
        self,
        spark: SparkSession,
        inputs: list[str],
        out_dir: str,
        capture: str,
        ports: tuple[int, ...],
        split_bytes: int,
        with_body_json: bool,
    ) -> None:
        self.spark, self.inputs, self.out_dir, self.capture = spark, inputs, out_dir, capture
        self.ports, self.split_bytes, self.with_body_json = ports, split_bytes, with_body_json
        self.fmt: str | None = None
        self.pairs: Sequence[Sequence[str]] = ()

    def _fragments(self, decode_into: dict[str, str] | None = None) -> Fragments:
        return fragments_dataframe(
            self.spark,
            self.inputs,
            split_bytes=self.split_bytes,
            decode_into=decode_into,
            fmt=self.fmt,
            pairs=self.pairs,
        )

    def write_with_arrow(self, say: Callable[[str], None]) -> dict[str, Any]:
        """One Spark pass: readers and decode tasks write Parquet; the summary reads it back."""
        root = os.path.abspath(local_path(self.out_dir))
        prepare_tables(root)
        opts = {
            "out": root,
            "capture": self.capture,
            "brokerPorts": json.dumps(list(self.ports)),
            "bodyJson": "true" if self.with_body_json else "false",
        }
        frags = self._fragments(opts)
        say(
            f"reading {frags.partitions} partition(s) of {len(self.inputs) + len(self.pairs)} "
            f"input(s) as capture {self.capture!r}; {frags.partitions - frags.shuffled} decoded "
            f"where read, {frags.shuffled} after a shuffle by connection"
        )
        if not frags.shuffled:
            # the readers decode every partition themselves and yield no rows: no decode stage
            say("decoding and writing pdus, pairs, connections")
            frags.frame.collect()
            return self._finish(root, frags)
        frame = frags.frame.persist() if frags.shuffled > 1 else frags.frame
        try:
            stats = decode_dataframe(
                frame,
                capture=self.capture,
                partitions=frags.shuffled,
                broker_ports=self.ports,
                with_body_json=self.with_body_json,
                out_dir=root,
            )
            say("decoding and writing pdus, pairs, connections")
            stats.collect()  # the writes happen in the tasks; the rows are a few counts
        finally:
            if frame is not frags.frame:
                frame.unpersist()
        return self._finish(root, frags)

    @staticmethod
    def _finish(root: str, frags: Fragments) -> dict[str, Any]:
        """Finish the written tables; the summary read back from them."""
        finish_tables(root)
        summary = summary_of_tables(root)
        summary["partitions"] = frags.partitions
        return summary

    def write_with_spark(self, say: Callable[[str], None]) -> dict[str, Any]:
        """Spark writes the tables: decode once into the cached union, three filtered writes."""
        frags = self._fragments()
        say(f"reading {frags.partitions} partition(s) as capture {self.capture!r}")
        frame = frags.frame.persist() if frags.partitions > 1 else frags.frame
        decoded = decode_dataframe(
            frame,
            capture=self.capture,
            partitions=frags.partitions,
            broker_ports=self.ports,
            with_body_json=self.with_body_json,
        ).persist()
        try:
            names = _topic_id_names(decoded)
            for table in TABLES:
                say(f"writing {table}")
                path = os.path.join(self.out_dir, table)
                frame = _table(decoded, table)
                if table == "pdus" and names:
                    frame = _name_topic_ids(frame, names)
                frame.write.mode("overwrite").parquet(path)
            summary = _summary(decoded)
        finally:
            decoded.unpersist()
            if frame is not frags.frame:
                frame.unpersist()
        summary["partitions"] = frags.partitions
        return summary


def _topic_id_names(decoded: DataFrame) -> dict[str, str]:
    """topic id -> name from the rows that hold both (Metadata responses): a small map."""
    both = decoded.filter(
        (F.col("table") == "pdus")
        & F.col("topics").isNotNull()
        & F.col("topic_ids").isNotNull()
        & (F.size("topics") == F.size("topic_ids"))
    ).select(F.explode(F.arrays_zip("topic_ids", "topics")).alias("pair"))
    return {r.pair.topic_ids: r.pair.topics for r in both.distinct().collect()}


def _name_topic_ids(pdus: DataFrame, names: dict[str, str]) -> DataFrame:
    """`topics` for rows that name topics by id alone, as `topic_ids.name_topic_ids` does."""
    lookup = F.create_map(*[F.lit(x) for kv in names.items() for x in kv])
    found = F.filter(F.transform("topic_ids", lambda i: lookup[i]), lambda n: n.isNotNull())
    fill = F.col("topics").isNull() & F.col("topic_ids").isNotNull() & (F.size(found) > 0)
    return pdus.withColumn("topics", F.when(fill, found).otherwise(F.col("topics")))


def _summary(decoded: DataFrame) -> dict[str, Any]:
    """Counts for the CLI's table from the cached union: PDUs by status and API, connections."""
    pdus = decoded.filter(F.col("table") == "pdus")
    by_status = {r[0]: r[1] for r in pdus.groupBy("decode_status").count().collect()}
    by_api = {
        (r[0] if r[0] is not None else "-"): r[1]
        for r in pdus.filter(F.col("api_name").isNotNull() | F.col("api_key").isNotNull())
        .groupBy("api_name")
        .count()
        .collect()
    }
    conns = decoded.filter(F.col("table") == "connections").agg(
        F.count(F.lit(1)), F.sum("missed_bytes"), F.sum("request_bytes"), F.sum("response_bytes")
    )
    n_conn, missed, req_b, resp_b = conns.collect()[0]
    pairs = {
        r[0]: r[1]
        for r in decoded.filter(F.col("table") == "pairs").groupBy("status").count().collect()
    }
    return summary_dict(by_status, by_api, pairs, n_conn, missed or 0, (req_b or 0) + (resp_b or 0))
