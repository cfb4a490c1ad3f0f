"""The schemas, defined once: the row builders' column names match, the Spark DDL follows."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")

from kipwire.captures.decoding import pairing  # noqa: E402
from kipwire.captures.engines import schema  # noqa: E402


def test_row_builders_use_the_schema_columns() -> None:
    assert tuple(schema.PDUS.names) == pairing.PDU_COLUMNS
    assert tuple(schema.PAIRS.names) == pairing.PAIR_COLUMNS
    assert tuple(schema.CONNECTIONS.names) == pairing.CONNECTION_COLUMNS


def test_spark_ddl_is_derived_from_the_arrow_schema() -> None:
    ddl = schema.spark_ddl(schema.FRAGMENTS)
    assert ddl.startswith("`group` int, `a_ip` binary, `a_port` int,")
    assert "`payload` array<binary>" in ddl and "`timed` boolean" in ddl
    assert ddl.count(", ") == len(schema.FRAGMENTS) - 1
    assert "`ts` timestamp" in schema.spark_ddl(schema.PDUS)
    with pytest.raises(TypeError, match="no Spark type"):
        schema.spark_ddl(pa.schema([("x", pa.uint8())]))


def test_union_holds_every_table_column_with_timestamps_as_ns_integers() -> None:
    for table in schema.TABLES.values():
        for f in table:
            u = schema.UNION.field(f.name)
            assert u.type == (pa.int64() if pa.types.is_timestamp(f.type) else f.type)
    stamps = [f for t in schema.TABLES.values() for f in t if f.name in schema.TIMESTAMP_COLUMNS]
    assert len(stamps) == 5 and {f.type.unit for f in stamps} == {"ns"}
