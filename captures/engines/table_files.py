"""The decoded tables as files: Parquet part files written by any task, finished, summarised.

Every engine writes the same layout: `OUT/pdus/`, `OUT/pairs/`, `OUT/connections/`, each a
Parquet dataset folder of part files. In the Spark job the Python tasks write them directly
(`ParquetSink`): moving every decoded row into the JVM, caching it and filtering it three times
for three writes cost several times the decode itself. `UnionBatches` is the other way out, for
Spark's own writer: rows of the three tables as Arrow batches of one union schema.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..decoding.pairing import column_of, new_rows
from ..decoding.topic_ids import resolve_topic_ids
from .schema import STATS, TABLES, UNION, to_table

__all__ = [
    "OUT_ROWS",
    "ParquetSink",
    "UnionBatches",
    "finish_tables",
    "prepare_tables",
    "summary_dict",
    "summary_of_sinks",
    "summary_of_tables",
]

OUT_ROWS = 4096  # rows buffered before a write (or an output batch)


def _buffers() -> dict[str, Any]:
    """An empty buffer per table: `pairing.new_rows`, which takes row dicts and `Columns`."""
    return {name: new_rows(tuple(schema.names)) for name, schema in TABLES.items()}


class UnionBatches:
    """Buffers rows of the three tables and turns them into union-schema Arrow batches."""

    def __init__(self) -> None:
        self.rows = _buffers()
        self.count = 0

    def add(self, table: str, rows: Any) -> None:
        """Buffer rows of `table` (row dicts or `Columns`)."""
        self.rows[table].extend(rows)
        self.count += len(rows)

    def batch(self) -> pa.RecordBatch:
        """The buffered rows as one `UNION` batch (timestamps as epoch ns); the buffer empties."""
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
                else:
                    cols[f.name] = column_of(rows, f.name)
            parts.append(pa.Table.from_pydict(cols, schema=UNION))
        self.rows = _buffers()
        self.count = 0
        return pa.concat_tables(parts).combine_chunks().to_batches()[0]


class ParquetSink:
    """Writes rows of the three tables straight to Parquet part files under `out/<table>/`.

    A part file is written under a dot name (which Spark and pyarrow skip) and renamed when
    complete, and its name depends only on `tag` (the partition), so a retried or speculative
    task attempt replaces it instead of adding a duplicate.
    """

    def __init__(self, out: str, tag: str) -> None:
        self.out = out
        self.tag = tag
        self.rows = _buffers()
        self.count = 0
        self.written = dict.fromkeys(TABLES, 0)
        self.writers: dict[str, tuple[pq.ParquetWriter, str, str]] = {}
        self.counts = _Counts()

    def add(self, table: str, rows: Any) -> None:
        """Buffer rows of `table` (row dicts or `Columns`); written once `OUT_ROWS` rows are
        waiting."""
        self.rows[table].extend(rows)
        self.count += len(rows)
        if self.count >= OUT_ROWS:
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
            self.counts.add(name, rows)
        self.rows = _buffers()
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


def prepare_tables(root: str) -> None:
    """Make the table folders, empty: a new decode replaces the last one, as Spark's does."""
    for table in TABLES:
        folder = os.path.join(root, table)
        os.makedirs(folder, exist_ok=True)
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                os.remove(path)


def finish_tables(root: str) -> None:
    """Drop part files of failed attempts, name topic ids, give an empty table its schema,
    mark success."""
    for table, schema in TABLES.items():
        folder = os.path.join(root, table)
        os.makedirs(folder, exist_ok=True)
        for name in os.listdir(folder):
            if name.startswith(".tmp-part-"):
                os.remove(os.path.join(folder, name))
        if not any(n.endswith(".parquet") for n in os.listdir(folder)):
            pq.write_table(schema.empty_table(), os.path.join(folder, "part-empty.parquet"))
    resolve_topic_ids(os.path.join(root, "pdus"))
    for table in TABLES:
        Path(root, table, "_SUCCESS").touch()


class _Counts:
    """What `summary_of_tables` reads back from a sink's part files, counted as they are written."""

    def __init__(self) -> None:
        self.by_status: Counter = Counter()
        # (api_name, api_key) pairs in the order first seen: folded into names by `by_api`
        self.apis: Counter = Counter()
        self.pairs: Counter = Counter()
        self.connections = 0
        self.missed = 0
        self.payload = 0

    def add(self, table: str, rows: Any) -> None:
        """Count rows of `table` as written."""
        if table == "pdus":
            self.by_status.update(column_of(rows, "decode_status"))
            names, keys = column_of(rows, "api_name"), column_of(rows, "api_key")
            self.apis.update(zip(names, keys, strict=True))
        elif table == "pairs":
            self.pairs.update(column_of(rows, "status"))
        else:
            self.connections += len(rows)
            self.missed += sum(filter(None, column_of(rows, "missed_bytes")))
            self.payload += sum(filter(None, column_of(rows, "request_bytes")))
            self.payload += sum(filter(None, column_of(rows, "response_bytes")))


def summary_of_sinks(root: str, sinks: dict[str, ParquetSink]) -> dict[str, Any]:
    """`summary_of_tables(root)` for tables all written in this process by `sinks` (by tag),
    from what they counted while writing: nothing read back."""
    by_status: Counter = Counter()
    by_api: Counter = Counter()
    pairs: Counter = Counter()
    n_conn = missed = payload = 0
    # part file by part file in the order summary_of_tables reads them: it decides the order
    # of API names with equal counts
    for part in os.listdir(os.path.join(root, "pdus")):
        sink = sinks.get(part[len("part-") : -len(".parquet")])
        if sink is None or not part.startswith("part-") or not part.endswith(".parquet"):
            continue
        by_status.update(sink.counts.by_status)
        by_api.update(_by_api_name(sink.counts.apis))
    for sink in sinks.values():
        pairs.update(sink.counts.pairs)
        n_conn += sink.counts.connections
        missed += sink.counts.missed
        payload += sink.counts.payload
    return summary_dict(by_status, by_api, pairs, n_conn, missed, payload)


def _by_api_name(apis: Counter) -> Counter:
    """(api_name, api_key) counts as counts by name, "-" for a key without one; rows with
    neither (gaps, unreadable frames) left out; names in the order first seen."""
    by_api: Counter = Counter()
    for (name, key), n in apis.items():
        if name is not None or key is not None:
            by_api["-" if name is None else name] += n
    return by_api


def summary_of_tables(root: str) -> dict[str, Any]:
    """Counts for the CLI's table from the written Parquet (a few columns, read by pyarrow)."""

    # part file by part file: pyarrow.dataset would import pandas (0.4 s of CPU), a cost every
    # decode in a fresh process paid, larger than reading these columns
    def cols(table: str, names: list[str]) -> dict[str, list[Any]]:
        folder = os.path.join(root, table)
        out: dict[str, list[Any]] = {name: [] for name in names}
        for part in os.listdir(folder):
            if part.endswith(".parquet") and not part.startswith((".", "_")):
                values = pq.ParquetFile(os.path.join(folder, part)).read(columns=names)
                for name, column in values.to_pydict().items():
                    out[name].extend(column)
        return out

    pdus = cols("pdus", ["decode_status", "api_name", "api_key"])
    by_status = Counter(pdus["decode_status"])
    by_api = _by_api_name(Counter(zip(pdus["api_name"], pdus["api_key"], strict=True)))
    pairs = Counter(cols("pairs", ["status"])["status"])
    conns = cols("connections", ["missed_bytes", "request_bytes", "response_bytes"])
    return summary_dict(
        by_status,
        by_api,
        pairs,
        len(conns["missed_bytes"]),
        sum(filter(None, conns["missed_bytes"])),
        sum(filter(None, conns["request_bytes"])) + sum(filter(None, conns["response_bytes"])),
    )


def summary_dict(
    by_status: dict, by_api: dict, pairs: dict, n_conn: int, missed: int, payload: int
) -> dict[str, Any]:
    """The summary the CLI prints, from counts however they were gathered."""
    return {
        "pdus": sum(by_status.values()),
        "by_status": dict(sorted(by_status.items(), key=lambda kv: str(kv[0]))),
        "by_api": dict(sorted(by_api.items(), key=lambda kv: -kv[1])),
        "pairs": dict(sorted(pairs.items())),
        "connections": n_conn,
        "missed_bytes": missed or 0,
        "payload_bytes": payload or 0,
    }
