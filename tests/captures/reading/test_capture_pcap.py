"""Readers of classic pcap and pcapng, the index scan and packet ranges."""

from __future__ import annotations

import struct
import subprocess
import sys

import pytest
from captures_testkit import (
    SHARED_CAPTURES,
    epb,
    ether,
    idb,
    ipv4,
    opb,
    pcap_bytes,
    shb,
    spb,
    tcp_header,
)

from kipwire.captures.reading.pcap import CaptureFormatError, PacketReader, read_packets, scan_index

FRAME = ether(ipv4("10.0.0.1", "10.0.0.2", tcp_header(40000, 9092, 1, 1, 0x18, b"hello")))


def test_imports_without_pyspark_or_construct():
    code = (
        "import sys\n"
        "for name in ('pyspark', 'pyarrow', 'construct'):\n"
        "    sys.modules[name] = None\n"
        "from kipwire.captures import pcap\n"
        "from kipwire.captures.pcap import PcapngWriter, TcpConversation\n"
        "import kipwire.captures.reading.pcap, kipwire.captures.reading.pcapng_writer\n"
        "import kipwire.captures.reading.packets, kipwire.captures.reading.reassembly\n"
        "import kipwire.captures.reading.tcpflow, kipwire.captures.reading.frame_dumps\n"
        "import kipwire.captures.reading.inputs\n"
        "import kipwire.captures.decoding.framing, kipwire.captures.decoding.roles\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("nanos", [False, True])
def test_classic_pcap_both_resolutions_and_byte_orders(endian, nanos):
    ts = 1_700_000_000_123_456_789
    data = pcap_bytes(
        [(ts, FRAME), (ts + 1000, FRAME[:40], len(FRAME))], nanos=nanos, endian=endian
    )
    pkts = list(read_packets(data))
    assert [p.index for p in pkts] == [0, 1]
    expected = ts if nanos else ts - ts % 1000
    assert pkts[0].ts_ns == expected
    assert bytes(pkts[0].data) == FRAME
    assert pkts[1].orig_len == len(FRAME) and len(pkts[1].data) == 40
    assert pkts[0].linktype == 1


def test_pcap_truncated_last_record_is_an_issue_not_an_error():
    data = pcap_bytes([(0, FRAME), (1000, FRAME)])[:-10]
    reader = read_packets(data)
    pkts = list(reader)
    assert len(pkts) == 2
    assert len(pkts[1].data) == len(FRAME) - 10
    assert [(i.status, i.length) for i in reader.issues] == [("truncated", 10)]


def test_pcap_absurd_record_length_is_malformed():
    data = bytearray(pcap_bytes([(0, FRAME), (1000, FRAME)]))
    second = 24 + 16 + len(FRAME)
    data[second + 8 : second + 12] = (0x7FFFFFFF).to_bytes(4, "little")
    reader = read_packets(bytes(data))
    assert len(list(reader)) == 1
    assert reader.issues[0].status == "malformed"


def test_not_a_capture():
    with pytest.raises(CaptureFormatError):
        read_packets(b"GET / HTTP/1.1\r\n")


def test_pcapng_sections_interfaces_resolutions_and_block_kinds():
    e = "<"
    b = ">"
    raw_ip = ipv4("10.0.0.1", "10.0.0.2", tcp_header(1, 2, 3, 4, 0x10))
    data = b"".join(
        [
            shb(e),
            idb(e, 1),  # default microseconds
            idb(e, 101, tsresol=9),  # raw IP, nanoseconds
            epb(e, 0, 1_700_000_000_000_001, FRAME),
            epb(e, 1, 1_700_000_000_000_000_002, raw_ip),
            spb(e, FRAME),
            opb(e, 1, 5_000_000_000, raw_ip),
            # a second section in the other byte order; interfaces start afresh
            shb(b),
            idb(b, 1, tsresol=0x80 | 20, tsoffset=10),  # 2^-20 s ticks, 10 s offset
            epb(b, 0, 3 << 20, FRAME),
        ]
    )
    pkts = list(read_packets(data))
    assert [(p.interface, p.linktype) for p in pkts] == [(0, 1), (1, 101), (0, 1), (1, 101), (0, 1)]
    assert pkts[0].ts_ns == 1_700_000_000_000_001_000
    assert pkts[1].ts_ns == 1_700_000_000_000_000_002
    assert pkts[2].ts_ns == 0  # simple packet blocks carry no time
    assert pkts[3].ts_ns == 5_000_000_000
    assert pkts[4].ts_ns == 13 * 1_000_000_000
    assert bytes(pkts[4].data) == FRAME and bytes(pkts[1].data) == raw_ip
    idx = scan_index(data)
    assert list(idx.offsets) == [p.offset for p in pkts]


def test_pcapng_bad_interface_and_cut_block():
    e = "<"
    data = shb(e) + idb(e, 1) + epb(e, 7, 0, FRAME) + epb(e, 0, 5, FRAME)
    reader = read_packets(data[:-12])
    pkts = list(reader)
    # the block naming interface 7 is reported; the cut one is salvaged and reported
    assert [i.status for i in reader.issues] == ["malformed", "truncated"]
    assert len(pkts) == 1 and pkts[0].ts_ns == 5000
    # 12 bytes cut: the block trailer, one pad byte and the frame's last 7 bytes
    assert bytes(pkts[0].data) == FRAME[: len(FRAME) - 7]


@pytest.mark.parametrize(
    ("btype", "body"),
    [(1, b""), (1, b"\x01\x00\x00\x00"), (6, b""), (6, b"\x00" * 12), (2, b"\x00" * 8), (3, b"")],
)
@pytest.mark.parametrize("last", [True, False])
def test_pcapng_block_shorter_than_its_fixed_fields(btype, body, last):
    # an IDB, EPB, OPB or SPB whose length leaves no room for its fixed fields is malformed:
    # reported, never a struct.error (at the end of the file) or fields read from the next block
    e = "<"
    short = (
        struct.pack(e + "II", btype, 12 + len(body)) + body + struct.pack(e + "I", 12 + len(body))
    )
    good = epb(e, 0, 5, FRAME)
    data = shb(e) + idb(e, 1) + short + (b"" if last else good)
    reader = read_packets(data)
    pkts = list(reader)
    assert [i.status for i in reader.issues] == ["malformed"]
    assert "shorter than" in reader.issues[0].message
    assert [bytes(p.data) for p in pkts] == ([] if last else [FRAME])
    idx = scan_index(data)
    assert idx.data_end == len(data)
    if btype != 1:  # the scan counts every packet block, as the reader numbers them
        assert len(idx.offsets) == (1 if last else 2)
        assert pkts == [] or pkts[0].index == 1


def test_index_ranges_read_the_same_packets():
    e = "<"
    blocks = [shb(e), idb(e, 1, tsresol=9)]
    blocks += [epb(e, 0, i, FRAME + bytes([i])) for i in range(50)]
    blocks += [shb(e), idb(e, 1)]
    blocks += [epb(e, 0, i, FRAME) for i in range(20)]
    data = b"".join(blocks)
    whole = [(p.index, p.ts_ns, bytes(p.data)) for p in read_packets(data)]
    idx = scan_index(data)
    ranges = idx.split(max_bytes=1000)
    assert len(ranges) > 5
    parts = []
    for rng in ranges:
        # a range is readable from just its own bytes, as a task reading a file slice would
        reader = PacketReader(data[rng.start : rng.end], packet_range=rng, base_offset=rng.start)
        parts += [(p.index, p.ts_ns, bytes(p.data)) for p in reader]
        assert not reader.issues
    assert parts == whole


def test_classic_index_ranges():
    data = pcap_bytes([(i * 1000, FRAME) for i in range(100)])
    idx = scan_index(data)
    assert len(idx.offsets) == 100 and idx.data_end == len(data)
    ranges = idx.split(max_bytes=len(FRAME) * 10)
    assert sum(r.count for r in ranges) == 100
    got = [p.index for r in ranges for p in PacketReader(data, packet_range=r)]
    assert got == list(range(100))


def _real_files():
    if not SHARED_CAPTURES.is_dir():
        return []
    return sorted(SHARED_CAPTURES.glob("*/*.pcap*"))


@pytest.mark.skipif(not _real_files(), reason="../shared/captures is absent")
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: p.name)
def test_real_captures_every_packet_is_tcp(path):
    from kipwire.captures.reading.packets import parse_tcp

    reader = read_packets(path)
    pkts = list(reader)
    assert pkts and not reader.issues
    for p in pkts:
        seg = parse_tcp(p.linktype, p.data)
        assert not isinstance(seg, str), (p.index, seg)
    assert list(scan_index(path).offsets) == [p.offset for p in pkts]


@pytest.mark.skipif(not _real_files(), reason="../shared/captures is absent")
def test_real_capture_traps():
    ns = list(read_packets(SHARED_CAPTURES / "deepflow" / "01-fetch-v12-unknown.pcap"))
    assert ns[0].ts_ns == 1647312695 * 10**9  # nanosecond file
    sll = list(read_packets(SHARED_CAPTURES / "go-sniffer" / "kafka.pcap"))
    assert {p.linktype for p in sll} == {113} and len(sll) == 20
    # stored bytes longer than the length on the wire: the IP length trims the extra
    assert any(len(p.data) > p.orig_len for p in sll)
