"""Row dicts to columns: the compiled pass (`engines/columns.c`) against `schema._columns`."""

from __future__ import annotations

import pytest
from memory_growth import blocks_left_by

pa = pytest.importorskip("pyarrow")

from kipwire.captures.decoding.pipeline import decode_capture  # noqa: E402
from kipwire.captures.engines import schema  # noqa: E402
from kipwire.captures.reading import native  # noqa: E402
from kipwire.captures.reading.pcap import PcapngWriter  # noqa: E402

needs_native = pytest.mark.skipif(native.NATIVE is None, reason="the compiled path is not in use")
_T = 1_700_000_000_000_000_000


def _rows() -> list[dict]:
    import io

    from captures_testkit import request_frame, response_frame

    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        conv = w.conversation(("10.1.0.2", 50000), ("10.1.0.1", 9092), _T)
        for n in range(20):
            conv.client_sends(request_frame(18, 0, n), _T + n)
            conv.server_sends(response_frame(n, b"\x00\x00\x00\x00\x00\x00"), _T + n)
    rows = decode_capture(buf.getvalue())
    return rows.pdus


@needs_native
def test_the_same_columns_and_tables_as_python():
    rows = _rows()
    sparse = [{"capture": "c", "ts": 5, "extra": 1}, {}, {"topics": ["a"]}]
    for data in (rows, sparse, []):
        for s in schema.TABLES.values():
            assert native.NATIVE.columns(data, tuple(s.names)) == schema._columns(data, s)
    with_native = schema.to_table(rows, schema.PDUS)
    cols = schema._columns(rows, schema.PDUS)
    arrays = [pa.array(c, type=f.type) for c, f in zip(cols, schema.PDUS, strict=True)]
    python = pa.Table.from_arrays(arrays, schema=schema.PDUS)
    assert with_native.equals(python, check_metadata=True)


@needs_native
def test_rows_that_are_no_dicts_go_to_python():
    from types import MappingProxyType

    rows = [MappingProxyType({"capture": "c"})]
    assert native.NATIVE.columns(rows, ("capture",)) is None
    assert schema.to_table(rows, schema.PDUS).column("capture").to_pylist() == ["c"]
    with pytest.raises(TypeError):
        native.NATIVE.columns((), ("capture",))
    with pytest.raises(TypeError):
        native.NATIVE.columns([], (1,))


@needs_native
def test_a_key_that_changes_the_rows_while_compared_is_no_crash():
    rows: list[dict] = []

    class Rude(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            rows.clear()  # the caller's list empties under the walk
            for r in list(rows):
                r.clear()
            return False

    rows += [{Rude("capture"): 1, "ts": 2} for _ in range(50)]
    got = native.NATIVE.columns(rows, ("capture", "ts"))
    assert got == [[None] * 50, [2] * 50]


@needs_native
def test_no_references_left_behind():
    rows = _rows()
    names = tuple(schema.PDUS.names)

    def run(n: int) -> int:
        return sum(len(native.NATIVE.columns(rows, names)[0]) for _ in range(n))

    run(10)
    seen, grown = blocks_left_by(lambda: run(500))
    assert seen == 500 * len(rows)
    assert grown < 1000, f"{grown} more blocks allocated after 500 passes"


# -- Arrow buffers (`arrow_columns`) ------------------------------------------------------------


def _python_table(rows: list[dict], s) -> object:
    """to_table without the compiled pass: every column through pa.array; or the exception."""
    try:
        arrays = [
            pa.array(c, type=f.type) for c, f in zip(schema._columns(rows, s), s, strict=True)
        ]
        return pa.Table.from_arrays(arrays, schema=s)
    except Exception as exc:  # noqa: BLE001 - the compiled pass must raise the same
        return type(exc)


def _native_table(rows: list[dict], s) -> object:
    try:
        return schema.to_table(rows, s)
    except Exception as exc:  # noqa: BLE001
        return type(exc)


def _parquet(table) -> bytes:
    import io

    import pyarrow.parquet as pq

    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def _same(rows: list[dict]) -> None:
    for s in schema.TABLES.values():
        python, compiled = _python_table(rows, s), _native_table(rows, s)
        if isinstance(python, type):
            assert compiled is python
        else:
            assert compiled.equals(python, check_metadata=True)
            assert _parquet(compiled) == _parquet(python)


@needs_native
def test_arrow_buffers_give_the_same_tables_and_parquet_bytes():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import tempfile

    from capture_bench import build_capture

    with tempfile.TemporaryDirectory() as tmp:
        (path,) = build_capture(Path(tmp), 90, 1)
        rows = decode_capture(path)
    for table in (rows.pdus, rows.pairs, rows.connections, _rows(), []):
        _same(table)
    kinds = native.NATIVE.arrow_columns(
        rows.pdus, schema._names(schema.PDUS), schema._kinds(schema.PDUS)
    )
    assert sum(isinstance(c, tuple) for c in kinds) >= 20  # the buffers were used


@needs_native
@pytest.mark.parametrize(
    "value",
    [
        None,
        0,
        -(2**15),
        2**15 - 1,
        2**15,
        -(2**31) - 1,
        2**63,
        -(2**63),
        True,
        1.5,
        "t\u00e9xt \U0001f600",
        "a\ud800",
        "",
        b"bytes",
        ["x"],
    ],
)
def test_odd_values_in_every_column_give_what_pa_array_gives(value):
    base = _rows()[:3]
    for name in schema.PDUS.names + schema.PAIRS.names:
        rows = [dict(r) for r in base]
        rows[1][name] = value
        rows[2].pop(name, None)
        _same(rows)


@needs_native
def test_arrow_columns_bad_arguments():
    with pytest.raises(TypeError):
        native.NATIVE.arrow_columns([], ("a",), ())
    with pytest.raises(TypeError):
        native.NATIVE.arrow_columns([], ("a",), (5,))
    with pytest.raises(TypeError):
        native.NATIVE.arrow_columns([], (1,), (0,))
    assert native.NATIVE.arrow_columns([{"a": 1}, 5], ("a",), (3,)) is None


@needs_native
def test_arrow_columns_leave_no_references_behind():
    rows = _rows()
    names, kinds = schema._names(schema.PDUS), schema._kinds(schema.PDUS)

    def run(n: int) -> int:
        return sum(len(native.NATIVE.arrow_columns(rows, names, kinds)) for _ in range(n))

    run(10)
    seen, grown = blocks_left_by(lambda: run(500))
    assert seen == 500 * len(names)
    assert grown < 1000, f"{grown} more blocks allocated after 500 passes"


# -- rows held as columns (`Columns`, engines/columns_type.c) -----------------------------------


@needs_native
def test_columns_hold_the_rows_they_are_given():
    rows = _rows()
    cols = native.NATIVE.Columns(tuple(schema.PDUS.names))
    cols.extend(rows[:7])
    cols.extend(rows[7:])
    assert len(cols) == len(rows) and list(cols) == rows and cols[-1] == rows[-1]
    assert cols.names == tuple(schema.PDUS.names)
    assert cols.column("ts") == [r["ts"] for r in rows]
    cols.extend(cols)  # itself: its rows twice
    assert list(cols) == rows + rows
    other = native.NATIVE.Columns(("ts", "nowhere"))
    other.extend(cols)
    other.extend([{"ts": 5, "extra": 1}, {}])
    assert other[len(rows) * 2] == {"ts": 5, "nowhere": None} and other[-1]["ts"] is None
    cols.set_column("file", ["f"] * len(cols))
    assert {r["file"] for r in cols} == {"f"}
    with pytest.raises(IndexError):
        cols[len(cols)]
    with pytest.raises(KeyError):
        cols.column("nowhere")
    with pytest.raises(ValueError):
        cols.set_column("file", ["f"])
    with pytest.raises(ValueError):
        native.NATIVE.Columns(("a", "a"))
    with pytest.raises(TypeError):
        native.NATIVE.Columns(("a", 1))
    with pytest.raises(TypeError):
        cols.extend([5])


@needs_native
def test_columns_give_the_tables_and_parquet_bytes_of_row_dicts():
    base = _rows()[:3]
    cases = [_rows(), [], [{"capture": "c", "ts": 5, "extra": 1}, {}]]
    for value in (None, 2**15, -(2**31) - 1, 2**63, True, 1.5, "a\ud800", b"bytes", ["x"]):
        for name in ("api_key", "correlation_id", "ts", "client_id", "topics", "redacted"):
            rows = [dict(r) for r in base]
            rows[1][name] = value
            cases.append(rows)
    for rows in cases:
        for s in schema.TABLES.values():
            cols = native.NATIVE.Columns(tuple(s.names))
            cols.extend(rows)
            python = _python_table(rows, s)
            try:
                held = schema.to_table(cols, s)
            except Exception as exc:  # noqa: BLE001 - must raise what pa.array raises
                held = type(exc)
            if isinstance(python, type):
                assert held is python
            else:
                assert held.equals(python, check_metadata=True)
                assert _parquet(held) == _parquet(python)
    with pytest.raises(TypeError):
        native.NATIVE.Columns(("a",)).arrow(("a",), (9,))


@needs_native
def test_columns_leave_no_references_behind():
    rows = _rows()
    names, kinds = schema._names(schema.PDUS), schema._kinds(schema.PDUS)

    def run(n: int) -> int:
        held = 0
        for _ in range(n):
            cols = native.NATIVE.Columns(names)
            cols.extend(rows)
            cols.extend(cols)
            cols.set_column("file", cols.column("capture"))
            held += len(cols.arrow(names, kinds)) + len(cols[0])
        return held

    run(10)
    seen, grown = blocks_left_by(lambda: run(300))
    assert seen == 300 * 2 * len(names)
    assert grown < 1000, f"{grown} more blocks allocated after 300 passes"
