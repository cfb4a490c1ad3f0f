"""The Spark job's reading of remote inputs (hdfs://, s3a://), without a cluster: the function
its `mapInArrow` runs over `binaryFile` rows, fed the rows Spark would give it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from kafka_capture_kit import write_frame_dumps, write_metadata_then_fetch, write_tcpflow

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from kipwire.captures.engines.fragment_decode import decode_fragments  # noqa: E402
from kipwire.captures.engines.local import run_local  # noqa: E402
from kipwire.captures.engines.spark_job import remote_fragments  # noqa: E402
from kipwire.captures.reading.inputs import input_set  # noqa: E402

MTIME = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def _binary_file_rows(paths: list[Path]) -> pa.RecordBatch:
    """What Spark's binaryFile source gives: path (a URI), modificationTime, content."""
    return pa.RecordBatch.from_pydict(
        {
            "path": [f"hdfs://nn{p}" for p in paths],
            # a second apart: a frame dump's connection is known by its file's time
            "modificationTime": [MTIME + dt.timedelta(seconds=i) for i in range(len(paths))],
            "content": [p.read_bytes() for p in paths],
        },
        schema=pa.schema(
            [
                ("path", pa.string()),
                ("modificationTime", pa.timestamp("us", tz="UTC")),
                ("content", pa.binary()),
            ]
        ),
    )


def _decode(paths: list[Path]) -> list[dict]:
    uris = [f"hdfs://nn{p}" for p in paths]
    sets: dict[tuple, int] = {}
    groups = {u: sets.setdefault(input_set(u), len(sets)) for u in uris}
    ords = {u: i for i, u in enumerate(uris)}
    frags = list(remote_fragments([_binary_file_rows(paths)], ords, groups))
    rows = []
    for batch in decode_fragments(frags, capture="remote", keys_sorted=False):
        rows += [r for r in batch.to_pylist() if r["table"] == "pdus"]
    return rows


def _key(r: dict) -> tuple:
    return (r["direction"], r["api_key"], r["correlation_id"], r["decode_status"], r["ts"])


def test_remote_tcpflow_frames_and_pcap_decode_as_local_ones(tmp_path: Path) -> None:
    write_tcpflow(tmp_path / "flows")
    req, _resp = write_frame_dumps(tmp_path / "dumps")
    write_metadata_then_fetch(tmp_path / "caps" / "ids.pcapng")
    flows = sorted((tmp_path / "flows").iterdir())
    remote = _decode([*flows, req, tmp_path / "caps" / "ids.pcapng"])
    inputs = [str(tmp_path / "flows"), str(req), str(tmp_path / "caps")]
    run_local(inputs, tmp_path / "o", capture="x")
    local = pq.read_table(tmp_path / "o" / "pdus").to_pylist()
    for r in local:
        if r["ts"] is not None:
            r["ts"] = r["ts"].value  # the union holds epoch ns integers
    assert len(remote) == len(local) == 4 + 3 + 4
    assert sorted(map(_key, remote)) == sorted(map(_key, local))
    assert {r["decode_status"] for r in remote} == {"ok"}
    # the two direction files of the tcpflow connection met: every request is answered
    flow_rows = [r for r in remote if r["correlation_id"] in (7, 8)]
    assert sorted((r["direction"], r["correlation_id"]) for r in flow_rows) == [
        ("request", 7),
        ("request", 8),
        ("response", 7),
        ("response", 8),
    ]


def test_two_remote_frame_dumps_stay_two_connections(tmp_path: Path) -> None:
    a, _ = write_frame_dumps(tmp_path / "a")
    b, _ = write_frame_dumps(tmp_path / "b")
    rows = _decode([a, b])
    assert len({r["flow_uid"] for r in rows}) == 2 and len(rows) == 6
    assert {r["file"] for r in rows} == {f"hdfs://nn{a}", f"hdfs://nn{b}"}


def test_remote_rotated_pcaps_share_a_set_by_name() -> None:
    assert input_set("hdfs://nn/c/cap.pcapng") == input_set("hdfs://nn/c/cap.pcapng1")
    assert input_set("hdfs://nn/c/x.bin") != input_set("hdfs://nn/c/y.bin")
