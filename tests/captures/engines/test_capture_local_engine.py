"""The in-process engine: the Spark job's tables from pyarrow alone, for every input kind."""

from __future__ import annotations

import shutil
import subprocess
import sys
from itertools import chain
from pathlib import Path

import pytest
from captures_testkit import SHARED_CAPTURES
from kafka_capture_kit import (
    T0,
    write_frame_dumps,
    write_metadata_then_fetch,
    write_rotated,
    write_tcpflow,
)

pq = pytest.importorskip("pyarrow.parquet")

from kipwire.captures.decoding.pipeline import decode_capture  # noqa: E402
from kipwire.captures.engines.fragment_decode import decode_fragments  # noqa: E402
from kipwire.captures.engines.fragments import fragments_of  # noqa: E402
from kipwire.captures.engines.local import run_local  # noqa: E402
from kipwire.captures.engines.schema import TABLES  # noqa: E402
from kipwire.captures.engines.table_files import ParquetSink, summary_of_tables  # noqa: E402
from kipwire.captures.reading.inputs import expand_inputs  # noqa: E402
from kipwire.codec import ApiKey  # noqa: E402


def _tables(out: Path) -> dict[str, list[dict]]:
    return {t: pq.read_table(out / t).to_pylist() for t in TABLES}


def _comparable(r: dict) -> tuple:
    keys = ("flow_uid", "direction", "pdu_index", "length", "api_key", "api_version")
    keys += ("correlation_id", "client_id", "error_code", "decode_status", "body_json")
    return tuple(r[k] for k in keys)


@pytest.mark.skipif(not SHARED_CAPTURES.is_dir(), reason=f"{SHARED_CAPTURES} is absent")
def test_shared_captures_match_the_pipeline_rows(tmp_path: Path) -> None:
    summary = run_local([str(SHARED_CAPTURES)], tmp_path, capture="c")
    pdus = _tables(tmp_path)["pdus"]
    files = sorted(p for p in SHARED_CAPTURES.rglob("*.pcap"))
    assert files and summary["pdus"] == len(pdus) and summary["engine"] == "local"
    for path in files:
        name = str(SHARED_CAPTURES / path.relative_to(SHARED_CAPTURES))
        rows = [r for r in pdus if r["file"] == name]
        pure = decode_capture(path, file=name, capture="c").pdus
        assert rows and sorted(map(_comparable, rows)) == sorted(map(_comparable, pure)), name


def test_rotated_files_are_one_connection(tmp_path: Path) -> None:
    write_rotated(tmp_path / "in")
    run_local([str(tmp_path / "in")], tmp_path / "out", capture="rot")
    t = _tables(tmp_path / "out")
    got = sorted((r["direction"], r["correlation_id"], r["decode_status"]) for r in t["pdus"])
    assert got == [(d, c, "ok") for d in ("request", "response") for c in (100, 101, 102)]
    assert len(t["connections"]) == 1 and t["connections"][0]["missed_bytes"] == 0
    assert [p["status"] for p in t["pairs"]] == ["answered"] * 3


def test_timestamps_keep_nanoseconds(tmp_path: Path) -> None:
    write_metadata_then_fetch(tmp_path / "cap.pcapng")
    run_local([str(tmp_path / "cap.pcapng")], tmp_path / "out", capture="ns")
    pdus = pq.read_table(tmp_path / "out" / "pdus")
    assert pdus.schema.field("ts").type.unit == "ns"
    stamps = sorted(v.value for v in pdus.column("ts") if v.is_valid)
    assert stamps[0] == T0 + 1_000 and T0 + 2_001 in stamps and T0 + 6_003 in stamps
    pairs = pq.read_table(tmp_path / "out" / "pairs").to_pylist()
    rtts = sorted(p["rtt_ms"] for p in pairs)
    assert rtts == [pytest.approx(1_001 / 1e6), pytest.approx(1_003 / 1e6)]


def test_fetch_v13_gets_topic_names_from_metadata(tmp_path: Path) -> None:
    write_metadata_then_fetch(tmp_path / "cap.pcapng")
    run_local([str(tmp_path / "cap.pcapng")], tmp_path / "out", capture="ids")
    pdus = _tables(tmp_path / "out")["pdus"]
    fetch = [r for r in pdus if r["api_key"] == ApiKey.FETCH]
    assert len(fetch) == 2 and {r["api_version"] for r in fetch} == {13}
    assert all(r["topics"] == ["orders"] for r in fetch), fetch
    assert all(r["topic_ids"] == ["6b1f5a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"] for r in fetch)
    # the Fetch is on another connection than the Metadata that named the id
    meta = [r for r in pdus if r["api_key"] == ApiKey.METADATA and r["direction"] == "response"]
    assert meta[0]["flow_uid"] != fetch[0]["flow_uid"]


def test_tcpflow_folder(tmp_path: Path) -> None:
    write_tcpflow(tmp_path / "flows")
    (tmp_path / "flows" / "report.xml").write_text("<dfxml/>")
    run_local([str(tmp_path / "flows")], tmp_path / "out", capture="flow")
    t = _tables(tmp_path / "out")
    got = sorted((r["direction"], r["correlation_id"], r["decode_status"]) for r in t["pdus"])
    assert got == [(d, c, "ok") for d in ("request", "response") for c in (7, 8)]
    (conn,) = t["connections"]
    assert (conn["resp_p"], conn["orig_h"]) == (9092, "10.0.0.1")
    # the files hold no capture times: none are made up for the PDUs or the RTT
    assert {r["ts"] for r in t["pdus"]} == {None}
    assert [(p["status"], p["rtt_ms"]) for p in t["pairs"]] == [("answered", None)] * 2


def test_frame_dumps_alone_and_paired(tmp_path: Path) -> None:
    req, resp = write_frame_dumps(tmp_path / "dumps")
    run_local([str(req)], tmp_path / "alone", capture="d")
    t = _tables(tmp_path / "alone")
    assert [(r["direction"], r["correlation_id"], r["decode_status"]) for r in t["pdus"]] == [
        ("request", c, "ok") for c in (21, 22, 23)
    ]
    assert {p["status"] for p in t["pairs"]} == {"no_response"}
    run_local([], tmp_path / "paired", capture="d", pairs=[(str(req), str(resp))])
    t = _tables(tmp_path / "paired")
    assert sorted((r["direction"], r["correlation_id"]) for r in t["pdus"]) == [
        (d, c) for d in ("request", "response") for c in (21, 22, 23)
    ]
    assert {r["decode_status"] for r in t["pdus"]} == {"ok"}
    assert [r["topics"] for r in t["pdus"] if r["direction"] == "response"] == [
        ["dump-21"],
        ["dump-22"],
        ["dump-23"],
    ]
    assert {p["status"] for p in t["pairs"]} == {"answered"}


def test_runs_without_pyspark_or_pandas(tmp_path: Path) -> None:
    """--engine local needs pyarrow, not pyspark nor pandas, and does not load pyarrow.dataset
    (which imports pandas where it is installed: 0.4 s of CPU a decode)."""
    write_rotated(tmp_path / "in")
    code = (
        "import sys\n"
        "class Absent:  # as if neither were installed\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pyspark', 'pandas'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "from kipwire.captures.cli import main\n"
        f"rc = main(['decode', {str(tmp_path / 'in')!r}, '--out', "
        f"{str(tmp_path / 'out')!r}, '--engine', 'local'])\n"
        "assert 'pyarrow.dataset' not in sys.modules, 'pyarrow.dataset was imported'\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "engine: local (--engine local)" in proc.stderr
    assert len(pq.read_table(tmp_path / "out" / "pdus")) == 6
    shutil.rmtree(tmp_path / "out")


def test_a_rotated_set_decodes_as_the_arrow_fragments_do(tmp_path: Path) -> None:
    """The local engine's fragment objects give the rows the Spark job's Arrow batches give."""
    write_rotated(tmp_path / "in", exchanges=6)
    last = tmp_path / "in" / "cap.pcapng1"
    last.write_bytes(last.read_bytes()[:-30])  # the last block cut short: an issue row
    run_local([str(tmp_path / "in")], tmp_path / "objects", capture="rot")
    files = expand_inputs([str(tmp_path / "in")])
    sink = ParquetSink(str(tmp_path / "arrow"), "set00000")
    batches = chain.from_iterable(fragments_of(f) for f in files)
    list(decode_fragments(batches, capture="rot", keys_sorted=False, sink=sink))
    for table in TABLES:
        objects = pq.read_table(tmp_path / "objects" / table / "part-set00000.parquet")
        assert objects.equals(pq.read_table(tmp_path / "arrow" / table / "part-set00000.parquet"))
    statuses = pq.read_table(tmp_path / "objects" / "pdus").column("decode_status")
    assert "truncated" in statuses.to_pylist() and "ok" in statuses.to_pylist()


def test_the_collector_is_set_back_after_a_decode(tmp_path):
    import gc

    from kipwire.captures.engines.fragment_decode import fewer_collections

    before = gc.get_threshold(), gc.get_freeze_count()
    with fewer_collections():
        assert gc.get_threshold()[0] > before[0][0] and gc.get_freeze_count() > 0
        # cycles made inside the block are still collected
        cycle: list = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    with pytest.raises(ValueError), fewer_collections():
        raise ValueError("a decode that fails")
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    write_metadata_then_fetch(tmp_path / "in.pcapng")
    summary = run_local([str(tmp_path / "in.pcapng")], tmp_path / "out", capture="c")
    assert summary["pdus"] > 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def _parquet_bytes(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.parquet"))}


@pytest.mark.skipif(not SHARED_CAPTURES.is_dir(), reason=f"{SHARED_CAPTURES} is absent")
def test_rows_held_as_columns_write_the_bytes_row_dicts_write(tmp_path: Path, monkeypatch) -> None:
    """The engine's `Columns` (rows.c to Parquet) against lists of row dicts: every input kind,
    rotated sets (files named per row), untimed inputs (times emptied), damaged captures."""
    from kipwire.captures.decoding import pairing

    if pairing.new_rows(("a",)) == []:
        pytest.skip("the compiled loops are not built")
    inputs = tmp_path / "in"
    shutil.copytree(SHARED_CAPTURES, inputs / "corpus")
    write_rotated(inputs / "rot", exchanges=6)
    last = inputs / "rot" / "cap.pcapng1"
    last.write_bytes(last.read_bytes()[:-30])
    write_tcpflow(inputs / "flows")
    write_metadata_then_fetch(inputs / "meta.pcapng")
    for n, path in enumerate(sorted((inputs / "corpus").rglob("*.pcap*"))[:6]):
        data = bytearray(path.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 3] = b"\xff" * (n % 4)
        (inputs / f"mutated{n}.pcap").write_bytes(bytes(data))
    req, resp = write_frame_dumps(tmp_path / "dumps")
    opts = {"capture": "c", "pairs": [(str(req), str(resp))]}
    columns = run_local([str(inputs)], tmp_path / "columns", **opts)
    with monkeypatch.context() as m:
        m.setattr(pairing, "_COLUMNS", None)
        assert pairing.new_rows(("a",)) == []
        dicts = run_local([str(inputs)], tmp_path / "dicts", **opts)
    assert {k: v for k, v in columns.items() if k not in ("out", "decode_s")} == {
        k: v for k, v in dicts.items() if k not in ("out", "decode_s")
    }
    got, expected = _parquet_bytes(tmp_path / "columns"), _parquet_bytes(tmp_path / "dicts")
    assert len(got) >= 6 and got == expected
    statuses = set(pq.read_table(tmp_path / "columns" / "pdus").column("decode_status").to_pylist())
    assert {"ok", "truncated"} <= statuses
    # the counts taken while writing are those read back from the files, in the same order
    read_back = summary_of_tables(str(tmp_path / "columns"))
    for key, value in read_back.items():
        assert columns[key] == value
        if isinstance(value, dict):
            assert list(columns[key]) == list(value)
    assert columns["partitions"] >= 2  # whole files and a rotated set: two part files each
