"""One file to rows: damaged files still give rows, non-TCP packets are counted; tcpflow folders
give connections with their roles decided."""

from __future__ import annotations

import io

from captures_testkit import ether, fake_codec, ipv4, pcap_bytes, request_frame, response_frame

from kipwire.captures.decoding.pairing import decode_connection
from kipwire.captures.decoding.pipeline import decode_capture, read_flow_dir
from kipwire.captures.reading.pcap import PcapngWriter
from kipwire.codec import ApiKey


def _recording() -> bytes:
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        conv = w.conversation(("10.0.0.1", 40001), ("10.0.0.2", 19092), ts_ns=10**18)
        for i in range(3):
            conv.client_sends(request_frame(ApiKey.METADATA, 1, i, b"a" * 100), ts_ns=10**18 + i)
            conv.server_sends(response_frame(i, b"\0\0" + b"b" * 100), ts_ns=10**18 + i)
        conv.close(ts_ns=10**18 + 10)
    return buf.getvalue()


def test_truncated_file_still_gives_rows():
    data = _recording()
    rows = decode_capture(data[:-100], capture="c", decoder=fake_codec())
    statuses = [r["decode_status"] for r in rows.pdus]
    assert statuses.count("ok") >= 4
    assert rows.issues and rows.issues[0].status == "truncated"
    file_rows = [r for r in rows.pdus if r["flow_uid"] is None]
    assert [r["decode_status"] for r in file_rows] == ["truncated"]


def test_non_tcp_packets_are_counted_by_reason():
    arp = ether(b"\0" * 28, 0x0806)
    udp = ether(ipv4("10.0.0.1", "10.0.0.2", b"\0" * 8, proto=17))
    rows = decode_capture(pcap_bytes([(0, arp), (1000, udp)]), capture="c", decoder=fake_codec())
    assert rows.stats.packets == 2 and rows.stats.tcp == 0
    assert dict(rows.stats.skipped) == {"ethertype 0x0806": 1, "IP protocol 17": 1}
    assert rows.pdus == [] and rows.connections == []


def test_whole_recording_round_trips_to_rows():
    rows = decode_capture(_recording(), capture="c", file="rec.pcapng", decoder=fake_codec())
    assert [r["decode_status"] for r in rows.pdus] == ["ok"] * 6
    assert (
        rows.connections[0]["first_ts"] == 10**18 and rows.connections[0]["packets"] == 12
    )  # 3 + 6 + 3
    assert {r["file"] for r in rows.pdus} == {"rec.pcapng"}


def test_flow_directory_decodes_with_roles_from_the_payload(tmp_path):
    reqs = [request_frame(ApiKey.METADATA, 1, i) for i in (1, 2)]
    resps = [response_frame(i) for i in (1, 2)]
    # the broker listens on a port above the client's: the payload, not the port, decides
    (tmp_path / "010.000.000.001.01234-010.000.000.002.40000").write_bytes(b"".join(reqs))
    (tmp_path / "010.000.000.002.40000-010.000.000.001.01234").write_bytes(b"".join(resps))
    (tmp_path / "report.xml").write_text("<dfxml/>")
    (conn,) = read_flow_dir(tmp_path)
    assert conn.server[1] == 40000 and conn.role_source == "kafka"
    rows = decode_connection(conn, capture="c", file=str(tmp_path), decoder=fake_codec())
    got = [(r["direction"], r["correlation_id"], r["decode_status"]) for r in rows.pdus]
    assert got == [
        ("request", 1, "ok"),
        ("request", 2, "ok"),
        ("response", 1, "ok"),
        ("response", 2, "ok"),
    ]
    assert [p["status"] for p in rows.pairs] == ["answered", "answered"]


def test_lone_direction_file(tmp_path):
    (tmp_path / "010.000.000.001.50000-010.000.000.002.09092").write_bytes(
        request_frame(ApiKey.PRODUCE, 3, 9)
    )
    (conn,) = read_flow_dir(tmp_path, broker_ports=[9092])
    assert conn.server[1] == 9092 and conn.to_client.captured == 0
