"""The unchanged job on Spark daemons started from pyspark's own jars, as on a real cluster.

A standalone master and two workers take the job from spark-submit (kipwire only on
--py-files); a Spark Connect server takes it from `kipwire-capture decode --remote` and from
`run_decode(remote=...)` (kipwire shipped as a session artifact). The server's and executors'
Python lacks kipwire, as a cluster's would. Inputs and outputs sit on a path every process
sees; each run must write the tables the in-process engine writes. Skipped without Java, and
run only with KIPWIRE_SPARK_CLUSTER=1 (make test-deep).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from kafka_capture_kit import T0, metadata_pair, write_rotated
from spark_daemons import (
    SPARK_BIN,
    java_missing,
    start_connect_server,
    start_master,
    start_worker,
)

pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

from kipwire.captures.reading.pcap import PcapngWriter  # noqa: E402

# Spark's own daemons (a master and two worker JVMs; a Connect server) cost about 90 s on 2 cores,
# and the local-cluster spark-submit test in test_capture_spark.py ships kipwire to executor
# processes the same way: make test-deep runs this module (KIPWIRE_SPARK_CLUSTER=1).
pytestmark = [
    pytest.mark.skipif(java_missing() is not None, reason=java_missing() or ""),
    pytest.mark.skipif(
        os.environ.get("KIPWIRE_SPARK_CLUSTER") != "1",
        reason="Spark's daemons run with KIPWIRE_SPARK_CLUSTER=1 (make test-deep)",
    ),
]

NAME = "cluster-test"
SPLIT_MB = "0.004"  # the 4-connection file becomes several packet ranges, shuffled


def _write_connections(path: Path) -> None:
    """Four interleaved connections, Metadata v9 (no topic ids: no name depends on order)."""
    t = T0
    with PcapngWriter(path, mss=200) as w:
        convs = [w.conversation(("10.0.0.2", 41000 + i), ("10.0.0.9", 9092), t) for i in range(4)]
        for n in range(48):
            req, resp = metadata_pair(n, f"topic-{n % 5}-" + "z" * (n * 3), version=9)
            t += 1_000_000
            convs[n % 4].client_sends(req, t)
            convs[n % 4].server_sends(resp, t + 400_000)
        for conv in convs:
            conv.close(t + 5_000_000)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    ws = tmp_path_factory.mktemp("shared-inputs")
    write_rotated(ws / "rotated", exchanges=4)
    (ws / "many").mkdir()
    _write_connections(ws / "many" / "four.pcapng")
    return [str(ws / "rotated"), str(ws / "many")]


@pytest.fixture(scope="module")
def expected(inputs: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    from kipwire.captures.engines.local import run_local

    out = tmp_path_factory.mktemp("local")
    run_local(inputs, out, capture=NAME)
    return _tables(out)


def _tables(out: Path) -> dict[str, list]:
    """Each table's rows, as sorted strings (part files and row order differ by engine)."""
    tables = {}
    for t in ("pdus", "pairs", "connections"):
        rows = pq.read_table(out / t).to_pylist()
        tables[t] = sorted(tuple(str(v) for v in r.values()) for r in rows)
    return tables


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python with every dependency but without kipwire (site-packages, unprocessed)."""
    site = sysconfig.get_paths()["purelib"]
    bare = tmp_path_factory.mktemp("python") / "python-without-kipwire"
    bare.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{site}" exec {sys.executable} -S "$@"\n')
    bare.chmod(0o755)
    probe = subprocess.run([str(bare), "-c", "import kipwire"], capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'kipwire'" in probe.stderr
    return str(bare)


def test_spark_submit_to_a_standalone_cluster(
    tmp_path: Path, inputs: list[str], expected: dict, bare_python: str
) -> None:
    """Master and two one-core workers; the job's tasks run in the workers' executors."""
    py_files = tmp_path / "kipwire.zip"
    made = subprocess.run(
        [sys.executable, "-m", "kipwire.captures", "py-files", str(py_files)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    main = importlib.util.find_spec("kipwire.captures.__main__")
    assert main is not None and main.origin
    out = tmp_path / "out"
    env = dict(os.environ, PYSPARK_PYTHON=bare_python, PYSPARK_DRIVER_PYTHON=bare_python)
    env.pop("PYTHONPATH", None)
    master, url = start_master(tmp_path)
    daemons = [master]
    try:
        daemons += [start_worker(tmp_path, url, n) for n in (1, 2)]
        proc = subprocess.run(
            [str(SPARK_BIN / "spark-submit"), "--master", url, "--py-files", str(py_files)]
            + ["--driver-memory", "512m", "--conf", "spark.executor.memory=512m"]
            + ["--conf", "spark.driver.host=127.0.0.1", main.origin, "decode", *inputs]
            + ["--out", str(out), "--name", NAME, "--split-mb", SPLIT_MB],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
            cwd=tmp_path,
        )
    finally:
        for d in reversed(daemons):
            d.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "engine: spark (running under spark-submit)" in proc.stdout
    # each worker launched an executor for the application
    for n in (1, 2):
        assert list((tmp_path / f"worker-{n}").glob("app-*/*/stderr")), n
    assert _tables(out) == expected


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory, bare_python: str):
    pytest.importorskip("grpc", reason="Spark Connect's client needs the captures extra (grpcio)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = start_connect_server(tmp_path_factory.mktemp("connect"), port, bare_python)
    try:
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.stop()


def test_cli_decode_through_spark_connect(
    connect_url: str, tmp_path: Path, inputs: list[str], expected: dict
) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "kipwire.captures", "decode", *inputs, "--out", str(out)]
        + ["--remote", connect_url, "--name", NAME, "--split-mb", SPLIT_MB],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"engine: spark (--remote {connect_url})" in proc.stderr
    assert _tables(out) == expected


def test_run_decode_through_spark_connect(
    connect_url: str, tmp_path: Path, inputs: list[str], expected: dict
) -> None:
    from kipwire.captures.engines.spark_job import run_decode

    summary = run_decode(inputs, tmp_path, remote=connect_url, name=NAME, split_bytes=4096)
    assert summary["pdus"] == len(expected["pdus"]) == 2 * (48 + 4)
    assert summary["partitions"] > 3  # the four-connection file was cut into packet ranges
    assert _tables(tmp_path) == expected
