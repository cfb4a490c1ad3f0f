"""The Spark decode job end to end: real captures, packet-range splits, rotated files, damage.

One local[2] session serves the module (Spark start-up is slow); one run of the job decodes a
workspace holding every file of ../shared/captures, a big synthetic file split into many packet
ranges, a connection cut across two rotated files, damaged files, tcpflow files, a frame dump and
a Fetch v13 named by topic id. One test checks Spark's own writer (used for hdfs:// or s3a://
outputs) against the default, where the Python workers write the Parquet files; another checks
the job against the in-process engine. A last test runs the job through spark-submit in
local-cluster mode, with kipwire only on --py-files.
"""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from captures_testkit import SHARED_CAPTURES
from kafka_capture_kit import write_frame_dumps, write_metadata_then_fetch, write_tcpflow

pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")
pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")

from kipwire import codec  # noqa: E402
from kipwire.captures.decoding.pipeline import decode_capture  # noqa: E402
from kipwire.captures.reading.pcap import PcapngWriter, scan_index  # noqa: E402
from kipwire.codec import ApiKey  # noqa: E402

SPLIT = 4096

# per file: (direction, api_key, api_version, correlation_id, decode_status), in table order
EXPECTED = {
    "00-produce-v2.pcap": [
        ("request", ApiKey.PRODUCE, 2, 1, "ok"),
        ("response", ApiKey.PRODUCE, 2, 1, "ok"),
    ],
    "00-produce-v7-sw8.pcap": [
        ("request", ApiKey.PRODUCE, 7, 1, "ok"),
        ("response", ApiKey.PRODUCE, 7, 1, "ok"),
    ],
    "00-produce-v9.pcap": [
        ("request", ApiKey.PRODUCE, 9, 47, "ok"),
        ("response", ApiKey.PRODUCE, 9, 47, "ok"),
    ],
    "01-fetch-v12-ok.pcap": [
        ("request", ApiKey.FETCH, 12, 15603, "ok"),
        ("response", ApiKey.FETCH, 12, 15603, "ok"),
    ],
    "01-fetch-v12-perf.pcap": [
        ("request", ApiKey.FETCH, 12, 20, "ok"),
        ("response", ApiKey.FETCH, 12, 20, "ok"),
    ],
    "01-fetch-v12-unknown.pcap": [
        ("request", ApiKey.FETCH, 12, 20, "ok"),
        ("response", ApiKey.FETCH, 12, 20, "ok"),
    ],
    "11-join-group-v7.pcap": [
        ("request", ApiKey.JOIN_GROUP, 7, 120, "ok"),
        ("response", ApiKey.JOIN_GROUP, 7, 120, "ok"),
    ],
    "13-leave-group-v4.pcap": [
        ("request", ApiKey.LEAVE_GROUP, 4, 201, "ok"),
        ("response", ApiKey.LEAVE_GROUP, 4, 201, "ok"),
    ],
    "14-sync-group-v5.pcap": [
        ("request", ApiKey.SYNC_GROUP, 5, 120, "ok"),
        ("response", ApiKey.SYNC_GROUP, 5, 120, "ok"),
    ],
    "18-api-versions-v3.pcap": [
        ("request", ApiKey.API_VERSIONS, 3, 2, "ok"),
        ("response", ApiKey.API_VERSIONS, 3, 2, "ok"),
    ],
    "mixed-with-unsupported.pcap": [
        ("request", ApiKey.FETCH, 13, 15551976, "ok"),
        ("request", ApiKey.OFFSET_COMMIT, 8, 15551977, "ok"),
        ("request", ApiKey.HEARTBEAT, 4, 15551978, "ok"),
        ("response", ApiKey.FETCH, 13, 15551976, "ok"),
        ("response", ApiKey.OFFSET_COMMIT, 8, 15551977, "ok"),
        ("response", ApiKey.HEARTBEAT, 4, 15551978, "ok"),
    ],
    "kafka.pcap": [
        ("request", ApiKey.PRODUCE, 1, 1, "ok"),
        ("request", ApiKey.METADATA, 0, 1, "ok"),
        ("response", ApiKey.PRODUCE, 1, 1, "ok"),
        ("response", ApiKey.METADATA, 0, 1, "ok"),
    ],
}


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _metadata_pair(corr: int, topic: str) -> tuple[bytes, bytes]:
    req = codec.encode_request(
        ApiKey.METADATA,
        12,
        {"topics": [{"name": topic}]},
        correlation_id=corr,
        client_id="spark-test",
    )
    body = {
        "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092}],
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                ],
            }
        ],
    }
    return _frame(req), _frame(
        codec.encode_response(ApiKey.METADATA, 12, body, correlation_id=corr)
    )


def _write_big(path: Path) -> None:
    """Several interleaved connections, big enough to cut into many packet ranges."""
    t = 1_700_000_000_000_000_000
    with PcapngWriter(path, mss=200) as w:
        convs = [w.conversation(("10.0.0.2", 40000 + i), ("10.0.0.9", 9093), t) for i in range(4)]
        for n in range(120):
            conv = convs[n % 4]
            req, resp = _metadata_pair(n, f"topic-{n % 7}-" + "x" * (n % 300))
            t += 1_000_000
            conv.client_sends(req, t)
            conv.server_sends(resp, t + 500_000)
        for conv in convs:
            conv.close(t + 10_000_000)


def _write_rotated(folder: Path) -> None:
    """One connection whose response lies partly in the next rotated file (tcpdump -C)."""
    buf = io.BytesIO()
    t = 1_700_000_100_000_000_000
    with PcapngWriter(buf, mss=100) as w:
        conv = w.conversation(("10.0.0.3", 45000), ("10.0.0.9", 9093), t)
        for n in range(3):
            req, resp = _metadata_pair(100 + n, "rotated-topic-" + "y" * 150)
            conv.client_sends(req, t + n * 10_000_000)
            conv.server_sends(resp, t + n * 10_000_000 + 1_000_000)
        conv.close(t + 50_000_000)
        data = buf.getvalue()
    index = scan_index(data)
    offsets = list(index.offsets)
    head = data[: offsets[0]]
    # cut in the middle of the second response's segments
    cut = offsets[len(offsets) // 2]
    (folder / "cap.pcapng").write_bytes(data[:cut])
    (folder / "cap.pcapng1").write_bytes(head + data[cut:])


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("ws") / "run"
    for sub in ("big", "rotated", "broken"):
        (ws / sub).mkdir(parents=True)
    if SHARED_CAPTURES.is_dir():
        shutil.copytree(SHARED_CAPTURES, ws / "shared", ignore=shutil.ignore_patterns("*.md"))
    _write_big(ws / "big" / "big.pcapng")
    _write_rotated(ws / "rotated")
    big = (ws / "big" / "big.pcapng").read_bytes()
    (ws / "broken" / "truncated.pcapng").write_bytes(big[: len(big) // 3 + 7])
    (ws / "broken" / "garbage.pcap").write_bytes(b"this is not a capture file at all\n" * 4)
    write_tcpflow(ws / "flows")
    write_frame_dumps(ws / "dumps")
    (ws / "dumps" / "responses.bin").unlink()  # a request dump alone, found by its content
    write_metadata_then_fetch(ws / "ids" / "ids.pcapng")
    return ws


@pytest.fixture(scope="module")
def spark():
    from kipwire.captures.engines.spark_job import session

    s = session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def decoded(spark, workspace: Path, tmp_path_factory: pytest.TempPathFactory):
    from kipwire.captures.engines.spark_job import run_decode

    out = tmp_path_factory.mktemp("out")
    summary = run_decode([str(workspace)], out, spark=spark, split_bytes=SPLIT, name="spark-test")
    tables = {t: pq.read_table(out / t).to_pylist() for t in ("pdus", "pairs", "connections")}
    return summary, tables


def _key(r: dict) -> tuple:
    return (r["direction"], r["api_key"], r["api_version"], r["correlation_id"], r["decode_status"])


def _rows_of(rows: list[dict], file: str) -> list[dict]:
    return [r for r in rows if r["file"] == file]


def _comparable(r: dict) -> tuple:
    return (
        r["flow_uid"],
        r["direction"],
        r["pdu_index"],
        r["length"],
        r["api_key"],
        r["api_version"],
        r["correlation_id"],
        r["client_id"],
        r["error_code"],
        r["decode_status"],
        r["body_json"],
    )


def test_tables_have_the_issue_columns(decoded) -> None:
    from kipwire.captures.engines.schema import TABLES

    summary, tables = decoded
    for name, rows in tables.items():
        assert rows, name
        assert list(rows[0]) == TABLES[name].names
        assert {r["capture"] for r in rows} == {"spark-test"}
    assert summary["pdus"] == len(tables["pdus"])


@pytest.mark.skipif(not SHARED_CAPTURES.is_dir(), reason=f"{SHARED_CAPTURES} is absent")
def test_shared_captures_decode_as_expected(decoded, workspace: Path) -> None:
    _, tables = decoded
    files = sorted(p for p in (workspace / "shared").rglob("*.pcap"))
    assert {p.name for p in files} == set(EXPECTED)
    for path in files:
        name = os.path.join(str(workspace), str(path.relative_to(workspace)))
        rows = _rows_of(tables["pdus"], name)
        assert sorted(map(_key, rows)) == sorted(EXPECTED[path.name]), path.name
        pure = decode_capture(path, file=name, capture="spark-test").pdus
        assert sorted(map(_comparable, rows)) == sorted(map(_comparable, pure)), path.name
        pairs = _rows_of(tables["pairs"], name)
        assert pairs and all(p["status"] == "answered" for p in pairs), path.name


def test_big_file_split_into_ranges_matches_unsplit(decoded, workspace: Path) -> None:
    from kipwire.captures.engines.spark_datasource import plan_partitions
    from kipwire.captures.reading.inputs import expand_inputs

    _, tables = decoded
    path = workspace / "big" / "big.pcapng"
    assert len(plan_partitions(expand_inputs([str(path)]), SPLIT)) >= 5
    name = str(path)
    rows = _rows_of(tables["pdus"], name)
    pure = decode_capture(path, file=name, capture="spark-test")
    assert len(rows) == 240
    assert sorted(map(_comparable, rows)) == sorted(map(_comparable, pure.pdus))
    assert {r["decode_status"] for r in rows} == {"ok"}
    pairs = _rows_of(tables["pairs"], name)
    assert len(pairs) == 120 and {p["status"] for p in pairs} == {"answered"}
    conns = _rows_of(tables["connections"], name)
    assert len(conns) == 4 and sum(c["missed_bytes"] for c in conns) == 0


def test_connection_across_rotated_files_is_reassembled(decoded, workspace: Path) -> None:
    _, tables = decoded
    names = {str(workspace / "rotated" / n) for n in ("cap.pcapng", "cap.pcapng1")}
    rows = [r for r in tables["pdus"] if r["file"] in names]
    assert sorted((r["direction"], r["correlation_id"], r["decode_status"]) for r in rows) == [
        ("request", 100, "ok"),
        ("request", 101, "ok"),
        ("request", 102, "ok"),
        ("response", 100, "ok"),
        ("response", 101, "ok"),
        ("response", 102, "ok"),
    ]
    assert {r["file"] for r in rows} == names  # each PDU names the file where it starts
    conns = [c for c in tables["connections"] if c["file"] in names]
    assert len(conns) == 1 and conns[0]["missed_bytes"] == 0
    pairs = [p for p in tables["pairs"] if p["file"] in names]
    assert [p["status"] for p in pairs] == ["answered"] * 3


def test_damaged_files_give_error_rows(decoded, workspace: Path) -> None:
    _, tables = decoded
    garbage = _rows_of(tables["pdus"], str(workspace / "broken" / "garbage.pcap"))
    assert [r["decode_status"] for r in garbage] == ["malformed"]
    assert garbage[0]["length"] == 34 * 4
    trunc = _rows_of(tables["pdus"], str(workspace / "broken" / "truncated.pcapng"))
    statuses = {r["decode_status"] for r in trunc}
    assert "truncated" in statuses and "ok" in statuses


def _micros(table: pa.Table) -> pa.Table:
    """Timestamps cut to microseconds, as Spark's writer holds them (the arrow writer: ns)."""
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type):
            us = pc.cast(table.column(i), pa.timestamp("us", tz=f.type.tz), safe=False)
            table = table.set_column(i, f.name, us)
    return table


def test_spark_writer_matches_arrow_writer(spark, decoded, workspace: Path, tmp_path: Path) -> None:
    """The fallback for outputs only Spark can write (hdfs://, s3a://) writes the same rows."""
    from kipwire.captures.engines.spark_job import run_decode

    inputs = [str(workspace / s) for s in ("rotated", "broken", "ids")]  # ids: Fetch v13
    summary = run_decode(inputs, tmp_path, spark=spark, name="spark-test", writer="spark")
    arrow = run_decode(inputs, tmp_path / "arrow", spark=spark, name="spark-test")
    for table in ("pdus", "pairs", "connections"):
        via_spark = _micros(pq.read_table(tmp_path / table))
        via_arrow = _micros(pq.read_table(tmp_path / "arrow" / table))
        assert via_spark.schema.names == via_arrow.schema.names, table

        def key(r: dict) -> tuple:
            return tuple(str(v) for v in r.values())

        assert sorted(map(key, via_spark.to_pylist())) == sorted(map(key, via_arrow.to_pylist())), (
            table
        )
    for k in ("pdus", "by_status", "by_api", "pairs", "connections", "missed_bytes"):
        assert summary[k] == arrow[k], k


def test_inputs_without_packets_and_topic_ids_match_the_local_engine(
    decoded, workspace: Path, tmp_path: Path
) -> None:
    """tcpflow files, a frame dump and Fetch v13 topic names: the same rows as in-process."""
    from kipwire.captures.engines.local import run_local

    _, tables = decoded
    local = tmp_path / "local"
    subs = ["flows", "dumps", "ids"]
    run_local([str(workspace / s) for s in subs], local, capture="spark-test")
    pure = pq.read_table(local / "pdus").to_pylist()
    names = {r["file"] for r in pure}
    rows = [r for r in tables["pdus"] if r["file"] in names]
    assert len(names) == 3 and len(rows) == len(pure) == 4 + 3 + 4
    assert sorted(map(_comparable, rows)) == sorted(map(_comparable, pure))
    fetch = [r for r in rows if r["api_key"] == ApiKey.FETCH]
    assert len(fetch) == 2 and all(r["topics"] == ["orders"] for r in fetch)
    assert {r["decode_status"] for r in rows} == {"ok"}


def test_spark_submit_with_py_files_in_local_cluster_mode(tmp_path: Path, workspace: Path) -> None:
    """Separate executor JVMs and Python workers that have kipwire only from --py-files."""
    # a Python with every dependency but without kipwire: site-packages on its path, but not
    # processed (-S), so the editable install's import hook stays out
    site = sysconfig.get_paths()["purelib"]
    bare = tmp_path / "python-without-kipwire"
    bare.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{site}" exec {sys.executable} -S "$@"\n')
    bare.chmod(0o755)
    probe = subprocess.run([str(bare), "-c", "import kipwire"], capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'kipwire'" in probe.stderr
    py_files = tmp_path / "kipwire.zip"
    made = subprocess.run(
        [sys.executable, "-m", "kipwire.captures", "py-files", str(py_files)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0 and zipfile.is_zipfile(py_files), made.stderr
    spec = importlib.util.find_spec("kipwire.captures.__main__")
    assert spec is not None and spec.origin
    submit = Path(sys.executable).with_name("spark-submit")
    out = tmp_path / "out"
    env = dict(os.environ, PYSPARK_PYTHON=str(bare), PYSPARK_DRIVER_PYTHON=str(bare))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [str(submit), "--master", "local-cluster[2,1,1024]", "--py-files", str(py_files)]
        + [spec.origin, "decode", str(workspace / "rotated"), "--out", str(out)]
        + ["--split-mb", "0.001"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    if proc.returncode != 0 and "Failed to launch" in proc.stderr:
        pytest.skip(f"local-cluster cannot start executors here: {proc.stderr[-500:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # spark-submit passes the Python driver's stderr on through its stdout
    assert "engine: spark (running under spark-submit)" in proc.stdout
    assert "PDUs by status" in proc.stdout
    pdus = pq.read_table(out / "pdus").to_pylist()
    assert sorted((r["direction"], r["correlation_id"], r["decode_status"]) for r in pdus) == [
        (d, c, "ok") for d in ("request", "response") for c in (100, 101, 102)
    ]
    assert {r["capture"] for r in pdus} == {"rotated"}


def test_cli_spark_engine_is_quiet(tmp_path: Path, workspace: Path) -> None:
    """`--engine spark` prints its own progress; Spark's WARN and INFO log lines stay off."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "kipwire.captures", "decode", str(workspace / "rotated")]
        + ["--out", str(out), "--engine", "spark", "--master", "local[1]"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "engine: spark (--engine spark)" in proc.stderr
    # a rotated set within the split size is read and decoded whole, with no shuffle
    assert "1 decoded where read, 0 after a shuffle" in proc.stderr
    noise = [x for x in proc.stderr.splitlines() if " WARN " in x or " INFO " in x]
    assert not noise, noise
    assert len(pq.read_table(out / "pdus")) == 6


def test_remote_inputs_through_binary_file(
    spark, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hdfs:// and s3a:// inputs go through Spark's binaryFile source: file:// URIs stand in."""
    from kipwire.captures.engines import spark_job as job
    from kipwire.captures.engines.local import run_local

    monkeypatch.setattr(job, "is_remote", lambda p: p.startswith("file://"))
    subs = ["flows", "dumps", "ids"]
    uris = [f"file://{workspace / s}" for s in subs]
    summary = job.run_decode(uris, tmp_path / "remote", spark=spark, name="spark-test")
    run_local([str(workspace / s) for s in subs], tmp_path / "local", capture="spark-test")
    remote = pq.read_table(tmp_path / "remote" / "pdus").to_pylist()
    local = pq.read_table(tmp_path / "local" / "pdus").to_pylist()
    assert summary["pdus"] == len(remote) == len(local) == 4 + 3 + 4

    def key(r: dict) -> tuple:
        return (r["direction"], r["api_key"], r["correlation_id"], r["decode_status"], r["topics"])

    assert sorted(map(key, remote)) == sorted(map(key, local))
    assert all(r["file"].startswith("file:") for r in remote)
