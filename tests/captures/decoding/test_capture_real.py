"""Real captures made by other projects (../shared/captures), decoded with the real codec."""

from __future__ import annotations

import subprocess

import pytest
from captures_testkit import SHARED_CAPTURES, TSHARK

from kipwire.captures.decoding.pipeline import decode_capture
from kipwire.captures.reading.pcap import scan_index
from kipwire.codec import ErrorCode

codec = pytest.importorskip("kipwire.codec")
if not hasattr(codec, "decode_request"):
    pytest.skip("codec.decode_request is not there yet", allow_module_level=True)

DF = "deepflow/"

# per file: (api, version, correlation id) of each request, answered in the same order; the
# mixed file has three pairs on two connections, go-sniffer two connections
EXPECTED = {
    DF + "00-produce-v2.pcap": [("Produce", 2, 1)],
    DF + "00-produce-v7-sw8.pcap": [("Produce", 7, 1)],
    DF + "00-produce-v9.pcap": [("Produce", 9, 47)],
    DF + "01-fetch-v12-ok.pcap": [("Fetch", 12, 15603)],
    DF + "01-fetch-v12-perf.pcap": [("Fetch", 12, 20)],
    DF + "01-fetch-v12-unknown.pcap": [("Fetch", 12, 20)],
    DF + "11-join-group-v7.pcap": [("JoinGroup", 7, 120)],
    DF + "13-leave-group-v4.pcap": [("LeaveGroup", 4, 201)],
    DF + "14-sync-group-v5.pcap": [("SyncGroup", 5, 120)],
    DF + "18-api-versions-v3.pcap": [("ApiVersions", 3, 2)],
    DF + "mixed-with-unsupported.pcap": [
        ("Fetch", 13, 15551976),
        ("OffsetCommit", 8, 15551977),
        ("Heartbeat", 4, 15551978),
    ],
    "go-sniffer/kafka.pcap": [("Metadata", 0, 1), ("Produce", 1, 1)],
}

needs_shared = pytest.mark.skipif(
    not SHARED_CAPTURES.is_dir(), reason="../shared/captures is absent"
)


@needs_shared
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_pdu_decodes_and_pairs(name):
    path = SHARED_CAPTURES / name
    rows = decode_capture(path, capture="shared")
    assert rows.stats.packets == rows.stats.tcp and not rows.issues
    reqs = sorted(
        (r["api_name"], r["api_version"], r["correlation_id"], r["decode_status"])
        for r in rows.pdus
        if r["direction"] == "request"
    )
    resps = sorted(
        (r["api_name"], r["api_version"], r["correlation_id"], r["decode_status"])
        for r in rows.pdus
        if r["direction"] == "response"
    )
    want = sorted((*e, "ok") for e in EXPECTED[name])
    assert reqs == want and resps == want
    assert all(p["status"] == "answered" and p["rtt_ms"] >= 0 for p in rows.pairs)
    assert all(r["body_json"] for r in rows.pdus)
    for conn in rows.connections:
        # the broker is the resp side: 9092 or 36333, found without assuming either
        assert conn["resp_p"] in (9092, 36333) and conn["missed_bytes"] == 0
        assert conn["request_bytes"] + conn["response_bytes"] == sum(
            r["captured_bytes"] for r in rows.pdus if r["flow_uid"] == conn["flow_uid"]
        )


@needs_shared
def test_known_facts_of_the_shared_captures():
    rows = decode_capture(SHARED_CAPTURES / DF / "00-produce-v9.pcap")
    req = rows.pdus[0]
    assert req["topics"] == ["zqy-test"] and req["record_count"] == 1
    assert req["client_id"] == "console-producer" and req["header_version"] == 2
    assert '"record_count":1' in req["body_json"]  # records expanded in the JSON
    # default label: the name of the file given, not its parent folder
    assert rows.pdus[0]["capture"] == "00-produce-v9.pcap"
    av = decode_capture(SHARED_CAPTURES / DF / "18-api-versions-v3.pcap").pdus[1]
    assert av["header_version"] == 0 and av["error_code"] == ErrorCode.NONE
    go = decode_capture(SHARED_CAPTURES / "go-sniffer" / "kafka.pcap")
    assert len(go.connections) == 2 and {c["role_source"] for c in go.connections} == {"syn"}


@needs_shared
def test_copy_cut_mid_connection_gives_request_missing(tmp_path):
    src = SHARED_CAPTURES / DF / "mixed-with-unsupported.pcap"
    data = src.read_bytes()
    offsets = list(scan_index(data).offsets)
    # keep the global header, drop the first three packets (two requests go with them)
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:24] + data[offsets[3] :])
    rows = decode_capture(cut)
    resps = sorted(
        (r["correlation_id"], r["decode_status"]) for r in rows.pdus if r["direction"] == "response"
    )
    assert resps == [(15551976, "request_missing"), (15551977, "request_missing"), (15551978, "ok")]
    assert sorted(p["status"] for p in rows.pairs) == [
        "answered",
        "orphan_response",
        "orphan_response",
    ]


@needs_shared
@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark)")
@pytest.mark.parametrize(
    "name",
    [
        "go-sniffer/kafka.pcap",
        DF + "00-produce-v2.pcap",
        DF + "00-produce-v7-sw8.pcap",
        DF + "mixed-with-unsupported.pcap",
    ],
)
def test_tshark_agrees_on_request_headers(name):
    path = SHARED_CAPTURES / name
    out = subprocess.run(
        [
            TSHARK,
            "-r",
            str(path),
            "-d",
            "tcp.port==9092,kafka",
            "-d",
            "tcp.port==36333,kafka",
            "-Y",
            "kafka.request_key",
            "-T",
            "fields",
            "-e",
            "kafka.request_key",
            "-e",
            "kafka.api_version",
            "-e",
            "kafka.correlation_id",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    theirs = sorted(tuple(int(x) for x in line.split("\t")) for line in out.splitlines() if line)
    rows = decode_capture(path)
    ours = sorted(
        (r["api_key"], r["api_version"], r["correlation_id"])
        for r in rows.pdus
        if r["direction"] == "request"
    )
    assert theirs and theirs == ours
