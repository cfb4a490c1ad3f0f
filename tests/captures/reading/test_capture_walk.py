"""The compiled packet walker (`reading/walk.c`) against the Python readers it stands in for.

Both paths must give the same segments (payload types included), the same counts and the same
file issues on every capture: the shared real captures, captures made to hold every link type,
block kind and problem the readers know, and mutated copies of them
(`KIPWIRE_FUZZ_CAPTURES` of each, a short default in `make test`); and the same table rows.
"""

from __future__ import annotations

import os
import random
import struct

import pytest
from captures_testkit import (
    SHARED_CAPTURES,
    epb,
    ether,
    idb,
    ipv4,
    ipv6,
    opb,
    pcap_bytes,
    request_frame,
    response_frame,
    shb,
    spb,
    tcp_header,
)
from memory_growth import blocks_left_by

from kipwire.captures.decoding.pipeline import PacketStats, decode_capture
from kipwire.captures.reading import native, walk
from kipwire.captures.reading.pcap import PacketReader, PcapngWriter, scan_index
from kipwire.codec import _compiled

needs_walker = pytest.mark.skipif(native.NATIVE is None, reason="the compiled walker is not in use")

MUTATIONS = int(os.environ.get("KIPWIRE_FUZZ_CAPTURES", "40"))

_T = 1_700_000_000_000_000_000
TCP = tcp_header(40000, 9092, 7, 9, 0x18, b"hello kafka")
IP4 = ipv4("10.0.0.1", "10.0.0.2", TCP)
IP6 = ipv6("fd00::1", "fd00::2", TCP)
FRAMES = [
    ether(IP4),
    ether(IP6),
    ether(ipv6("fd00::1", "fd00::2", TCP, ext=bytes([6, 0]) + b"\0" * 6)),  # hop-by-hop
    ether(IP4, vlans=(0x8100, 0x88A8)),
    ether(IP4 + b"\0" * 9),  # Ethernet padding: the IP length trims it
    ether(ipv4("10.0.0.1", "10.0.0.2", TCP, total=20 + len(TCP) + 40)),  # snap length cut
    ether(ipv4("10.0.0.1", "10.0.0.2", TCP, total=0)),  # segmentation offload
    ether(ipv4("10.0.0.1", "10.0.0.2", TCP, proto=17)),  # UDP
    ether(ipv4("10.0.0.1", "10.0.0.2", TCP, total=30)),  # TCP header past the IP length
    ether(ipv4("10.0.0.1", "10.0.0.2", tcp_header(1, 2, 3, 4, 0x02))),  # a SYN, no payload
    ether(b"\x00" * 28, etype=0x0806),  # ARP
    ether(IP4)[:20],  # cut inside the IP header
    ether(IP4[:30]),  # cut inside the TCP header
    b"\x01",
]
# (link type, header before the IP packet) for the other link layers the readers know
LINKS = [
    (113, b"\0" * 14 + b"\x08\x00"),  # Linux SLL
    (276, b"\x86\xdd" + b"\0" * 18),  # Linux SLL2 (its IPv6 frame below)
    (101, b""),
    (12, b""),
    (228, b""),
    (0, struct.pack("<I", 2)),  # BSD loopback, little-endian writer
    (0, struct.pack(">I", 30)),  # ... big-endian writer, IPv6 family
    (108, struct.pack(">I", 2)),  # OpenBSD loopback
    (108, struct.pack(">I", 7)),  # an address family that is no IP
    (999, b""),  # a link type no reader knows
]


def _conversation(packets: int = 30) -> bytes:
    """A pcapng a PcapngWriter wrote: handshake, Kafka frames both ways, close."""
    import io

    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        conv = w.conversation(("10.1.0.2", 50000), ("10.1.0.1", 9092), _T)
        for n in range(packets):
            conv.client_sends(request_frame(18, 0, n), _T + n * 1000)
            conv.server_sends(response_frame(n), _T + n * 1000 + 500)
        conv.close(_T + 10**9)
    return buf.getvalue()


def _link_captures() -> list[bytes]:
    out = []
    for linktype, head in LINKS:
        ip = IP6 if head.startswith(b"\x86\xdd") or head == struct.pack(">I", 30) else IP4
        out.append(pcap_bytes([(_T, head + ip), (_T + 1, head + b"\x45")], linktype))
        out.append(pcap_bytes([(_T, b"")], linktype))
    return out


def _pcapng_zoo() -> bytes:
    e, b = "<", ">"
    raw = ipv4("10.0.0.1", "10.0.0.2", TCP)
    return b"".join(
        [
            shb(e),
            idb(e, 1),
            idb(e, 101, tsresol=9),
            idb(e, 1, tsresol=100),  # 10**100 ticks a second: beyond the walker's integers
            idb(e, 1, tsresol=0x80 | 20, tsoffset=-10),
            epb(e, 0, 1_700_000_000_000_001, FRAMES[0]),
            epb(e, 1, 1_700_000_000_000_000_002, raw),
            epb(e, 2, 5, FRAMES[0]),
            epb(e, 3, 3 << 20, FRAMES[1]),
            epb(e, 0, 2**64 - 1, FRAMES[0]),  # a time past int64 nanoseconds
            struct.pack(e + "II", 5, 16) + b"\0" * 4 + struct.pack(e + "I", 16),  # statistics
            spb(e, FRAMES[0]),
            opb(e, 1, 5_000_000_000, raw),
            epb(e, 9, 0, FRAMES[0]),  # no such interface
            struct.pack(e + "II", 6, 20) + b"\0" * 8 + struct.pack(e + "I", 20),  # EPB too short
            shb(b),
            idb(b, 1, tsresol=0x80 | 20, tsoffset=10),
            *(epb(b, 0, (3 << 20) + i, f) for i, f in enumerate(FRAMES)),
        ]
    )


def _corpus() -> list[bytes]:
    caps = [_conversation(), _pcapng_zoo(), *_link_captures()]
    for endian in "<>":
        for nanos in (False, True):
            caps.append(
                pcap_bytes(
                    [(_T + i, f) for i, f in enumerate(FRAMES)], 1, nanos=nanos, endian=endian
                )
            )
    if SHARED_CAPTURES.is_dir():
        caps += [p.read_bytes() for p in sorted(SHARED_CAPTURES.glob("*/*.pcap*"))]
    caps.append(_conversation()[:-7])  # a block cut short at the end
    caps.append(pcap_bytes([(_T, FRAMES[0])])[:-3])  # a record cut short
    return caps


def _read(data: bytes, *, pure: bool, copy: bool = False, packet_range=None) -> tuple:
    reader = PacketReader(data, packet_range=packet_range)
    stats = PacketStats()
    segs = [
        (ts, type(s.payload), s._replace(payload=bytes(s.payload)))
        for ts, s in walk.tcp_segments(reader, stats, copy=copy, pure=pure)
    ]
    return segs, stats, reader.issues


def _same(data: bytes, copy: bool = False) -> None:
    try:
        PacketReader(data)
    except ValueError:
        return  # not a capture at all: both paths refuse it before reading
    assert _read(data, pure=False, copy=copy) == _read(data, pure=True, copy=copy)


@needs_walker
@pytest.mark.parametrize("copy", [False, True])
def test_every_capture_of_the_corpus_reads_the_same(copy):
    caps = _corpus()
    for data in caps:
        _same(data, copy)
    # the corpus reaches the walker's hand-overs: frames parse_tcp refuses, blocks it leaves
    segs, stats, issues = _read(caps[1], pure=False)
    assert stats.skipped and issues and segs


@needs_walker
def test_packet_ranges_read_the_same():
    data = _conversation(200)
    for rng in scan_index(data).split(max_bytes=2000):
        assert _read(data, pure=False, packet_range=rng) == _read(data, pure=True, packet_range=rng)


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        how = rng.random()
        at = rng.randrange(len(b))
        if how < 0.6:
            b[at] = rng.randrange(256)
        elif how < 0.75:
            del b[at:]
        elif how < 0.9:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))
        else:
            # a length field of a block or record set to something large or unaligned
            b[at : at + 4] = struct.pack("<I", rng.choice([0, 13, 0xFFFFFFFF, 1 << 26, 60]))
        if not b:
            break
    return bytes(b)


@needs_walker
def test_mutated_captures_read_the_same():
    rng = random.Random(23)
    caps = _corpus()
    checked = 0
    for data in caps:
        for _ in range(MUTATIONS):
            _same(_mutate(rng, data))
            checked += 1
    assert checked == MUTATIONS * len(caps)


def _rows(data: bytes) -> tuple:
    rows = decode_capture(data)
    return rows.pdus, rows.pairs, rows.connections, rows.stats, rows.issues


@needs_walker
def test_tables_are_the_same_on_both_paths(monkeypatch):
    rng = random.Random(4)
    caps = _corpus()
    caps += [_mutate(rng, caps[0]) for _ in range(max(MUTATIONS // 4, 5))]
    for data in caps:
        try:
            PacketReader(data)
        except ValueError:
            continue
        walked = _rows(data)
        with monkeypatch.context() as m:
            m.setattr(native, "NATIVE", None)
            assert _rows(data) == walked


@needs_walker
def test_bad_arguments_are_errors_not_crashes():
    compiled = native.NATIVE
    with pytest.raises(TypeError):
        compiled.walk(b"", 0, 0, True, True, ())
    with pytest.raises(TypeError):
        compiled.walk(b"", 0, 0, True, True, 5, False, 10)
    with pytest.raises(TypeError):
        compiled.walk(b"", 0, 0, True, True, [("x", 1, 0)], False, 10)
    with pytest.raises(TypeError):
        compiled.setup(tuple)
    # positions outside the buffer read nothing
    assert compiled.walk(memoryview(b"\0" * 8), 4, 100, True, True, (), False, 10)[1] == 4
    assert compiled.walk(memoryview(b"\0" * 8), -5, 8, True, True, (), False, 10)[0] == []


def test_the_walker_is_built_wherever_the_compiled_codec_is():
    # setup.py builds both the same optional way: a compiler that built one built the other
    if _compiled.active:
        assert native.NATIVE is not None
    if _compiled.PURE_PYTHON:
        assert native.NATIVE is None


@needs_walker
def test_walking_leaves_no_references_behind():
    data = _pcapng_zoo() + _conversation(50)[:-5]

    def run(n: int) -> int:
        found = 0
        for i in range(n):
            found += len(_read(data, pure=False, copy=i % 2 == 0)[0])
        return found

    run(20)
    found, grown = blocks_left_by(lambda: run(2000))
    assert found == 2000 * len(_read(data, pure=True)[0])
    assert grown < 1000, f"{grown} more blocks allocated after 2,000 walks"
