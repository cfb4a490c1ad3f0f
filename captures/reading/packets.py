"""Link layer, IPv4/IPv6 and TCP header parsing: from a captured frame to a TCP segment."""

from __future__ import annotations

import socket
import struct
from typing import NamedTuple

__all__ = [
    "LINKTYPE_ETHERNET",
    "LINKTYPE_IPV4",
    "LINKTYPE_IPV6",
    "LINKTYPE_LINUX_SLL",
    "LINKTYPE_LINUX_SLL2",
    "LINKTYPE_LOOP",
    "LINKTYPE_NULL",
    "LINKTYPE_RAW",
    "SUPPORTED_LINKTYPES",
    "TcpSegment",
    "format_ip",
    "parse_tcp",
]

LINKTYPE_NULL = 0  # BSD loopback, 4-byte address family in the writer's byte order
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108  # OpenBSD loopback, address family in network byte order
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
# DLT_RAW is 12 on most systems and 14 on OpenBSD; files written with the DLT value exist
_RAW_ALIASES = (LINKTYPE_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6)
SUPPORTED_LINKTYPES = frozenset(
    (
        LINKTYPE_NULL,
        LINKTYPE_ETHERNET,
        LINKTYPE_LOOP,
        LINKTYPE_LINUX_SLL,
        LINKTYPE_LINUX_SLL2,
        *_RAW_ALIASES,
    )
)

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

_ETH_IPV4, _ETH_IPV6 = 0x0800, 0x86DD
_VLAN_TPIDS = frozenset((0x8100, 0x88A8, 0x9100, 0x9200))
# BSD address families for IPv6 differ by OS (NetBSD/OpenBSD 24, FreeBSD 28, Darwin 30)
_AF_INET6 = frozenset((24, 28, 30))
_IPV6_EXT = frozenset((0, 43, 60, 51))  # hop-by-hop, routing, destination options, AH

_u16 = struct.Struct(">H").unpack_from
_tcp = struct.Struct(">HHIIBBH").unpack_from
_ip4 = struct.Struct(">BxHHHBB2x4s4s").unpack_from
_ip6 = struct.Struct(">4xHBx16s16s").unpack_from


class TcpSegment(NamedTuple):
    """A TCP segment: addresses as packed bytes (4 or 16), payload as a view of the frame."""

    src: bytes
    sport: int
    dst: bytes
    dport: int
    seq: int
    ack: int
    flags: int
    payload: memoryview | bytes
    wire_len: int  # payload length on the wire; more than len(payload) when the snap length cut it


def format_ip(addr: bytes) -> str:
    """Packed IPv4/IPv6 address to its usual text form."""
    return socket.inet_ntop(socket.AF_INET if len(addr) == 4 else socket.AF_INET6, addr)


def parse_tcp(linktype: int, frame: memoryview | bytes) -> TcpSegment | str:
    """Parse a captured frame down to TCP; a str result says why it is not a TCP segment."""
    n = len(frame)
    if linktype == LINKTYPE_ETHERNET:
        if n < 14:
            return "short ethernet header"
        (etype,) = _u16(frame, 12)
        pos = 14
        while etype in _VLAN_TPIDS:
            if n < pos + 4:
                return "short vlan tag"
            (etype,) = _u16(frame, pos + 2)
            pos += 4
        if etype == _ETH_IPV4:
            return _ipv4(frame, pos)
        if etype == _ETH_IPV6:
            return _ipv6(frame, pos)
        return f"ethertype {etype:#06x}"
    if linktype == LINKTYPE_LINUX_SLL:
        if n < 16:
            return "short SLL header"
        (etype,) = _u16(frame, 14)
        pos = 16
    elif linktype == LINKTYPE_LINUX_SLL2:
        if n < 20:
            return "short SLL2 header"
        (etype,) = _u16(frame, 0)
        pos = 20
    elif linktype in _RAW_ALIASES:
        return _ip_any(frame, 0)
    elif linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        if n < 4:
            return "short loopback header"
        if linktype == LINKTYPE_LOOP:
            (family,) = struct.unpack_from(">I", frame, 0)
        else:
            # host byte order of the machine that wrote it: a family fits in the low 16 bits
            (family,) = struct.unpack_from("<I", frame, 0)
            if family > 0xFFFF:
                (family,) = struct.unpack_from(">I", frame, 0)
        if family == 2:
            return _ipv4(frame, 4)
        if family in _AF_INET6:
            return _ipv6(frame, 4)
        return f"loopback address family {family}"
    else:
        return f"unsupported link type {linktype}"
    # SLL and SLL2 carry an ethertype
    if etype == _ETH_IPV4:
        return _ipv4(frame, pos)
    if etype == _ETH_IPV6:
        return _ipv6(frame, pos)
    return f"protocol {etype:#06x}"


def _ip_any(frame: memoryview | bytes, pos: int) -> TcpSegment | str:
    if len(frame) <= pos:
        return "empty IP packet"
    version = frame[pos] >> 4
    if version == 4:
        return _ipv4(frame, pos)
    if version == 6:
        return _ipv6(frame, pos)
    return f"IP version {version}"


def _ipv4(frame: memoryview | bytes, pos: int) -> TcpSegment | str:
    n = len(frame)
    if n < pos + 20:
        return "short IPv4 header"
    vihl, total, _ident, frag, _ttl, proto, src, dst = _ip4(frame, pos)
    if vihl >> 4 != 4:
        return "bad IPv4 version"
    ihl = (vihl & 0x0F) * 4
    if ihl < 20:
        return "bad IPv4 header length"
    if proto != 6:
        return f"IP protocol {proto}"
    if frag & 0x3FFF:  # more-fragments flag or a fragment offset
        return "IPv4 fragment"
    # total length 0 happens with TCP segmentation offload: the frame holds the truth
    end = pos + total if total else n
    return _tcp_segment(frame, pos + ihl, end, src, dst)


def _ipv6(frame: memoryview | bytes, pos: int) -> TcpSegment | str:
    n = len(frame)
    if n < pos + 40:
        return "short IPv6 header"
    if frame[pos] >> 4 != 6:
        return "bad IPv6 version"
    plen, nxt, src, dst = _ip6(frame, pos)
    end = pos + 40 + plen if plen else n  # 0: jumbogram or offload, the frame holds the truth
    p = pos + 40
    while nxt in _IPV6_EXT:
        if n < p + 2:
            return "short IPv6 extension header"
        hdr_len = (frame[p + 1] + 2) * 4 if nxt == 51 else (frame[p + 1] + 1) * 8
        nxt = frame[p]
        p += hdr_len
    if nxt == 44:
        return "IPv6 fragment"
    if nxt != 6:
        return f"IPv6 next header {nxt}"
    return _tcp_segment(frame, p, end, src, dst)


def _tcp_segment(
    frame: memoryview | bytes, pos: int, ip_end: int, src: bytes, dst: bytes
) -> TcpSegment | str:
    n = len(frame)
    if n < pos + 20:
        return "short TCP header"
    sport, dport, seq, ack, off, flags, _win = _tcp(frame, pos)
    data_off = (off >> 4) * 4
    if data_off < 20:
        return "bad TCP header length"
    start = pos + data_off
    wire_len = ip_end - start
    if wire_len < 0:
        return "TCP header beyond IP length"
    # the IP length trims Ethernet padding and trailing FCS; the frame end shows snap-length cuts
    stop = ip_end if ip_end <= n else n
    payload = frame[start:stop] if start < stop else b""
    return TcpSegment(src, sport, dst, dport, seq, ack, flags, payload, wire_len)
