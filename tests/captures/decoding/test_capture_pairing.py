"""Decoding and pairing into table rows, with a stand-in codec (the real one: test_capture_real)."""

from __future__ import annotations

import struct

from captures_testkit import fake_codec, request_frame, response_frame
from hypothesis import given, settings
from hypothesis import strategies as st

from kipwire.captures.decoding.pairing import (
    CONNECTION_COLUMNS,
    PAIR_COLUMNS,
    PDU_COLUMNS,
    decode_connection,
)
from kipwire.captures.reading.packets import ACK, PSH, SYN, TcpSegment
from kipwire.captures.reading.reassembly import reassemble
from kipwire.codec import ApiKey, ErrorCode

NO_SUCH_API_KEY = 9000  # far above every key Kafka defines

C = (bytes([10, 0, 0, 1]), 50000)
S = (bytes([10, 0, 0, 2]), 19092)
FAKE = fake_codec()


def seg(src, dst, seq, payload=b"", flags=ACK | PSH):
    return TcpSegment(
        src[0], src[1], dst[0], dst[1], seq & 0xFFFFFFFF, 0, flags, payload, len(payload)
    )


def conversation(reqs, resps, *, syn=True, drop_req=(), drop_resp=()):
    """Segments of a conversation: request i then response i, one frame per segment."""
    out, cseq, sseq, t = [], 100, 900, 0
    if syn:
        out += [(0, seg(C, S, cseq - 1, b"", SYN)), (0, seg(S, C, sseq - 1, b"", SYN | ACK))]
    for i, (q, r) in enumerate(zip(reqs, resps, strict=False)):
        t += 1000
        if i not in drop_req:
            out.append((t, seg(C, S, cseq, q)))
        cseq += len(q)
        t += 500
        if r is not None and i not in drop_resp:
            out.append((t, seg(S, C, sseq, r)))
        sseq += len(r or b"")
    return out


def rows_of(segs, decoder=FAKE):
    (conn,) = reassemble(segs)
    return decode_connection(conn, capture="cap", file="f.pcap", decoder=decoder)


def test_rows_have_the_table_columns_and_pair_up():
    reqs = [request_frame(ApiKey.METADATA, 1, 5), request_frame(ApiKey.PRODUCE, 7, 6, client="p")]
    timed_out = struct.pack(">h", ErrorCode.REQUEST_TIMED_OUT)
    resps = [response_frame(5), response_frame(6, timed_out)]
    rows = rows_of(conversation(reqs, resps))
    assert all(list(r) == list(PDU_COLUMNS) for r in rows.pdus)
    assert all(set(r) == set(PAIR_COLUMNS) for r in rows.pairs)
    assert set(rows.connection) == set(CONNECTION_COLUMNS)
    got = [
        (r["direction"], r["api_key"], r["api_version"], r["correlation_id"], r["decode_status"])
        for r in rows.pdus
    ]
    assert got == [
        ("request", ApiKey.METADATA, 1, 5, "ok"),
        ("request", ApiKey.PRODUCE, 7, 6, "ok"),
        ("response", ApiKey.METADATA, 1, 5, "ok"),
        ("response", ApiKey.PRODUCE, 7, 6, "ok"),
    ]
    assert [p["status"] for p in rows.pairs] == ["answered", "answered"]
    assert [p["rtt_ms"] for p in rows.pairs] == [0.0005, 0.0005]
    assert (
        rows.pairs[1]["error_code"] == ErrorCode.REQUEST_TIMED_OUT
        and rows.pairs[1]["client_id"] == "p"
    )
    assert rows.pdus[0]["api_name"] == "Api3" and rows.pdus[0]["client_id"] == "cli"
    assert rows.pdus[0]["length"] == len(reqs[0]) - 4
    conn = rows.connection
    assert (conn["orig_p"], conn["resp_p"], conn["role_source"]) == (50000, 19092, "syn")
    assert (conn["request_pdus"], conn["response_pdus"], conn["missed_bytes"]) == (2, 2, 0)
    assert conn["request_bytes"] == sum(map(len, reqs))


def test_statuses_unknown_api_unsupported_malformed_request_missing_and_no_response():
    assert NO_SUCH_API_KEY not in set(ApiKey)
    reqs = [
        request_frame(NO_SUCH_API_KEY, 0, 1),  # a key no codec knows
        request_frame(ApiKey.METADATA, 99, 2),  # a version it does not know
        request_frame(ApiKey.METADATA, 1, 3, b"BAD"),  # a body that does not decode
        request_frame(ApiKey.METADATA, 1, 4),  # never answered
    ]
    resps = [response_frame(1), response_frame(2), response_frame(3, b"BAD"), None]
    segs = conversation(reqs, resps)
    segs.append((10**6, seg(S, C, 900 + sum(len(r) for r in resps if r), response_frame(42))))
    rows = rows_of(segs)
    status = [(r["direction"], r["correlation_id"], r["decode_status"]) for r in rows.pdus]
    assert status == [
        ("request", 1, "unknown_api"),
        ("request", 2, "unsupported_version"),
        ("request", 3, "malformed"),
        ("request", 4, "ok"),
        ("response", 1, "unknown_api"),
        ("response", 2, "unsupported_version"),
        ("response", 3, "malformed"),
        ("response", 42, "request_missing"),
    ]
    assert rows.pdus[2]["client_id"] == "cli"  # read from the raw header when the body fails
    # a response that did not decode shows in its pair
    assert [p["status"] for p in rows.pairs] == [
        "answered_unknown_api",
        "answered_unsupported_version",
        "answered_malformed",
        "no_response",
        "orphan_response",
    ]


def test_capture_cut_mid_connection_gives_request_missing():
    reqs = [request_frame(ApiKey.METADATA, 1, i) for i in range(1, 5)]
    resps = [response_frame(i) for i in range(1, 5)]
    # the capture starts after the first request was sent: no SYN, no request 1
    segs = [s for s in conversation(reqs, resps, syn=False) if s[0] > 1000]
    rows = rows_of(segs)
    resp = [
        (r["correlation_id"], r["decode_status"]) for r in rows.pdus if r["direction"] == "response"
    ]
    assert resp == [(1, "request_missing"), (2, "ok"), (3, "ok"), (4, "ok")]
    assert rows.connection["role_source"] == "kafka"


def test_gap_rows_and_resync_with_correlation_ids():
    reqs = [request_frame(ApiKey.METADATA, 1, i, b"z" * 30) for i in range(10, 16)]
    resps = [response_frame(i, b"\x00\x00" + b"w" * 40) for i in range(10, 16)]
    rows = rows_of(conversation(reqs, resps, drop_req={2}, drop_resp={3}))
    req = [
        (r["decode_status"], r["correlation_id"], r["length"])
        for r in rows.pdus
        if r["direction"] == "request"
    ]
    assert req == [
        ("ok", 10, 43),
        ("ok", 11, 43),
        ("gap", None, 47),
        ("ok", 13, 43),
        ("ok", 14, 43),
        ("ok", 15, 43),
    ]
    resp = [
        (r["decode_status"], r["correlation_id"]) for r in rows.pdus if r["direction"] == "response"
    ]
    # request 12 was lost, so its response cannot be decoded; response 13 was lost
    assert resp == [
        ("ok", 10),
        ("ok", 11),
        ("request_missing", 12),
        ("gap", None),
        ("ok", 14),
        ("ok", 15),
    ]
    assert [(p["correlation_id"], p["status"]) for p in rows.pairs] == [
        (10, "answered"),
        (11, "answered"),
        (13, "no_response"),
        (14, "answered"),
        (15, "answered"),
        (12, "orphan_response"),
    ]
    assert rows.connection["missed_bytes"] == len(reqs[2]) + len(resps[3])


def test_gap_inside_a_frame_then_resync_by_search():
    reqs = [request_frame(ApiKey.METADATA, 1, i, b"z" * 30) for i in range(1, 6)]
    data = b"".join(reqs)
    # 47-byte frames; bytes 55..75 lost: frame 2 is cut, its size prefix survives, so its end
    # (and the next frame's start) is known without searching
    segs = [
        (0, seg(C, S, 99, b"", SYN)),
        (1, seg(C, S, 100, data[:55])),
        (2, seg(C, S, 175, data[75:])),
    ]
    rows = rows_of(segs)
    req = [
        (r["decode_status"], r["stream_offset"], r["captured_bytes"])
        for r in rows.pdus
        if r["direction"] == "request"
    ]
    assert req == [
        ("ok", 0, 47),
        ("truncated", 47, 27),
        ("gap", 55, 0),
        ("ok", 94, 47),
        ("ok", 141, 47),
        ("ok", 188, 47),
    ]
    # lose part of frame 2's size prefix: the boundary is searched for and checked against the
    # correlation ids (1, then 3); the bytes passed over are a malformed row with their count
    segs = [
        (0, seg(C, S, 99, b"", SYN)),
        (1, seg(C, S, 100, data[:50])),
        (2, seg(C, S, 152, data[52:])),
    ]
    rows = rows_of(segs)
    req = [
        (r["decode_status"], r["length"], r["correlation_id"])
        for r in rows.pdus
        if r["direction"] == "request"
    ]
    assert req == [
        ("ok", 43, 1),
        ("truncated", None, None),
        ("gap", 2, None),
        ("malformed", 42, None),
        ("ok", 43, 3),
        ("ok", 43, 4),
        ("ok", 43, 5),
    ]
    assert "42 bytes skipped" in rows.pdus[3]["decode_error"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 200), min_size=1, max_size=12),
    st.sets(st.integers(0, 11)),
    st.sets(st.integers(0, 11)),
)
def test_every_captured_byte_is_accounted_for(sizes, drop_req, drop_resp):
    reqs = [request_frame(ApiKey.FETCH, 4, 100 + i, b"q" * n) for i, n in enumerate(sizes)]
    resps = [response_frame(100 + i, b"\x00\x00" + b"r" * n) for i, n in enumerate(sizes)]
    segs = conversation(reqs, resps, drop_req=drop_req, drop_resp=drop_resp)
    (conn,) = reassemble(segs)
    rows = decode_connection(conn, capture="c", file="f", decoder=FAKE)
    for direction, stream in (("request", conn.to_server), ("response", conn.to_client)):
        mine = [r for r in rows.pdus if r["direction"] == direction]
        assert sum(r["captured_bytes"] for r in mine) == stream.captured
        assert sum(r["length"] for r in mine if r["decode_status"] == "gap") == stream.missing
    kept_corrs = {100 + i for i in range(len(sizes)) if i not in drop_req}
    for r in rows.pdus:
        if r["direction"] == "request" and r["decode_status"] == "ok":
            assert r["correlation_id"] in kept_corrs
        if r["direction"] == "response" and r["decode_status"] == "ok":
            assert r["correlation_id"] in kept_corrs  # paired only with a captured request
