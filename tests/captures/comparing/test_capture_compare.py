"""Regression comparison: captures of one workload written, decoded to Parquet, compared.

The tables are written with pyarrow from `decode_capture` rows (no Spark), through the same
`captures.engines.schema` the Spark job uses.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from dataclasses import dataclass

import pyarrow.parquet as pq
import pytest

from kipwire import codec
from kipwire.captures.comparing.compare import (
    FUNCTIONAL_KINDS,
    compare,
    main_compare,
    parse_fail_on,
)
from kipwire.captures.decoding.pipeline import decode_capture
from kipwire.captures.engines.schema import CONNECTIONS, PAIRS, PDUS, write_tables
from kipwire.captures.reading.pcapng_writer import PcapngWriter
from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch

TOPICS = {"orders": 2, "audit": 1}


@dataclass
class Run:
    """Client settings and the volatile values that differ from run to run."""

    produce_version: int = 9
    compression: str = "none"
    # volatile: what two runs of one workload never share
    port_base: int = 40000
    corr_base: int = 0
    t0: int = 1_700_000_000_000_000_000
    broker_port: int = 9092
    producer_id: int = 4000
    session_id: int = 77
    throttle: int = 0
    rtt_us: int = 400
    # functional changes for the tests
    value_suffix: bytes = b""
    extra_metadata: bool = False
    produce_error: int = ErrorCode.NONE
    # one Produce per partition, as librdkafka sends them; the order is not a client setting
    per_partition: bool = False
    reverse_partitions: bool = False


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class _Client:
    def __init__(self, w: PcapngWriter, run: Run, client: str, port: int, t: int) -> None:
        self.run = run
        self.client = client
        self.conv = w.conversation(("10.0.0.5", port), ("10.0.0.1", run.broker_port), ts_ns=t)
        self.corr = run.corr_base
        self.t = t

    def exchange(self, key: int, version: int, req: dict, resp: dict) -> None:
        self.corr += 1
        self.t += 3_000_000
        self.conv.client_sends(
            _frame(
                codec.encode_request(
                    key, version, req, correlation_id=self.corr, client_id=self.client
                )
            ),
            ts_ns=self.t,
        )
        self.t += self.run.rtt_us * 1000
        self.conv.server_sends(
            _frame(codec.encode_response(key, version, resp, correlation_id=self.corr)),
            ts_ns=self.t,
        )

    def close(self) -> None:
        self.conv.close(ts_ns=self.t + 1)


def _handshake(c: _Client, run: Run) -> None:
    c.exchange(
        18,
        3,
        {"client_software_name": "kipwire-test", "client_software_version": "1.0"},
        {
            "api_keys": [
                {"api_key": ApiKey.PRODUCE, "min_version": 0, "max_version": 11},
                {"api_key": ApiKey.FETCH, "min_version": 0, "max_version": 16},
                {"api_key": ApiKey.METADATA, "min_version": 0, "max_version": 12},
            ],
            "throttle_time_ms": run.throttle,
        },
    )
    c.exchange(
        3,
        9,
        {"topics": [{"name": t} for t in TOPICS]},
        {
            "throttle_time_ms": run.throttle,
            "brokers": [{"node_id": 1, "host": "10.0.0.1", "port": run.broker_port}],
            "topics": [
                {
                    "name": t,
                    "partitions": [{"partition_index": p, "leader_id": 1} for p in range(n)],
                }
                for t, n in TOPICS.items()
            ],
        },
    )


def _records(run: Run, topic: str, part: int, batch: int) -> bytes:
    recs = [
        {
            "key": f"{topic}-{part}-{batch}-{i}".encode(),
            "value": b"payload %d" % i + run.value_suffix,
            # record timestamps move with the run's clock: normalised away
            "timestamp": run.t0 // 1_000_000 + 10 * i,
        }
        for i in range(3)
    ]
    return build_batch(
        recs,
        compression=run.compression,
        producer_id=run.producer_id,
        producer_epoch=0,
        base_sequence=batch * 3,
    )


def write_workload(path, run: Run) -> None:
    """A producer and a consumer connection: ApiVersions, Metadata, Produce x2, Fetch x2."""
    with PcapngWriter(path) as w:
        prod = _Client(w, run, "orders-producer", run.port_base, run.t0)
        cons = _Client(w, run, "orders-consumer", run.port_base + 1, run.t0 + 1_000_000)
        _handshake(prod, run)
        _handshake(cons, run)
        if run.extra_metadata:
            prod.exchange(3, 9, {"topics": [{"name": "audit"}]}, {"topics": [{"name": "audit"}]})
        batches: dict[tuple[str, int], list[bytes]] = {}
        for b in range(2):
            topic_data = []
            responses = []
            for t, n in TOPICS.items():
                parts, presp = [], []
                for p in range(n):
                    blob = _records(run, t, p, b)
                    batches.setdefault((t, p), []).append(blob)
                    parts.append({"index": p, "records": blob})
                    err = run.produce_error if (t, p, b) == ("orders", 1, 1) else ErrorCode.NONE
                    presp.append({"index": p, "error_code": err, "base_offset": 3 * b})
                topic_data.append({"name": t, "partition_data": parts})
                responses.append({"name": t, "partition_responses": presp})
            v = run.produce_version
            if not run.per_partition:
                prod.exchange(
                    0,
                    v,
                    {"acks": -1, "timeout_ms": 30000, "topic_data": topic_data},
                    {"responses": responses, "throttle_time_ms": run.throttle},
                )
                continue
            singles = [
                (
                    {"name": td["name"], "partition_data": [pd]},
                    {"name": rs["name"], "partition_responses": [pr]},
                )
                for td, rs in zip(topic_data, responses, strict=True)
                for pd, pr in zip(td["partition_data"], rs["partition_responses"], strict=True)
            ]
            for req, resp in reversed(singles) if run.reverse_partitions else singles:
                prod.exchange(
                    0,
                    v,
                    {"acks": -1, "timeout_ms": 30000, "topic_data": [req]},
                    {"responses": [resp], "throttle_time_ms": run.throttle},
                )
        for b in range(2):
            cons.exchange(
                1,
                12,
                {
                    "replica_id": -1,
                    "max_wait_ms": 500,
                    "min_bytes": 1,
                    "session_id": 0 if b == 0 else run.session_id,
                    "session_epoch": 0 if b == 0 else 1,
                    "topics": [
                        {
                            "topic": t,
                            "partitions": [
                                {"partition": p, "fetch_offset": 3 * b} for p in range(n)
                            ],
                        }
                        for t, n in TOPICS.items()
                    ],
                },
                {
                    "throttle_time_ms": run.throttle,
                    "session_id": run.session_id,
                    "responses": [
                        {
                            "topic": t,
                            "partitions": [
                                {
                                    "partition_index": p,
                                    "high_watermark": 6,
                                    "records": batches[(t, p)][b],
                                }
                                for p in range(n)
                            ],
                        }
                        for t, n in TOPICS.items()
                    ],
                },
            )
        prod.close()
        cons.close()


def decoded(tmp_path, name: str, run: Run):
    """Write, decode and store a run's capture; the directory of its three tables."""
    pcap = tmp_path / f"{name}.pcapng"
    write_workload(pcap, run)
    rows = decode_capture(pcap, capture=name)
    assert {r["decode_status"] for r in rows.pdus} == {"ok"}
    return write_tables(rows, tmp_path / name)


# a second run of the same workload: every volatile value differs, no client setting does
VOLATILE_RUN = Run(
    port_base=51000,
    corr_base=1000,
    t0=1_710_000_000_000_000_000,
    broker_port=19092,
    producer_id=9001,
    session_id=4242,
    throttle=15,
    rtt_us=2500,
)


def _functional(report):
    return [d for d in report.differences if d.functional]


def test_schema_is_what_write_tables_writes(tmp_path):
    out = decoded(tmp_path, "base", Run())
    for name, schema in (("pdus", PDUS), ("pairs", PAIRS), ("connections", CONNECTIONS)):
        table = pq.read_table(out / name)
        assert table.schema.remove_metadata() == schema
        assert table.num_rows > 0
    pairs = pq.read_table(out / "pairs").to_pylist()
    assert {p["status"] for p in pairs} == {"answered"}
    assert all(p["rtt_ms"] == pytest.approx(0.4) for p in pairs)


def test_a_capture_compared_with_itself_has_no_difference(tmp_path):
    base = decoded(tmp_path, "base", Run())
    report = compare(base, base)
    assert report.differences == []
    assert report.alignment["matched_connections"] == 2
    assert report.alignment["matched_requests"] == 8
    assert report.alignment["added_requests"] == report.alignment["removed_requests"] == 0
    assert (
        main_compare(
            [str(base), str(base), "--out", str(tmp_path / "r"), "--fail-on", "functional"]
        )
        == 0
    )


def test_volatile_fields_are_normalised_between_runs(tmp_path):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(tmp_path, "cand", VOLATILE_RUN)
    report = compare(base, cand)
    assert _functional(report) == []
    # the runs really differ where normalisation must act
    a, b = (pq.read_table(d / "pdus").to_pylist() for d in (base, cand))
    assert {r["correlation_id"] for r in a}.isdisjoint({r["correlation_id"] for r in b})
    assert {r["orig_p"] for r in a}.isdisjoint({r["orig_p"] for r in b})
    assert {r["ts"] for r in a}.isdisjoint({r["ts"] for r in b})
    assert any('"port":19092' in (r["body_json"] or "") for r in b)
    # RTT moved 0.4 -> 2.5 ms: informational only, never functional
    kinds = {d.kind for d in report.differences}
    assert kinds <= {"rtt"}
    assert "rtt" in kinds
    rtt = {r["api"]: r for r in report.rtt}
    assert rtt["Produce"]["baseline"]["p50"] == pytest.approx(0.4)
    assert rtt["Produce"]["candidate"]["p99"] == pytest.approx(2.5)
    assert (
        main_compare(
            [str(base), str(cand), "--out", str(tmp_path / "r"), "--fail-on", "functional"]
        )
        == 0
    )
    assert (
        main_compare([str(base), str(cand), "--out", str(tmp_path / "r"), "--fail-on", "rtt"]) == 1
    )


def test_compression_change_is_the_only_functional_difference(tmp_path):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(tmp_path, "cand", Run(**{**VOLATILE_RUN.__dict__, "compression": "gzip"}))
    report = compare(base, cand)
    func = _functional(report)
    assert func, "the compression change was not seen"
    for d in func:
        assert (d.kind, d.api_name, d.client_id) == ("changed", "Produce", "orders-producer")
        assert re.fullmatch(
            r"topic_data\[\w+\]\.partition_data\[\d\]\.records\[#0\]\.compression", d.path
        ), d.path
        assert (d.baseline, d.candidate) == ("none", "gzip")
        assert d.baseline_version == d.candidate_version == 9
    # three partitions, two Produce requests: each partition's batch in each request
    assert sorted(d.path for d in func) == sorted(
        f"topic_data[{t}].partition_data[{p}].records[#0].compression"
        for t, n in TOPICS.items()
        for p in range(n)
    )
    assert all(d.count == 2 for d in func)
    # same records, so the per-partition digests agree
    assert not any(d.kind == "records" for d in report.differences)
    produced = [r for r in report.records if r["source"] == "produce"]
    assert len(produced) == 3 and all(r["baseline"] == r["candidate"] for r in produced)
    assert all(r["baseline"]["record_count"] == 6 for r in produced)
    out = tmp_path / "report"
    assert main_compare([str(base), str(cand), "--out", str(out), "--fail-on", "changed"]) == 1
    assert main_compare([str(base), str(cand), "--out", str(out), "--fail-on", "functional"]) == 1
    assert main_compare([str(base), str(cand), "--out", str(out), "--fail-on", "version"]) == 0
    assert main_compare([str(base), str(cand), "--out", str(out)]) == 0
    doc = json.loads((out / "diff.json").read_text())
    assert doc["baseline"]["capture"] == "base" and doc["candidate"]["capture"] == "cand"
    changed = [d for d in doc["differences"] if d["kind"] == "changed"]
    assert len(changed) == 3
    assert set(changed[0]) == {
        "kind",
        "functional",
        "api_key",
        "api_name",
        "client_id",
        "baseline_version",
        "candidate_version",
        "path",
        "baseline",
        "candidate",
        "count",
    }
    assert changed[0]["functional"] is True and changed[0]["api_key"] == ApiKey.PRODUCE


def test_requests_sent_in_another_order_are_matched_not_added(tmp_path):
    base = decoded(tmp_path, "base", Run(per_partition=True))
    cand_run = Run(**{**VOLATILE_RUN.__dict__, "per_partition": True, "reverse_partitions": True})
    cand = decoded(tmp_path, "cand", cand_run)
    report = compare(base, cand)
    assert _functional(report) == []
    changed = Run(per_partition=True, reverse_partitions=True, compression="gzip")
    report = compare(base, decoded(tmp_path, "gzip", changed))
    kinds = {d.kind for d in _functional(report)}
    assert kinds == {"changed"}
    assert all(d.path.endswith(".compression") for d in _functional(report))


def test_produce_version_change_is_a_version_difference(tmp_path):
    base = decoded(tmp_path, "base", Run(produce_version=7))
    cand = decoded(tmp_path, "cand", Run(**{**VOLATILE_RUN.__dict__, "produce_version": 9}))
    report = compare(base, cand)
    func = _functional(report)
    assert len(func) == 1
    (d,) = func
    assert (d.kind, d.api_key, d.api_name, d.client_id) == (
        "version",
        ApiKey.PRODUCE,
        "Produce",
        "orders-producer",
    )
    assert (d.baseline_version, d.candidate_version, d.count) == (7, 9, 2)
    # the counts table keeps the version split
    prod = {
        (r["version"], r["direction"]): (r["baseline"], r["candidate"])
        for r in report.counts
        if r["api"] == "Produce" and r["topic"] == "orders"
    }
    assert prod[(7, "request")] == (2, 0) and prod[(9, "request")] == (0, 2)
    out = tmp_path / "r"
    assert main_compare([str(base), str(cand), "--out", str(out), "--fail-on", "version"]) == 1
    assert main_compare([str(base), str(cand), "--out", str(out), "--fail-on", "changed"]) == 0


def test_added_request_error_code_and_records(tmp_path):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(
        tmp_path,
        "cand",
        Run(
            **{
                **VOLATILE_RUN.__dict__,
                "extra_metadata": True,
                "produce_error": ErrorCode.NOT_LEADER_OR_FOLLOWER,
                "value_suffix": b"!",
            }
        ),
    )
    report = compare(base, cand)
    by_kind: dict[str, list] = {}
    for d in _functional(report):
        by_kind.setdefault(d.kind, []).append(d)
    (added,) = by_kind["added"]
    assert (added.api_name, added.client_id, added.candidate_version, added.count) == (
        "Metadata",
        "orders-producer",
        9,
        1,
    )
    assert "removed" not in by_kind
    (err,) = by_kind["error_code"]
    assert err.path == "responses[orders].partition_responses[1].error_code"
    assert (err.baseline, err.candidate, err.count) == (
        ErrorCode.NONE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        1,
    )
    recs = {d.path for d in by_kind["records"]}
    assert "produce orders-0 value_hash" in recs and "fetch audit-0 value_hash" in recs
    assert not any("key_hash" in p or "record_count" in p for p in recs)
    values = [d for d in by_kind["changed"] if d.path.endswith(".value")]
    assert values and all(d.api_name == "Produce" for d in values)
    counts = by_kind["count"]
    assert {(d.api_name, d.path, d.baseline, d.candidate) for d in counts} == {
        ("Metadata", "request topic=audit", 1, 2),
        ("Metadata", "response topic=audit", 1, 2),
    }
    assert (
        main_compare(
            [str(base), str(cand), "--out", str(tmp_path / "r"), "--fail-on", "error_code"]
        )
        == 1
    )


def _png_ok(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16 : 16 + length]
    (crc,) = struct.unpack(">I", data[16 + length : 20 + length])
    assert crc == zlib.crc32(b"IHDR" + body)
    width, height, depth, color = struct.unpack(">IIBB", body[:10])
    assert width > 0 and height > 0 and (depth, color) == (8, 2)
    # the pixel data inflates to exactly one filter byte plus a row per line
    pos, idat = 8, b""
    while pos < len(data):
        n, k = struct.unpack(">I4s", data[pos : pos + 8])
        if k == b"IDAT":
            idat += data[pos + 8 : pos + 8 + n]
        pos += 12 + n
    assert len(zlib.decompress(idat)) == height * (1 + 3 * width)
    return width, height


def test_html_report_is_self_contained_with_valid_pngs(tmp_path):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(tmp_path, "cand", Run(**{**VOLATILE_RUN.__dict__, "compression": "gzip"}))
    out = tmp_path / "report"
    assert main_compare([str(base), str(cand), "--out", str(out)]) == 0
    page = (out / "report.html").read_text()
    # every plot is inside the page: it reads the same mailed alone or attached to a CI run
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert len(srcs) >= 3 and all(s.startswith("data:image/png;base64,") for s in srcs)
    embedded = {base64.b64decode(s.split(",", 1)[1]) for s in srcs}
    for name in ("request_mix.png", "rtt_all.png", "rtt_Produce.png"):
        assert (out / name).read_bytes() in embedded
    for data in embedded:
        _png_ok(data)
    md = (out / "report.md").read_text()
    assert "](request_mix.png)" in md
    assert "records[#0].compression" in md and "records[#0].compression" in page
    assert "| throttle_time_ms |" in md  # the normalisation table is part of the report


def test_spark_style_dataset_with_part_files(tmp_path):
    """Tables split in several part files next to _SUCCESS, as Spark writes them."""
    base = decoded(tmp_path, "base", Run())
    split = tmp_path / "split"
    for name in ("pdus", "pairs", "connections"):
        table = pq.read_table(base / name)
        (split / name).mkdir(parents=True)
        half = table.num_rows // 2
        pq.write_table(table.slice(0, half), split / name / "part-00000-x.snappy.parquet")
        pq.write_table(table.slice(half), split / name / "part-00001-x.snappy.parquet")
        (split / name / "_SUCCESS").write_bytes(b"")
    assert compare(base, split).differences == []


def test_bad_input_exits_2_with_a_clear_error(tmp_path, capsys):
    base = decoded(tmp_path, "base", Run())
    broken = tmp_path / "broken"
    (broken / "pdus").mkdir(parents=True)
    assert main_compare([str(base), str(broken), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "no `pairs` table" in err or "pdus" in err
    assert main_compare([str(base), str(tmp_path / "nope"), "--out", str(tmp_path / "r")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert (
        main_compare([str(base), str(base), "--out", str(tmp_path / "r"), "--fail-on", "bogus"])
        == 2
    )
    assert "unknown difference kind 'bogus'" in capsys.readouterr().err
    assert main_compare([str(base)]) == 2


def test_fail_on_parsing():
    assert parse_fail_on("functional") == set(FUNCTIONAL_KINDS)
    assert parse_fail_on("version, rtt") == {"version", "rtt"}
    assert parse_fail_on("") == set()
    with pytest.raises(ValueError):
        parse_fail_on("changes")
