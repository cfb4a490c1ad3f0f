"""Link-layer, IP and TCP parsing."""

from __future__ import annotations

import struct

import pytest
from captures_testkit import ether, ipv4, ipv6, tcp_header

from kipwire.captures.reading.packets import (
    LINKTYPE_ETHERNET,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
    TcpSegment,
    format_ip,
    parse_tcp,
)

TCP = tcp_header(45678, 9092, 1000, 2000, 0x18, b"kafka!")
V4 = ipv4("192.0.2.1", "192.0.2.2", TCP)
V6 = ipv6("2001:db8::1", "2001:db8::2", TCP)


def _check(seg, v6=False):
    assert isinstance(seg, TcpSegment), seg
    assert (seg.sport, seg.dport, seg.seq, seg.ack, seg.flags) == (45678, 9092, 1000, 2000, 0x18)
    assert bytes(seg.payload) == b"kafka!" and seg.wire_len == 6
    assert format_ip(seg.src) == ("2001:db8::1" if v6 else "192.0.2.1")


@pytest.mark.parametrize("vlans", [(), (0x8100,), (0x88A8, 0x8100)])
def test_ethernet_with_vlan_tags(vlans):
    _check(parse_tcp(LINKTYPE_ETHERNET, ether(V4, vlans=vlans)))
    _check(parse_tcp(LINKTYPE_ETHERNET, ether(V6, 0x86DD, vlans=vlans)), v6=True)


def test_linux_cooked_sll_and_sll2():
    sll = struct.pack(">HHH8sH", 0, 772, 6, b"\0" * 8, 0x0800)
    _check(parse_tcp(LINKTYPE_LINUX_SLL, sll + V4))
    sll2 = struct.pack(">HHIHBB8s", 0x86DD, 0, 1, 772, 0, 6, b"\0" * 8)
    assert len(sll2) == 20
    _check(parse_tcp(LINKTYPE_LINUX_SLL2, sll2 + V6), v6=True)


@pytest.mark.parametrize("linktype", [LINKTYPE_RAW, 12, 14, 228, 229])
def test_raw_ip(linktype):
    _check(parse_tcp(linktype, V4))
    _check(parse_tcp(linktype, V6), v6=True)


@pytest.mark.parametrize("fmt", ["<I", ">I"])
@pytest.mark.parametrize("family", [24, 28, 30])
def test_bsd_loopback_both_byte_orders(fmt, family):
    _check(parse_tcp(LINKTYPE_NULL, struct.pack(fmt, 2) + V4))
    _check(parse_tcp(LINKTYPE_NULL, struct.pack(fmt, family) + V6), v6=True)


def test_openbsd_loop():
    _check(parse_tcp(LINKTYPE_LOOP, struct.pack(">I", 2) + V4))


def test_ipv6_extension_headers_are_walked():
    hop = bytes([6, 0]) + b"\0" * 6  # next header TCP, 8 bytes long
    _check(parse_tcp(LINKTYPE_RAW, ipv6("2001:db8::1", "2001:db8::2", TCP, ext=hop)), v6=True)


def test_snap_length_cut_is_noted_in_wire_len():
    seg = parse_tcp(LINKTYPE_ETHERNET, ether(V4)[:-4])
    assert isinstance(seg, TcpSegment)
    assert bytes(seg.payload) == b"ka" and seg.wire_len == 6


def test_ethernet_padding_is_trimmed_by_ip_length():
    seg = parse_tcp(LINKTYPE_ETHERNET, ether(V4) + b"\0" * 12)
    _check(seg)


def test_tso_zero_total_length_uses_frame():
    seg = parse_tcp(LINKTYPE_RAW, ipv4("192.0.2.1", "192.0.2.2", TCP, total=0))
    _check(seg)


@pytest.mark.parametrize(
    ("linktype", "frame", "reason"),
    [
        (LINKTYPE_ETHERNET, ether(V4, 0x0806), "ethertype 0x0806"),
        (
            LINKTYPE_ETHERNET,
            ether(ipv4("1.1.1.1", "2.2.2.2", b"\0" * 8, proto=17)),
            "IP protocol 17",
        ),
        (LINKTYPE_ETHERNET, b"\0" * 10, "short ethernet header"),
        (LINKTYPE_RAW, V4[:30], "short TCP header"),
        (LINKTYPE_RAW, b"\x50" + V4[1:], "IP version 5"),
        (147, V4, "unsupported link type 147"),
    ],
)
def test_not_tcp_says_why(linktype, frame, reason):
    assert parse_tcp(linktype, frame) == reason


def test_ipv4_fragment_is_not_parsed_as_tcp():
    frag = bytearray(V4)
    frag[6] = 0x20  # more fragments
    assert parse_tcp(LINKTYPE_RAW, bytes(frag)) == "IPv4 fragment"
