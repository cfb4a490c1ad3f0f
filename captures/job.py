"""The PySpark decode job: capture files in, Parquet tables `pdus`, `pairs`, `connections` out.

Local inputs are read by the `kafkacapture` data source (split by file and packet range); URIs
such as hdfs:// or s3a:// through Spark's `binaryFile` source, so the same job runs on a cluster.
Both give segment fragments, which are shuffled by connection key, sorted into capture order,
and decoded per connection by `captures.datasource.decode_fragments` in `mapInArrow`.

For a local output folder (the default writer, "arrow") the job is one Spark pass: the reader
decodes whole files itself, the decode tasks write their rows as Parquet part files, and
only a few counts come back to the JVM; the summary is read from the written files. Moving
every decoded row into the JVM (Arrow to rows), caching it and filtering it three times for
three writes cost several times the decode itself. Outputs only Spark can write (hdfs://,
s3a://) take that path still (writer "spark").
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from . import datasource as ds
from .schema import TABLES

__all__ = [
    "Fragments",
    "capture_label",
    "decode_dataframe",
    "fragments_dataframe",
    "run_decode",
    "session",
    "summary_of_tables",
]

_KEY = ("group", "a_ip", "a_port", "b_ip", "b_port")
_PROJECT_ROOT = str(Path(__file__).resolve().parents[1])


def session(master: str = "local[*]", app: str = "kipwire-capture") -> SparkSession:
    """Start (or reuse) a Spark session whose Python workers can import this project."""
    # workers are separate processes: give them this interpreter (it has pyarrow and codec) and
    # this source tree, also in local-cluster mode where executors are separate JVMs
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if _PROJECT_ROOT not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([_PROJECT_ROOT, *filter(None, paths)])
    spark = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "4096")
        # a fragment row holds up to 4 MiB of payload: cap the batches fed to the decode by size
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(64 << 20))
        # timestamps as captures.schema has them (us, UTC), not Spark's default INT96
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
        .getOrCreate()
    )
    spark.dataSource.register(ds.KafkaCaptureDataSource)
    return spark


def capture_label(inputs: Sequence[str], name: str | None = None) -> str:
    """`name`, else the first input folder's name (a file's parent folder)."""
    if name:
        return name
    first = inputs[0].rstrip("/")
    if ds.is_remote(first):
        path = first.split("://", 1)[1]
        parts = [p for p in path.split("/")[1:] if p]
        is_dir = not ds._CAPTURE_SUFFIX.search(parts[-1]) if parts else True
        return (parts[-1] if is_dir else parts[-2]) if len(parts) >= (1 if is_dir else 2) else ""
    p = Path(ds._local_path(first)).resolve()
    return p.name if p.is_dir() else p.parent.name


def _remote_fragments(
    batches: Iterable[pa.RecordBatch], ords: dict[str, int], groups: dict[str, int]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over `binaryFile` rows (path, content): the whole file as one partition."""
    for batch in batches:
        cols = batch.to_pydict()
        for path, content in zip(cols["path"], cols["content"], strict=True):
            f = ds.CaptureFile(path, path, ords.get(path, 0), groups.get(path, 0))
            yield from ds.fragments_of(content, f)


class Fragments(NamedTuple):
    """The fragment rows of all inputs, with how they were planned."""

    frame: DataFrame
    partitions: int  # read partitions (files and packet ranges)
    shuffled: int  # of them, those whose fragments must meet others after a shuffle


def fragments_dataframe(
    spark: SparkSession,
    inputs: Sequence[str],
    *,
    split_bytes: int = ds.DEFAULT_SPLIT_BYTES,
    decode_into: dict[str, str] | None = None,
) -> Fragments:
    """Segment fragments of all inputs.

    `decode_into` (the reader options `out`, `capture`, `brokerPorts`, `bodyJson`) lets the
    reader decode partitions that hold whole connections itself, writing Parquet under `out`;
    those partitions then yield no fragments.
    """
    local = [i for i in inputs if not ds.is_remote(i)]
    remote = [i for i in inputs if ds.is_remote(i)]
    frames: list[DataFrame] = []
    parts = shuffled = 0
    files = ds.expand_inputs(local)
    if files:
        opts = {
            "files": json.dumps([[f.name, f.path, f.ord, f.group] for f in files]),
            "splitBytes": str(split_bytes),
            **(decode_into or {}),
        }
        plan = ds.plan_partitions(files, split_bytes)
        parts += len(plan)
        shuffled += sum(1 for p in plan if not (decode_into and p.whole))
        frames.append(spark.read.format("kafkacapture").options(**opts).load())
    if remote:
        raw = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .load(remote)
            .select("path", "content")
        )
        paths = sorted(
            (r.path for r in raw.select("path").collect()),
            key=ds.natural_key,
        )
        base = len(files)
        ords = {p: base + i for i, p in enumerate(paths)}
        sets: dict[tuple[str, str], int] = {}
        groups = {p: base + sets.setdefault(ds.rotation_set(p), len(sets)) for p in paths}
        parts += len(paths)
        shuffled += len(paths)
        frames.append(
            raw.mapInArrow(
                lambda it: _remote_fragments(it, ords, groups),
                ds.FRAGMENT_DDL,
            )
        )
    if not frames:
        raise FileNotFoundError(f"no capture files in {list(inputs)}")
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return Fragments(df, parts, shuffled)


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
    only `ds.STATS` rows. `partitions` is how many read partitions yield fragments.
    """
    spark = fragments.sparkSession
    ports = tuple(broker_ports)
    if partitions > 1:
        # a connection may span packet ranges or rotated files: bring its fragments together,
        # in capture order (rotation ordinal, then packet index). Connections hash onto
        # partitions unevenly, and one connection is one task's work: several partitions per
        # core let the scheduler even the load out (an empty one costs a few milliseconds).
        n = max(partitions, 4 * spark.sparkContext.defaultParallelism)
        fragments = fragments.repartition(n, *_KEY).sortWithinPartitions(
            *_KEY, "file_ord", "first_index"
        )
        keys_sorted = True
    else:
        keys_sorted = False  # one partition holds everything, already in capture order

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return ds.decode_fragments(
            batches,
            capture=capture,
            broker_ports=ports,
            with_body_json=with_body_json,
            keys_sorted=keys_sorted,
            out_dir=out_dir,
        )

    schema = ds.STATS_DDL if out_dir is not None else from_arrow_schema(ds.UNION)
    return fragments.mapInArrow(decode, schema)


def _table(decoded: DataFrame, name: str) -> DataFrame:
    """One table's columns out of the union, timestamps cast from microseconds."""
    cols = []
    for f in TABLES[name]:
        if pa.types.is_timestamp(f.type):
            cols.append(F.timestamp_micros(F.col(f.name)).alias(f.name))
        else:
            cols.append(F.col(f.name))
    return decoded.filter(F.col("table") == name).select(*cols)


def run_decode(
    inputs: Sequence[str] | str,
    out: str | os.PathLike,
    *,
    name: str | None = None,
    master: str = "local[*]",
    broker_ports: Iterable[int] = (),
    split_bytes: int = ds.DEFAULT_SPLIT_BYTES,
    spark: SparkSession | None = None,
    with_body_json: bool = True,
    progress: Callable[[str], None] | None = None,
    writer: str = "auto",
) -> dict[str, Any]:
    """Decode captures into Parquet tables under `out`; return a summary of what was written.

    Pass `spark` to reuse a running session (then `master` is ignored). `writer`: "arrow" has
    the Python workers write the tables (local `out` only; the fast path), "spark" has Spark
    write them (any `out` Spark can write, such as hdfs:// or s3a://); "auto" picks "arrow" for
    a local `out`.
    """
    say = progress or (lambda _msg: None)
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    out_dir = str(out)
    if writer == "auto":
        writer = "spark" if ds.is_remote(out_dir) else "arrow"
    t0 = time.perf_counter()
    if spark is None:
        say(f"starting Spark ({master})")
        spark = session(master)
    t_start = time.perf_counter() - t0
    t1 = time.perf_counter()
    capture = capture_label(inputs, name)
    ports = tuple(broker_ports)
    if writer == "arrow":
        summary = _decode_arrow(
            spark, inputs, out_dir, capture, ports, split_bytes, with_body_json, say
        )
    else:
        summary = _decode_spark(
            spark, inputs, out_dir, capture, ports, split_bytes, with_body_json, say
        )
    summary.update(
        capture=capture,
        out=out_dir,
        startup_s=t_start,
        decode_s=time.perf_counter() - t1,
    )
    say("done")
    return summary


def _decode_arrow(
    spark: SparkSession,
    inputs: list[str],
    out_dir: str,
    capture: str,
    ports: tuple[int, ...],
    split_bytes: int,
    with_body_json: bool,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """One Spark pass: readers and decode tasks write Parquet; the summary reads it back."""
    root = os.path.abspath(ds._local_path(out_dir))
    for table in TABLES:
        shutil.rmtree(os.path.join(root, table), ignore_errors=True)  # overwrite, as Spark does
    opts = {
        "out": root,
        "capture": capture,
        "brokerPorts": json.dumps(list(ports)),
        "bodyJson": "true" if with_body_json else "false",
    }
    frags = fragments_dataframe(spark, inputs, split_bytes=split_bytes, decode_into=opts)
    say(
        f"reading {frags.partitions} partition(s) of {len(inputs)} input(s) as capture "
        f"{capture!r}; {frags.partitions - frags.shuffled} decoded where read, "
        f"{frags.shuffled} after a shuffle by connection"
    )
    stats = decode_dataframe(
        frags.frame,
        capture=capture,
        partitions=frags.shuffled,
        broker_ports=ports,
        with_body_json=with_body_json,
        out_dir=root,
    )
    say("decoding and writing pdus, pairs, connections")
    stats.collect()  # the writes happen in the tasks; the rows are a few counts
    _finish_tables(root)
    summary = summary_of_tables(root)
    summary["partitions"] = frags.partitions
    return summary


def _finish_tables(root: str) -> None:
    """Drop part files of failed attempts, give an empty table its schema, mark success."""
    for table, schema in TABLES.items():
        folder = os.path.join(root, table)
        os.makedirs(folder, exist_ok=True)
        for name in os.listdir(folder):
            if name.startswith(".tmp-part-"):
                os.remove(os.path.join(folder, name))
        if not any(n.endswith(".parquet") for n in os.listdir(folder)):
            pq.write_table(schema.empty_table(), os.path.join(folder, "part-empty.parquet"))
        Path(folder, "_SUCCESS").touch()


def summary_of_tables(root: str) -> dict[str, Any]:
    """Counts for the CLI's table from the written Parquet (a few columns, read by pyarrow)."""
    import pyarrow.dataset as pads

    def cols(table: str, names: list[str]) -> dict[str, list[Any]]:
        path = os.path.join(root, table)
        return pads.dataset(path, format="parquet").to_table(columns=names).to_pydict()

    pdus = cols("pdus", ["decode_status", "api_name", "api_key"])
    by_status = Counter(pdus["decode_status"])
    by_api = Counter(
        "-" if n is None else n
        for n, k in zip(pdus["api_name"], pdus["api_key"], strict=True)
        if n is not None or k is not None
    )
    pairs = Counter(cols("pairs", ["status"])["status"])
    conns = cols("connections", ["missed_bytes", "request_bytes", "response_bytes"])
    return _summary_dict(
        by_status,
        by_api,
        pairs,
        len(conns["missed_bytes"]),
        sum(filter(None, conns["missed_bytes"])),
        sum(filter(None, conns["request_bytes"])) + sum(filter(None, conns["response_bytes"])),
    )


def _summary_dict(
    by_status: dict, by_api: dict, pairs: dict, n_conn: int, missed: int, payload: int
) -> dict[str, Any]:
    return {
        "pdus": sum(by_status.values()),
        "by_status": dict(sorted(by_status.items(), key=lambda kv: str(kv[0]))),
        "by_api": dict(sorted(by_api.items(), key=lambda kv: -kv[1])),
        "pairs": dict(sorted(pairs.items())),
        "connections": n_conn,
        "missed_bytes": missed or 0,
        "payload_bytes": payload or 0,
    }


def _decode_spark(
    spark: SparkSession,
    inputs: list[str],
    out_dir: str,
    capture: str,
    ports: tuple[int, ...],
    split_bytes: int,
    with_body_json: bool,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Spark writes the tables: decode once into the cached union, three filtered writes."""
    frags = fragments_dataframe(spark, inputs, split_bytes=split_bytes)
    say(f"reading {frags.partitions} partition(s) of {len(inputs)} input(s) as capture {capture!r}")
    decoded = decode_dataframe(
        frags.frame,
        capture=capture,
        partitions=frags.partitions,
        broker_ports=ports,
        with_body_json=with_body_json,
    ).persist()
    try:
        for table in TABLES:
            say(f"writing {table}")
            _table(decoded, table).write.mode("overwrite").parquet(os.path.join(out_dir, table))
        summary = _summary(decoded)
    finally:
        decoded.unpersist()
    summary["partitions"] = frags.partitions
    return summary


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
    return _summary_dict(
        by_status, by_api, pairs, n_conn, missed or 0, (req_b or 0) + (resp_b or 0)
    )
