"""tcpflow-style per-direction stream files as input."""

from __future__ import annotations

import ipaddress

from captures_testkit import fake_codec, request_frame, response_frame

from kipwire.captures.pairing import decode_connection
from kipwire.captures.tcpflow import parse_flow_name, read_flow_dir


def test_parse_tcpflow_names():
    n = parse_flow_name("010.000.000.001.45678-010.000.000.002.09092")
    assert n.src == (ipaddress.ip_address("10.0.0.1").packed, 45678)
    assert n.dst == (ipaddress.ip_address("10.0.0.2").packed, 9092) and n.conn == 0
    n = parse_flow_name("/x/192.168.001.010.00123-192.168.001.011.36333--7c2")
    assert (n.vlan, n.conn, n.dst[1]) == (7, 2, 36333)
    n = parse_flow_name("fe80:0000:0000:0000:0000:0000:0000:0001.50000-fe80::2.9092")
    assert n.src[0] == ipaddress.ip_address("fe80::1").packed
    assert parse_flow_name("report.xml") is None
    assert parse_flow_name("300.000.000.001.1-1.2.3.4.5") is None


def test_flow_directory_decodes_with_roles_from_the_payload(tmp_path):
    reqs = [request_frame(3, 1, i) for i in (1, 2)]
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
    (tmp_path / "010.000.000.001.50000-010.000.000.002.09092").write_bytes(request_frame(0, 3, 9))
    (conn,) = read_flow_dir(tmp_path, broker_ports=[9092])
    assert conn.server[1] == 9092 and conn.to_client.captured == 0
