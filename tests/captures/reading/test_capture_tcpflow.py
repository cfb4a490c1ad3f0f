"""tcpflow-style per-direction stream files: what their names say."""

from __future__ import annotations

import ipaddress

from kipwire.captures.reading.tcpflow import parse_flow_name


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
