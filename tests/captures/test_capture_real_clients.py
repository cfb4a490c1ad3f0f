"""Captures made here: real clients against librdkafka's mock cluster, recorded with tcpdump.

One mixed capture holds a confluent-kafka producer (gzip, keys, headers) and group consumer,
a kafka-python 3.0.12 producer and consumer pinned to `api_version=(2, 3)`, and a kafka-python
client that does not pin it. It is decoded without Spark (and once with the Spark job) and
checked: every payload byte in a PDU, every response paired, every PDU `ok` except the mock's
two known wire defects (below), produced keys and values in Produce and Fetch bodies, and tshark
agreeing on the headers. Then producer-only runs differing only in `compression.type` are
compared: exactly that change is reported.

The mock's defects, seen in these captures and kept visible as `malformed`:

- ApiVersions v3+ requests (the mock supports up to v2) get error 35 UNSUPPORTED_VERSION in a
  body that is neither v0 (KIP-511: the broker answers in v0) nor the requested version: a
  one-byte varint count, one 6-byte entry (ApiVersions 0..2) without tagged fields, a 4-byte
  throttle time. librdkafka retries with v0; unpinned kafka-python cannot read it and retries
  until its bootstrap timeout.
- Metadata responses in flexible versions end with two empty tagged-field bytes: the handler
  writes one and `rd_kafka_mock_connection_send_response` appends another.
"""

from __future__ import annotations

import base64
import json
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from captures_testkit import TSHARK

pytest.importorskip("confluent_kafka", reason="confluent-kafka (librdkafka mock cluster) absent")
codec = pytest.importorskip("kipwire.codec")
if not hasattr(codec, "decode_request"):
    pytest.skip("codec.decode_request is not there yet", allow_module_level=True)

import inspect  # noqa: E402

import real_clients_kit as kit  # noqa: E402

from kipwire.captures.comparing.compare import compare  # noqa: E402
from kipwire.captures.decoding.pipeline import decode_capture  # noqa: E402
from kipwire.captures.engines.schema import write_tables  # noqa: E402
from kipwire.codec import ApiKey, ErrorCode  # noqa: E402

# The mocks' two defects are bytes after a body; a codec that ignores them, as Kafka does,
# decodes both replies (the ApiVersions one as its v0 error form)
needs_trailing = pytest.mark.skipif(
    "trailing" not in inspect.signature(codec.decode_request).parameters,
    reason="this codec has no decode_request(trailing='ignore') yet",
)

N_CK = 12
N_KP = 6
CK_TOPIC = "ck-topic"
KP_TOPIC = "kp-topic"


@pytest.fixture(scope="module")
def mock():
    cluster = kit.start_mock_cluster(3)
    yield cluster
    cluster.close()


def _record(path: Path, mock: kit.MockCluster, workload) -> tuple[Path, object]:
    try:
        return kit.record(path, mock.ports, workload)
    except kit.CaptureUnavailable as exc:
        pytest.skip(f"cannot capture on loopback: {exc}")


@pytest.fixture(scope="module")
def mixed(mock, tmp_path_factory):
    """The mixed capture, decoded; plus what each client did."""
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    boot = mock.bootstrap
    ck_msgs = kit.messages("ck", N_CK)
    kp_msgs = kit.messages("kp", N_KP)

    def workload():
        done = {}
        done["ck_produced"] = kit.ck_produce(
            boot, CK_TOPIC, ck_msgs, client_id="ck-prod", **{"compression.type": "gzip"}
        )
        done["ck_consumed"] = kit.ck_consume(
            boot, CK_TOPIC, N_CK, client_id="ck-cons", group="ck-group"
        )
        done["kp_produced"] = kit.kp_produce(
            boot, KP_TOPIC, kp_msgs, client_id="kp-prod", compression_type="gzip"
        )
        done["kp_consumed"] = kit.kp_consume(boot, KP_TOPIC, N_KP, client_id="kp-cons")
        # not pinned: kafka-python asks ApiVersions v4 and cannot read the mock's answer
        try:
            kafka.KafkaProducer(
                bootstrap_servers=boot,
                client_id="kp-unpinned",
                bootstrap_timeout_ms=1500,
                request_timeout_ms=1000,
                max_block_ms=1500,
            ).close(timeout=1)
            done["unpinned"] = "connected"
        except kafka.errors.KafkaError as exc:
            done["unpinned"] = type(exc).__name__
        return done

    path, done = _record(tmp_path_factory.mktemp("mixed") / "mixed.pcap", mock, workload)
    rows = decode_capture(path, capture="mixed")
    return {"path": path, "rows": rows, "done": done, "ck": ck_msgs, "kp": kp_msgs}


def _client(rows, client_id, direction=None):
    return [
        r
        for r in rows.pdus
        if r["client_id"] == client_id and (direction is None or r["direction"] == direction)
    ]


def _batches_in(body_json: str) -> list[dict]:
    """The record batches of a body whose `records` fields the decoder expanded."""
    out: list[dict] = []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "records" and isinstance(x, list):
                    out.extend(b for b in x if isinstance(b, dict))
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(json.loads(body_json))
    return out


def _records_in(body_json: str) -> list[tuple[bytes, bytes]]:
    """(key, value) of every record in the body's expanded batches."""
    return [
        (base64.b64decode(r["key"]), base64.b64decode(r["value"]))
        for b in _batches_in(body_json)
        for r in b["records"]
    ]


# ---------------------------------------------------------------------------------------------
# the mixed capture


def test_the_clients_did_their_work(mixed):
    done = mixed["done"]
    assert done["ck_produced"] == N_CK and done["kp_produced"] == N_KP
    assert sorted(done["ck_consumed"]) == sorted((k, v) for k, v, _ in mixed["ck"])
    assert sorted(done["kp_consumed"]) == sorted((k, v) for k, v, _ in mixed["kp"])
    assert done["unpinned"] != "connected"  # it cannot negotiate with the mock


def test_every_payload_byte_is_in_a_pdu(mixed):
    rows = mixed["rows"]
    st = rows.stats
    # the flush marker is the only packet that is not TCP
    assert st.tcp == st.packets - 1 and sum(st.skipped.values()) == 1 and not rows.issues
    assert st.truncated == 0
    assert {r["decode_status"] for r in rows.pdus}.isdisjoint({"gap", "truncated"})
    seen = 0
    for conn in rows.connections:
        assert conn["missed_bytes"] == 0
        pdus = [r for r in rows.pdus if r["flow_uid"] == conn["flow_uid"]]
        for direction, total in (("request", "request_bytes"), ("response", "response_bytes")):
            mine = [r for r in pdus if r["direction"] == direction]
            # every frame is its size prefix plus `length` bytes, end to end
            assert sum(r["length"] + 4 for r in mine) == conn[total]
            assert sum(r["captured_bytes"] for r in mine) == conn[total]
            offsets = sorted((r["stream_offset"], r["length"] + 4) for r in mine)
            pos = 0
            for off, n in offsets:
                assert off == pos
                pos += n
        seen += conn["request_bytes"] + conn["response_bytes"]
    # and the connections hold every TCP payload byte of the file, counted by tshark too
    if TSHARK:
        out = _tshark(mixed["path"], [], "tcp.len")
        assert seen == sum(int(x) for x in out if x)
    assert seen > 10_000


@needs_trailing
def test_every_pdu_decodes_the_mocks_two_defects_as_trailing_bytes(mixed):
    rows = mixed["rows"]
    odd = Counter()
    for r in rows.pdus:
        assert r["decode_status"] == "ok", r
        assert r["body_json"] and r["api_name"] and r["correlation_id"] is not None
        if not r["trailing_bytes"]:
            continue
        assert r["direction"] == "response", r
        if r["api_key"] == ApiKey.API_VERSIONS and r["api_version"] >= 3:
            # UNSUPPORTED_VERSION in the v0 layout, then 5 bytes the asked version lacks
            assert (r["length"], r["error_code"], r["trailing_bytes"]) == (
                17,
                ErrorCode.UNSUPPORTED_VERSION,
                5,
            ), r
            odd["apiversions"] += 1
        elif r["api_key"] == ApiKey.METADATA and r["api_version"] >= 9:
            assert r["trailing_bytes"] == 1, r
            odd["metadata"] += 1
        else:
            raise AssertionError(f"unexpected bytes after a body: {r}")
    # librdkafka meets both on every connection (ApiVersions v3 first); the pinned kafka-python
    # clients never do (ApiVersions v2, Metadata v8)
    assert odd["apiversions"] >= 4 and odd["metadata"] >= 2
    for cid in ("kp-prod", "kp-cons"):
        mine = _client(rows, cid)
        assert mine and all(r["decode_status"] == "ok" for r in mine)
        assert {r["api_version"] for r in mine if r["api_key"] == ApiKey.API_VERSIONS} == {2}


def test_every_response_is_paired(mixed):
    rows = mixed["rows"]
    assert {r["decode_status"] for r in rows.pdus}.isdisjoint({"request_missing"})
    status = Counter(p["status"] for p in rows.pairs)
    assert status["orphan_response"] == 0 and status["answered"] > 50
    requests = Counter(
        (r["flow_uid"], r["correlation_id"]) for r in rows.pdus if r["direction"] == "request"
    )
    assert all(n == 1 for n in requests.values())
    # a request can go unanswered only when its client closed the connection first: then it
    # and every later request on that connection are unanswered (a broker answers in order),
    # and the first of them is a consumer's long-poll Fetch
    by_flow: dict[str, list[dict]] = {}
    for p in rows.pairs:
        by_flow.setdefault(p["flow_uid"], []).append(p)
    index = {
        (r["flow_uid"], r["correlation_id"]): r["pdu_index"]
        for r in rows.pdus
        if r["direction"] == "request"
    }
    for flow, pairs in by_flow.items():
        pairs.sort(key=lambda p: index[(flow, p["correlation_id"])])
        statuses = [p["status"] for p in pairs]
        k = statuses.count("no_response")
        assert statuses == ["answered"] * (len(pairs) - k) + ["no_response"] * k, statuses
        assert all(p["rtt_ms"] >= 0 for p in pairs[: len(pairs) - k])
        if k:
            first = pairs[len(pairs) - k]
            if first["api_key"] in (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY):
                # librdkafka (KIP-714) may close with its telemetry request still in flight
                assert first["client_id"] in ("ck-prod", "ck-cons"), pairs[-k:]
                continue
            if first["api_key"] == ApiKey.FIND_COORDINATOR:
                # librdkafka's consumer drops its bootstrap connection once it knows the real
                # brokers, even with a FindCoordinator sent on it still unanswered (seen in CI)
                assert first["client_id"] == "ck-cons", pairs[-k:]
                continue
            # either consumer may close with its long poll in flight
            assert first["api_key"] == ApiKey.FETCH, pairs[-k:]
            assert first["client_id"] in ("ck-cons", "kp-cons"), pairs[-k:]


def test_produced_records_in_produce_and_fetch_bodies(mixed):
    rows = mixed["rows"]
    for cid, cons, msgs, codec_name in (
        ("ck-prod", "ck-cons", mixed["ck"], "gzip"),
        ("kp-prod", "kp-cons", mixed["kp"], "gzip"),
    ):
        want = sorted((k, v) for k, v, _ in msgs)
        produce = [r for r in _client(rows, cid, "request") if r["api_key"] == ApiKey.PRODUCE]
        assert produce and all(r["decode_status"] == "ok" for r in produce)
        got = sorted(kv for r in produce for kv in _records_in(r["body_json"]))
        assert got == want
        assert sum(r["record_count"] for r in produce) == len(msgs)
        batches = [b for r in produce for b in _batches_in(r["body_json"])]
        assert batches and {b["compression"] for b in batches} == {codec_name}
        # headers survive too (kafka-python and librdkafka both send them)
        body = json.loads(produce[0]["body_json"])
        assert '"seq"' in json.dumps(body)
        fetched = {
            kv
            for r in _client(rows, cons, "response")
            if r["api_key"] == ApiKey.FETCH
            for kv in _records_in(r["body_json"])
        }
        assert fetched == set(want)


def test_the_mocks_answer_to_unpinned_kafka_python(mixed):
    rows = mixed["rows"]
    reqs = _client(rows, "kp-unpinned", "request")
    resps = _client(rows, "kp-unpinned", "response")
    # kafka-python 3.0.12 opens with ApiVersions v4 and, unable to read the answer, tries again
    assert reqs and {(r["api_key"], r["api_version"], r["decode_status"]) for r in reqs} == {
        (ApiKey.API_VERSIONS, 4, "ok")
    }
    assert len(resps) == len(reqs)
    assert {(r["api_version"], r["length"], r["error_code"]) for r in resps} == {
        (4, 17, ErrorCode.UNSUPPORTED_VERSION)
    }
    pairs = [p for p in rows.pairs if p["client_id"] == "kp-unpinned"]
    assert len(pairs) == len(reqs) and {p["status"] for p in pairs} == {"answered"}
    if TSHARK:
        # the raw bytes, by tshark: error 35 (UNSUPPORTED_VERSION), varint count 1, one entry
        # ApiVersions 0..2 without tagged fields, throttle 0
        flows = {(r["orig_p"], r["resp_p"]) for r in resps}
        out = _tshark(mixed["path"], [], "tcp.srcport", "tcp.dstport", "tcp.payload")
        payloads = [
            bytes.fromhex(cols[2])
            for cols in (line.split("\t") for line in out)
            if len(cols) == 3 and cols[2] and (int(cols[1]), int(cols[0])) in flows
        ]
        assert len(payloads) == len(resps)
        for p in payloads:
            size, corr = struct.unpack(">ii", p[:8])
            assert size == 17 and p[8:] == bytes.fromhex("0023 01 0012 0000 0002 00000000")


def _tshark(path: Path, ports, *fields: str) -> list[str]:
    cmd = [TSHARK, "-r", str(path), "-T", "fields"]
    for p in ports:
        cmd += ["-d", f"tcp.port=={p},kafka"]
    for f in fields:
        cmd += ["-e", f]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark)")
def test_tshark_agrees_on_headers(mixed, mock):
    rows = mixed["rows"]
    out = _tshark(
        mixed["path"],
        mock.ports,
        "kafka.request_key",
        "kafka.api_version",
        "kafka.correlation_id",
        "tcp.dstport",
    )
    theirs_req, theirs_resp = Counter(), Counter()
    for line in out:
        key, ver, corr, dport = (line.split("\t") + ["", "", "", ""])[:4]
        if not corr:
            continue
        corrs = corr.split(",")
        if key:
            for k, v, c in zip(key.split(","), ver.split(","), corrs, strict=False):
                theirs_req[(int(k), int(v), int(c))] += 1
        elif int(dport) not in mock.ports:
            for c in corrs:
                theirs_resp[int(c)] += 1
    ours_req = Counter(
        (r["api_key"], r["api_version"], r["correlation_id"])
        for r in rows.pdus
        if r["direction"] == "request"
    )
    ours_resp = Counter(r["correlation_id"] for r in rows.pdus if r["direction"] == "response")
    assert theirs_req == ours_req
    assert theirs_resp == ours_resp


def test_spark_job_agrees(mixed, tmp_path):
    pytest.importorskip("pyspark")
    import pyarrow.parquet as pq

    from kipwire.captures.engines.spark_job import run_decode, session

    spark = session("local[2]")
    try:
        run_decode([str(mixed["path"])], tmp_path / "out", spark=spark, name="mixed")
    finally:
        spark.stop()
    pdus = pq.read_table(tmp_path / "out" / "pdus").to_pylist()
    pairs = pq.read_table(tmp_path / "out" / "pairs").to_pylist()

    def key(r):
        return (
            r["flow_uid"],
            r["direction"],
            r["pdu_index"],
            r["length"],
            r["api_key"],
            r["api_version"],
            r["correlation_id"],
            r["decode_status"],
            r["body_json"],
        )

    assert sorted(map(key, pdus), key=str) == sorted(map(key, mixed["rows"].pdus), key=str)
    assert Counter(p["status"] for p in pairs) == Counter(p["status"] for p in mixed["rows"].pairs)


# ---------------------------------------------------------------------------------------------
# regression compare on real traffic


def _producer_run(mock, tmp_path_factory, name: str, compression: str) -> Path:
    """Decoded tables of a producer-only run: the same 16 messages each time.

    What librdkafka does on its own schedule is kept out of the capture, so that two runs
    differ only by what the test changes: the producer connects, learns the topic and reaches
    the partition's leader (a warm-up message) before tcpdump starts, and every message goes to
    partition 0 (librdkafka sends one Produce request per partition, in an order that rotates
    between runs). Recorded: one Produce request carrying one batch, and its response.
    """
    from confluent_kafka import Producer

    msgs = kit.messages("cmp", 16)
    p = Producer(
        {
            "bootstrap.servers": mock.bootstrap,
            "client.id": "cmp-prod",
            "compression.type": compression,
            "linger.ms": 1000,  # flush() sends everything at once, whatever the timing
            "batch.num.messages": 1000,
            "enable.metrics.push": False,
            "log_level": 3,
        }
    )
    delivered: list = []

    def on_delivery(err, msg):
        delivered.append(err)

    p.produce("cmp-topic", key=b"warm-up", value=b"warm-up", partition=0, on_delivery=on_delivery)
    assert p.flush(20) == 0 and delivered == [None]

    def workload():
        for key, value, headers in msgs:
            p.produce(
                "cmp-topic",
                key=key,
                value=value,
                headers=headers,
                partition=0,
                on_delivery=on_delivery,
            )
        return p.flush(20)

    d = tmp_path_factory.mktemp(name)
    path, left = _record(d / f"{name}.pcap", mock, workload)
    kit.close_client(p)
    assert left == 0 and delivered == [None] * (1 + len(msgs))
    rows = decode_capture(path, capture=name)
    produce = [
        r for r in rows.pdus if r["api_key"] == ApiKey.PRODUCE and r["direction"] == "request"
    ]
    assert [r["record_count"] for r in produce] == [len(msgs)]
    return write_tables(rows, d / "tables")


@pytest.fixture(scope="module")
def runs(mock, tmp_path_factory):
    return {
        "none-1": _producer_run(mock, tmp_path_factory, "none-1", "none"),
        "none-2": _producer_run(mock, tmp_path_factory, "none-2", "none"),
        "gzip": _producer_run(mock, tmp_path_factory, "gzip", "gzip"),
    }


def test_compare_a_run_with_itself(runs):
    report = compare(runs["none-1"], runs["none-1"])
    assert report.functional == [] and report.differences == []
    assert report.alignment["matched_requests"] > 0


def test_compare_two_runs_of_the_same_workload(runs):
    report = compare(runs["none-1"], runs["none-2"])
    assert report.functional == []


def test_compare_reports_exactly_the_compression_change(runs):
    report = compare(runs["none-1"], runs["gzip"])
    functional = report.functional
    assert functional, "the compression change was not reported"
    for d in functional:
        assert (d.kind, d.api_name) == ("changed", "Produce"), d
        assert d.path.endswith(".compression"), d
        assert (d.baseline, d.candidate) == ("none", "gzip"), d
    # one per Produce request: the records themselves are the same
    produces = sum(
        r["candidate"]
        for r in report.counts
        if r["api"] == "Produce" and r["direction"] == "request"
    )
    assert sum(d.count for d in functional) == produces > 0
    assert not [d for d in report.differences if d.kind == "records"]
