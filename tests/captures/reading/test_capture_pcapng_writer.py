"""PcapngWriter: conversations written with synthetic headers read back identically."""

from __future__ import annotations

import io
import subprocess

import pytest
from captures_testkit import TSHARK, request_frame, response_frame

from kipwire.captures.decoding.framing import split_frames
from kipwire.captures.reading.packets import ACK, FIN, SYN, parse_tcp
from kipwire.captures.reading.pcap import PcapngWriter, read_packets
from kipwire.captures.reading.reassembly import reassemble
from kipwire.codec import ApiKey


def _conversation(dest, client=("10.1.0.1", 50001), server=("10.1.0.2", 19092), n=5, big=5000):
    frames = []
    with PcapngWriter(dest, mss=1000) as w:
        conv = w.conversation(client, server, ts_ns=1_000_000_000, isn=(0xFFFFFF00, 7))
        for i in range(n):
            req = request_frame(ApiKey.METADATA, 12, i, b"x" * (big if i == 2 else 10))
            resp = response_frame(i, b"y" * (big if i == 3 else 20))
            conv.client_sends(req, ts_ns=2_000_000_000 + i * 1000)
            conv.server_sends(resp, ts_ns=2_000_000_000 + i * 1000 + 500)
            frames.append((req, resp))
        conv.close(ts_ns=3_000_000_000)
    return frames


def test_round_trip_frames_and_tcp_state(tmp_path):
    path = tmp_path / "conv.pcapng"
    frames = _conversation(path)
    pkts = list(read_packets(path))
    segs = [(p.ts_ns, parse_tcp(p.linktype, p.data)) for p in pkts]
    assert all(not isinstance(s, str) for _, s in segs)
    flags = [s.flags for _, s in segs]
    assert flags[:3] == [SYN, SYN | ACK, ACK]
    assert flags[-3:] == [FIN | ACK, FIN | ACK, ACK]
    assert max(len(s.payload) for _, s in segs) == 1000  # large frames cut at the MSS
    (conn,) = reassemble(segs)
    assert conn.role_source == "syn" and conn.server[1] == 19092
    assert conn.to_server.missing == 0 and conn.to_client.missing == 0
    reqs = split_frames(conn.to_server, requests=True)
    resps = split_frames(conn.to_client, requests=False)
    assert [bytes(i.data) for i in reqs] == [f[0][4:] for f in frames]
    assert [bytes(i.data) for i in resps] == [f[1][4:] for f in frames]
    assert reqs[1].ts_ns == 2_000_000_000 + 1000 and resps[1].ts_ns == 2_000_000_000 + 1500


def test_sequence_numbers_wrap_and_ack_the_peer():
    buf = io.BytesIO()
    _conversation(buf)
    segs = [parse_tcp(p.linktype, p.data) for p in read_packets(buf.getvalue())]
    nxt = {}
    for s in segs:
        src = s.sport
        if src in nxt:
            assert s.seq == nxt[src]  # no holes, no overlaps: each segment follows the last
        nxt[src] = (s.seq + len(s.payload) + (1 if s.flags & (SYN | FIN) else 0)) & 0xFFFFFFFF
        if s.flags & ACK:
            assert s.ack == nxt.get(s.dport, s.ack)
    assert any(s.seq < 0x10000 for s in segs if s.sport == 50001)  # the client's ISN wrapped


def test_ipv6_conversation(tmp_path):
    path = tmp_path / "v6.pcapng"
    frames = _conversation(path, client=("2001:db8::1", 40000), server=("2001:db8::2", 9093), n=2)
    segs = [(p.ts_ns, parse_tcp(p.linktype, p.data)) for p in read_packets(path)]
    (conn,) = reassemble(segs)
    assert conn.resp_h == "2001:db8::2"
    assert [bytes(i.data) for i in split_frames(conn.to_server, requests=True)] == [
        f[0][4:] for f in frames
    ]


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark)")
def test_tshark_follows_the_stream(tmp_path):
    path = tmp_path / "conv.pcapng"
    frames = _conversation(path)
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-q", "-z", "follow,tcp,raw,0"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # raw follow output: one hex line per direction change; server lines are tab-indented
    lines = [ln for ln in out.splitlines() if ln and set(ln.strip()) <= set("0123456789abcdef")]
    client = "".join(ln for ln in lines if not ln.startswith("\t"))
    server = "".join(ln.strip() for ln in lines if ln.startswith("\t"))
    assert bytes.fromhex(client) == b"".join(f[0] for f in frames)
    assert bytes.fromhex(server) == b"".join(f[1] for f in frames)
    # and tshark finds no bad checksum, lost segment, retransmission or other TCP trouble
    bad = "tcp.analysis.flags || tcp.checksum.status == 0 || ip.checksum.status == 0"
    expert = subprocess.run(
        [TSHARK, "-r", str(path), "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"]
        + ["-Y", bad],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert expert.strip() == ""


def test_without_a_destination_the_bytes_are_handed_over_not_written(tmp_path):
    """The sans-I/O mode a trio caller uses: the same bytes as a file, drained in pieces."""
    path = tmp_path / "file.pcapng"
    _conversation(path)
    pieces = []
    w = PcapngWriter(mss=1000)
    pieces.append(w.data_to_send())
    conv = w.conversation(
        ("10.1.0.1", 50001), ("10.1.0.2", 19092), 1_000_000_000, isn=(0xFFFFFF00, 7)
    )
    for i in range(5):
        conv.client_sends(
            request_frame(ApiKey.METADATA, 12, i, b"x" * (5000 if i == 2 else 10)),
            2_000_000_000 + i * 1000,
        )
        conv.server_sends(
            response_frame(i, b"y" * (5000 if i == 3 else 20)), 2_000_000_000 + i * 1000 + 500
        )
        pieces.append(w.data_to_send())
    conv.close(ts_ns=3_000_000_000)
    w.close()
    pieces.append(w.data_to_send())
    assert all(pieces[:-1]) and w.data_to_send() == b""
    assert b"".join(pieces) == path.read_bytes()
