"""Every Arrow schema of the package, defined once: the three decoded-capture tables (`pdus`,
`pairs`, `connections`), the segment fragments the Spark job shuffles, the union of the three
tables that its decode step yields, and the per-task write counts. `spark_ddl` derives the Spark
DDL string from any of them, so no Spark schema is written by hand.

Integer widths are Spark's (ShortType, IntegerType, LongType). Timestamps are nanoseconds in UTC,
as pcapng and nanosecond pcap captures record them; the row dicts of `decoding.pairing` hold
epoch nanoseconds (int) and `to_table` makes them timestamps. Spark itself holds microseconds:
its own writer (used only for hdfs:// or s3a:// outputs) stores microseconds, and Spark reads
the nanosecond files with `spark.sql.legacy.parquet.nanosAsLong=true` (epoch nanoseconds).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..reading.native import NATIVE

__all__ = [
    "CONNECTIONS",
    "FRAGMENTS",
    "PAIRS",
    "PDUS",
    "STATS",
    "TABLES",
    "TIMESTAMP_COLUMNS",
    "UNION",
    "spark_ddl",
    "to_table",
    "write_tables",
]

_TS = pa.timestamp("ns", tz="UTC")

PDUS = pa.schema(
    [
        ("capture", pa.string()),
        ("file", pa.string()),
        ("flow_uid", pa.string()),
        ("orig_h", pa.string()),
        ("orig_p", pa.int32()),
        ("resp_h", pa.string()),
        ("resp_p", pa.int32()),
        ("direction", pa.string()),  # request / response
        ("pdu_index", pa.int64()),
        ("ts", _TS),
        ("length", pa.int64()),  # frame size field; for a gap, the missing bytes
        ("api_key", pa.int16()),
        ("api_name", pa.string()),
        ("api_version", pa.int16()),
        ("header_version", pa.int16()),
        ("correlation_id", pa.int32()),
        ("client_id", pa.string()),
        ("error_code", pa.int16()),
        ("topics", pa.list_(pa.string())),
        ("record_count", pa.int64()),
        ("decode_status", pa.string()),
        ("decode_error", pa.string()),
        ("body_json", pa.string()),
        ("stream_offset", pa.int64()),
        ("captured_bytes", pa.int64()),
        ("trailing_bytes", pa.int64()),  # bytes after the decoded body, which Kafka ignores
        ("topic_ids", pa.list_(pa.string())),  # topics named by id (Fetch v13+, Metadata v10+)
        ("redacted", pa.bool_()),  # a SASL secret the recorder replaced by `*` bytes
    ]
)

PAIRS = pa.schema(
    [
        ("capture", pa.string()),
        ("file", pa.string()),
        ("flow_uid", pa.string()),
        ("correlation_id", pa.int32()),
        ("api_key", pa.int16()),
        ("api_name", pa.string()),
        ("api_version", pa.int16()),
        ("client_id", pa.string()),
        ("request_ts", _TS),
        ("response_ts", _TS),
        ("rtt_ms", pa.float64()),
        ("request_length", pa.int64()),
        ("response_length", pa.int64()),
        ("error_code", pa.int16()),
        ("status", pa.string()),  # answered, answered_<decode status>, no_response, orphan_response
    ]
)

CONNECTIONS = pa.schema(
    [
        ("capture", pa.string()),
        ("file", pa.string()),
        ("flow_uid", pa.string()),
        ("orig_h", pa.string()),
        ("orig_p", pa.int32()),
        ("resp_h", pa.string()),
        ("resp_p", pa.int32()),
        ("first_ts", _TS),
        ("last_ts", _TS),
        ("duration_s", pa.float64()),
        ("request_pdus", pa.int64()),
        ("response_pdus", pa.int64()),
        ("request_bytes", pa.int64()),
        ("response_bytes", pa.int64()),
        ("missed_bytes", pa.int64()),
        ("role_source", pa.string()),  # how the broker side was found: syn, parse, port hint
        ("packets", pa.int64()),
    ]
)

TABLES: dict[str, pa.Schema] = {"pdus": PDUS, "pairs": PAIRS, "connections": CONNECTIONS}

TIMESTAMP_COLUMNS = frozenset(
    f.name for s in TABLES.values() for f in s if pa.types.is_timestamp(f.type)
)

# One row per TCP connection seen in a read partition: its segments there, as parallel lists.
# Problems with the file itself travel as rows with `issue_*` set.
FRAGMENTS = pa.schema(
    [
        ("group", pa.int32()),
        ("a_ip", pa.binary()),
        ("a_port", pa.int32()),
        ("b_ip", pa.binary()),
        ("b_port", pa.int32()),
        ("file", pa.string()),
        ("file_ord", pa.int32()),
        ("timed", pa.bool_()),  # false for tcpflow files and frame dumps: no capture times
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

# Rows written per table by one task (the decode tasks write Parquet themselves)
STATS = pa.schema([("table", pa.string()), ("rows", pa.int64())])


def _union_schema() -> pa.Schema:
    """All columns of the three tables once (timestamps as int64 nanoseconds), plus `table`."""
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

_SPARK_TYPES = {
    pa.string(): "string",
    pa.binary(): "binary",
    pa.bool_(): "boolean",
    pa.int16(): "smallint",
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.float64(): "double",
}


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"array<{_spark_type(t.value_type)}>"
    if pa.types.is_timestamp(t):
        return "timestamp"
    try:
        return _SPARK_TYPES[t]
    except KeyError:
        raise TypeError(f"no Spark type for Arrow {t}") from None


def spark_ddl(schema: pa.Schema) -> str:
    """The Spark DDL string ("name type, ...") of an Arrow schema."""
    return ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in schema)


def to_table(rows: Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Row dicts (timestamps as epoch ns ints) as an Arrow table of `schema`; extra keys dropped.

    `rows` may be a `Columns` (`pairing.new_rows`): its columns go to Arrow without a row pass.
    """
    if NATIVE is not None and isinstance(rows, NATIVE.Columns):
        columns = rows.arrow(_names(schema), _kinds(schema))
        n = len(rows)
        arrays = [_array(c, f.type, n) for c, f in zip(columns, schema, strict=True)]
        return pa.Table.from_arrays(arrays, schema=schema)
    rows = list(rows)
    columns = None if NATIVE is None else NATIVE.arrow_columns(rows, _names(schema), _kinds(schema))
    if columns is None:
        columns = _columns(rows, schema)
    n = len(rows)
    arrays = [_array(c, f.type, n) for c, f in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


# The column types `columns.c:arrow_columns` writes as Arrow buffers itself (its kinds 1-4)
_KINDS = {pa.int16(): 1, pa.int32(): 2, pa.int64(): 3, pa.string(): 4}


@cache
def _kinds(schema: pa.Schema) -> tuple[int, ...]:
    """Each column's kind for `arrow_columns`: 0 for those pa.array converts."""
    return tuple(3 if pa.types.is_timestamp(f.type) else _KINDS.get(f.type, 0) for f in schema)


def _array(column: Any, typ: pa.DataType, n: int) -> pa.Array:
    """A column as an Arrow array: its values converted, or its buffers (`arrow_columns`)."""
    if isinstance(column, list):
        return pa.array(column, type=typ)
    nulls, validity, values, data = column
    buffers = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(values)]
    if data is not None:
        buffers.append(pa.py_buffer(data))
    return pa.Array.from_buffers(typ, n, buffers, null_count=nulls)


@cache
def _names(schema: pa.Schema) -> tuple[str, ...]:
    """The schema's column names, interned: a row's keys are (literals), so lookups match by
    identity."""
    return tuple(sys.intern(n) for n in schema.names)


def _columns(rows: list[Mapping[str, Any]], schema: pa.Schema) -> list[list[Any]]:
    """The rows' values column by column (`engines/columns.c` is the compiled one)."""
    try:
        # through itemgetter: less CPU than Arrow reading the dicts as structs, and a tenth of a
        # list comprehension calling r.get per row and column
        return [list(map(itemgetter(f.name), rows)) for f in schema]
    except KeyError:
        # a row without some column (a caller's own dicts): that column is null there
        return [[r.get(f.name) for r in rows] for f in schema]


def write_tables(rows: Any, out_dir: str | os.PathLike) -> Path:
    """Write `rows` (anything with `pdus`, `pairs`, `connections` lists) as three Parquet tables.

    The layout is the Spark job's: `OUT/pdus/`, `OUT/pairs/`, `OUT/connections/`, each a dataset
    directory (here with one part file). Without Spark, for tests and small captures.
    """
    out = Path(out_dir)
    for name, schema in TABLES.items():
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(to_table(getattr(rows, name), schema), d / "part-00000.parquet")
    return out
