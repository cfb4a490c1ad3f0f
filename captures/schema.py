"""The Arrow schemas of the three decoded-capture tables: `pdus`, `pairs`, `connections`.

Defined once here, for both writers (the Spark job, and `write_tables` for tests and small
captures) and for the reader (`captures.compare`). Spark maps them one to one:
`pyspark.sql.pandas.types.from_arrow_schema(PDUS)` gives the StructType to write. Integer widths
are Spark's (ShortType, IntegerType, LongType); timestamps are microseconds in UTC, Spark's
TimestampType. The row dicts of `captures.pairing` hold epoch nanoseconds (int); `to_table`
converts them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "CONNECTIONS",
    "PAIRS",
    "PDUS",
    "TABLES",
    "TIMESTAMP_COLUMNS",
    "to_table",
    "write_tables",
]

_TS = pa.timestamp("us", tz="UTC")

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
        ("status", pa.string()),  # answered / no_response / orphan_response
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


def to_table(rows: Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Row dicts (timestamps as epoch ns ints) as an Arrow table of `schema`; extra keys dropped."""
    rows = list(rows)
    columns = []
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if pa.types.is_timestamp(f.type):
            # int ns -> us; a datetime passes through unchanged
            values = [v // 1000 if isinstance(v, int) else v for v in values]
        columns.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(columns, schema=schema)


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
