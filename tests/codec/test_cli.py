"""`python -m kipwire.codec decode|describe` as a user runs it."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

from kipwire import codec
from kipwire.codec.records import build_batch

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kipwire.codec", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


def _framed(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame


def test_decode_prints_one_json_object_per_frame_and_keeps_going(tmp_path: Path) -> None:
    good = codec.encode_request(
        18, 3, {"client_software_name": "a", "client_software_version": "1"}, correlation_id=4
    )
    bad = good[:10] + b"\xff" * 5
    path = tmp_path / "frames.bin"
    path.write_bytes(_framed(good) + _framed(bad) + _framed(good))
    result = _run("decode", str(path))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 1  # one frame failed
    assert [line.get("correlation_id") for line in lines] == [4, None, 4]
    assert lines[0]["api_name"] == "ApiVersions"
    assert lines[0]["body"]["client_software_name"] == "a"
    assert lines[1]["error_offset"] is not None and lines[1]["error"]


def test_decode_expands_records_on_request() -> None:
    records = build_batch([{"key": b"k", "value": b"v", "headers": [], "timestamp": 9}])
    body = {
        "acks": 1,
        "timeout_ms": 5,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    }
    frame = _framed(codec.encode_request(0, 9, body, correlation_id=1))
    plain = json.loads(_run("decode", stdin=frame).stdout)
    expanded = json.loads(_run("decode", "--records", stdin=frame).stdout)
    assert isinstance(plain["body"]["topic_data"][0]["partition_data"][0]["records"], str)
    batches = expanded["body"]["topic_data"][0]["partition_data"][0]["records"]
    assert batches[0]["records"][0]["timestamp"] == 9


def test_decode_responses_with_their_api_and_version() -> None:
    frame = codec.encode_response(18, 3, {"error_code": 0, "api_keys": []}, correlation_id=8)
    result = _run("decode", "--response", "18", "3", stdin=_framed(frame))
    out = json.loads(result.stdout)
    assert result.returncode == 0
    assert (out["correlation_id"], out["api_version"]) == (8, 3)


def test_describe_one_version_and_all_versions() -> None:
    one = _run("describe", "FetchRequest", "--version", "15").stdout.decode()
    assert "ReplicaState (ReplicaState): tagged, tag 1" in one
    assert "ReplicaId (int32)" in one and "RackId (string)" in one
    every = _run("describe", "PartitionChangeRecord").stdout.decode()
    assert "EligibleLeaderReplicas ([]int32): versions 2+" in every
    unknown = _run("describe", "FetchReq")
    assert unknown.returncode == 2 and b"FetchRequest" in unknown.stdout
