"""The PySpark decode job: capture files in, Parquet tables `pdus`, `pairs`, `connections` out.

Local inputs are read by the `kafkacapture` data source (split by file and packet range); URIs
such as hdfs:// or s3a:// through Spark's `binaryFile` source, so the same job runs on a cluster.
Both give segment fragments, which are shuffled by connection key, sorted into capture order,
and decoded per connection by `captures.datasource.decode_fragments` in `mapInArrow`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from captures import datasource as ds
from captures.schema import TABLES

__all__ = ["capture_label", "decode_dataframe", "fragments_dataframe", "run_decode", "session"]

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


def fragments_dataframe(
    spark: SparkSession, inputs: Sequence[str], *, split_bytes: int = ds.DEFAULT_SPLIT_BYTES
) -> tuple[DataFrame, int]:
    """Segment fragments of all inputs, and how many read partitions produced them."""
    local = [i for i in inputs if not ds.is_remote(i)]
    remote = [i for i in inputs if ds.is_remote(i)]
    frames: list[DataFrame] = []
    parts = 0
    files = ds.expand_inputs(local)
    if files:
        opts = {
            "files": json.dumps([[f.name, f.path, f.ord, f.group] for f in files]),
            "splitBytes": str(split_bytes),
        }
        parts += len(ds.plan_partitions(files, split_bytes))
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
    return df, parts


def decode_dataframe(
    fragments: DataFrame,
    *,
    capture: str,
    partitions: int,
    broker_ports: Sequence[int] = (),
    with_body_json: bool = True,
) -> DataFrame:
    """Union rows of the three tables (`table` column) from segment fragments."""
    spark = fragments.sparkSession
    ports = tuple(broker_ports)
    if partitions > 1:
        # a connection may span packet ranges or rotated files: bring its fragments together,
        # in capture order (rotation ordinal, then packet index)
        n = max(partitions, spark.sparkContext.defaultParallelism)
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
        )

    return fragments.mapInArrow(decode, from_arrow_schema(ds.UNION))


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
) -> dict[str, Any]:
    """Decode captures into Parquet tables under `out`; return a summary of what was written.

    Pass `spark` to reuse a running session (then `master` is ignored).
    """
    say = progress or (lambda _msg: None)
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    t0 = time.perf_counter()
    if spark is None:
        say(f"starting Spark ({master})")
        spark = session(master)
    t_start = time.perf_counter() - t0
    capture = capture_label(inputs, name)
    frags, parts = fragments_dataframe(spark, inputs, split_bytes=split_bytes)
    say(f"reading {parts} partition(s) of {len(inputs)} input(s) as capture {capture!r}")
    decoded = decode_dataframe(
        frags,
        capture=capture,
        partitions=parts,
        broker_ports=tuple(broker_ports),
        with_body_json=with_body_json,
    ).persist()
    try:
        t1 = time.perf_counter()
        out_dir = str(out)
        for table in TABLES:
            say(f"writing {table}")
            _table(decoded, table).write.mode("overwrite").parquet(os.path.join(out_dir, table))
        summary = _summary(decoded)
    finally:
        decoded.unpersist()
    summary.update(
        capture=capture,
        out=out_dir,
        partitions=parts,
        startup_s=t_start,
        decode_s=time.perf_counter() - t1,
    )
    say("done")
    return summary


def _summary(decoded: DataFrame) -> dict[str, Any]:
    """Counts for the CLI's table: PDUs by status and by API, connections, missed bytes."""
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
    return {
        "pdus": sum(by_status.values()),
        "by_status": dict(sorted(by_status.items(), key=lambda kv: str(kv[0]))),
        "by_api": dict(sorted(by_api.items(), key=lambda kv: -kv[1])),
        "pairs": dict(sorted(pairs.items())),
        "connections": n_conn,
        "missed_bytes": missed or 0,
        "payload_bytes": (req_b or 0) + (resp_b or 0),
    }
