"""`python -m kipwire.codec decode|describe` as a user runs it."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

from kipwire import codec
from kipwire.codec import ApiKey, ErrorCode
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
        ApiKey.API_VERSIONS,
        3,
        {"client_software_name": "a", "client_software_version": "1"},
        correlation_id=4,
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
    frame = _framed(codec.encode_request(ApiKey.PRODUCE, 9, body, correlation_id=1))
    plain = json.loads(_run("decode", stdin=frame).stdout)
    expanded = json.loads(_run("decode", "--records", stdin=frame).stdout)
    assert isinstance(plain["body"]["topic_data"][0]["partition_data"][0]["records"], str)
    batches = expanded["body"]["topic_data"][0]["partition_data"][0]["records"]
    assert batches[0]["records"][0]["timestamp"] == 9


def test_decode_responses_with_their_api_and_version() -> None:
    frame = codec.encode_response(
        ApiKey.API_VERSIONS, 3, {"error_code": ErrorCode.NONE, "api_keys": []}, correlation_id=8
    )
    result = _run("decode", "--response", str(int(ApiKey.API_VERSIONS)), "3", stdin=_framed(frame))
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


def _one_error_line(result: subprocess.CompletedProcess) -> str:
    err = result.stderr.decode()
    assert b"Traceback" not in result.stderr
    assert len(err.splitlines()) == 1, err
    return err


def test_decode_a_missing_file_or_a_directory(tmp_path: Path) -> None:
    missing = _run("decode", str(tmp_path / "nope.bin"))
    assert missing.returncode == 2 and missing.stdout == b""
    assert "cannot read" in _one_error_line(missing) and "No such file" in missing.stderr.decode()
    folder = _run("decode", str(tmp_path))
    assert folder.returncode == 2 and folder.stdout == b""
    assert "Is a directory" in _one_error_line(folder)
    pairs = _run("decode", "--requests", str(tmp_path / "nope.bin"), stdin=b"")
    assert pairs.returncode == 2 and "nope.bin" in _one_error_line(pairs)


def test_decode_into_a_closed_pipe(tmp_path: Path) -> None:
    frame = _framed(codec.encode_request(ApiKey.API_VERSIONS, 0, {}, correlation_id=1))
    path = tmp_path / "many.bin"
    path.write_bytes(frame * 50_000)  # far more output than a pipe holds
    proc = subprocess.Popen(
        [sys.executable, "-m", "kipwire.codec", "decode", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # what `head -1` does, then it exits
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) != 0
    assert json.loads(first)["correlation_id"] == 1
    assert b"Traceback" not in err
    assert err.decode().splitlines() == [
        "python -m kipwire.codec: output closed before the end (broken pipe)"
    ]


def test_decode_a_stream_of_responses_paired_with_its_requests(tmp_path: Path) -> None:
    requests = [
        codec.encode_request(ApiKey.API_VERSIONS, 3, {}, correlation_id=1),
        codec.encode_request(ApiKey.METADATA, 12, {"topics": None}, correlation_id=2),
        codec.encode_request(
            ApiKey.FETCH, 12, {"max_wait_ms": 5, "min_bytes": 1}, correlation_id=3
        ),
    ]
    fetch = codec.encode_response(
        ApiKey.FETCH, 12, {"error_code": ErrorCode.INVALID_FETCH_SESSION_EPOCH}, correlation_id=3
    )
    responses = [
        codec.encode_response(
            ApiKey.METADATA, 12, {"cluster_id": "c", "topics": []}, correlation_id=2
        ),
        codec.encode_response(
            ApiKey.API_VERSIONS, 3, {"error_code": ErrorCode.NONE, "api_keys": []}, correlation_id=1
        ),
        fetch[:-1],  # cut short: does not decode, but its error code shows
        # nobody asked
        codec.encode_response(
            ApiKey.API_VERSIONS, 3, {"error_code": ErrorCode.NONE}, correlation_id=9
        ),
    ]
    req_path, resp_path = tmp_path / "req.bin", tmp_path / "resp.bin"
    req_path.write_bytes(b"".join(_framed(f) for f in requests))
    resp_path.write_bytes(b"".join(_framed(f) for f in responses))
    result = _run("decode", str(resp_path), "--requests", str(req_path))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 1
    assert [(o.get("api_name"), o.get("api_version")) for o in lines[:2]] == [
        ("Metadata", 12),
        ("ApiVersions", 3),
    ]
    assert lines[0]["body"]["cluster_id"] == "c"
    fetch_error = (ApiKey.FETCH, ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    assert (lines[2]["api_key"], lines[2]["response_error_code"]) == fetch_error
    assert lines[2]["error"] and "body" not in lines[2]
    assert lines[3]["error"] == "no request with correlation id 9 to pair with"


def test_decode_reports_bytes_after_a_body() -> None:
    frame = (
        codec.encode_request(ApiKey.METADATA, 13, {"topics": None}, correlation_id=6)
        + b"\x00\x00\x00"
    )
    result = _run("decode", stdin=_framed(frame))
    out = json.loads(result.stdout)
    assert result.returncode == 0
    assert (out["correlation_id"], out["trailing_bytes"]) == (6, 3)


def test_decode_says_how_a_dump_ends_badly() -> None:
    good = _framed(codec.encode_request(ApiKey.API_VERSIONS, 0, {}, correlation_id=1))
    cases = {
        b"\x00\x00": "2 bytes left, too few for a size prefix",
        b"\x00\x00\x00\x09abc": "frame claims 9 bytes but 3 remain",
        b"\xff\xff\xff\xfe": "frame size -2 is negative",
    }
    for tail, problem in cases.items():
        result = _run("decode", stdin=good + tail)
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        assert result.returncode == 1
        assert lines[0]["correlation_id"] == 1
        assert lines[1] == {"offset": len(good), "error": problem}
