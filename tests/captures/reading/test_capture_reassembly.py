"""TCP reassembly and framing: properties over random segmentations, and the tricky cases."""

from __future__ import annotations

import random

from captures_testkit import request_frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipwire.captures.decoding.framing import split_frames
from kipwire.captures.reading.packets import ACK, FIN, PSH, SYN, TcpSegment
from kipwire.captures.reading.reassembly import reassemble
from kipwire.codec import ApiKey

C = (bytes([10, 0, 0, 1]), 50000)
S = (bytes([10, 0, 0, 2]), 9092)


def seg(src, dst, seq, payload=b"", flags=ACK | PSH, ack=0, wire_len=None):
    wl = len(payload) if wire_len is None else wire_len
    return TcpSegment(src[0], src[1], dst[0], dst[1], seq & 0xFFFFFFFF, ack, flags, payload, wl)


def requests(n, first_corr=1, sizes=None):
    sizes = sizes or [((i * 37) % 50) + 1 for i in range(n)]
    return [request_frame(ApiKey.METADATA, 9, first_corr + i, b"b" * sizes[i]) for i in range(n)]


def _cut(data: bytes, cuts: list[int]) -> list[tuple[int, bytes]]:
    points = sorted({c % max(len(data), 1) for c in cuts} | {0, len(data)})
    return [(a, data[a:b]) for a, b in zip(points, points[1:], strict=False) if b > a]


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 12))
    sizes = draw(st.lists(st.integers(0, 300), min_size=n, max_size=n))
    frames = [request_frame(ApiKey.METADATA, 9, 100 + i, bytes([i]) * sizes[i]) for i in range(n)]
    data = b"".join(frames)
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=40))
    pieces = _cut(data, cuts)
    drop = draw(st.sets(st.integers(0, len(pieces) - 1), max_size=max(0, len(pieces) // 3)))
    dups = draw(st.lists(st.integers(0, len(pieces) - 1), max_size=5))
    # overlapping retransmissions: arbitrary ranges of the true bytes
    overlaps = draw(st.lists(st.tuples(st.integers(0, len(data)), st.integers(1, 400)), max_size=3))
    isn = draw(st.integers(0, 2**32 - 1))
    seed = draw(st.integers(0, 2**32))
    return frames, data, pieces, drop, dups, overlaps, isn, seed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_random_segmentation_reassembles_to_the_same_frames(sc):
    frames, data, pieces, drop, dups, overlaps, isn, seed = sc
    kept = [p for i, p in enumerate(pieces) if i not in drop]
    extra = [pieces[i] for i in dups if i not in drop]
    extra += [(a, data[a : a + n]) for a, n in overlaps if data[a : a + n]]
    sent = kept + extra
    random.Random(seed).shuffle(sent)
    segs = [(0, seg(C, S, isn, b"", SYN))]
    segs += [(k + 1, seg(C, S, isn + 1 + off, chunk)) for k, (off, chunk) in enumerate(sent)]
    segs.append((10**6, seg(C, S, isn + 1 + len(data), b"", FIN | ACK)))
    (conn,) = reassemble(segs)
    stream = conn.to_server
    covered = bytearray(len(data))
    for off, chunk in sent:
        covered[off : off + len(chunk)] = b"\1" * len(chunk)
    # every run holds the true bytes at its offset, and exactly the covered bytes are present
    for run in stream.runs:
        assert run.data == data[run.offset : run.end]
    assert stream.captured == sum(covered)
    assert stream.missing == len(data) - sum(covered)
    assert sum(size for _, size in stream.gaps()) == stream.missing

    items = split_frames(stream, requests=True)
    assert sum(i.captured for i in items) == stream.captured
    assert sum(i.length for i in items if i.kind == "gap") == stream.missing
    starts, pos = {}, 0
    for f in frames:
        starts[pos] = f
        pos += len(f)
    got = [i for i in items if i.kind == "frame"]
    for i in got:
        assert i.offset in starts and bytes(i.data) == starts[i.offset][4:]  # never invented
    first_gap = min((off for off, _ in stream.gaps()), default=len(data))
    complete_before_gap = [o for o, f in starts.items() if o + len(f) <= first_gap]
    assert {i.offset for i in got} >= set(complete_before_gap)
    if not drop:
        assert [bytes(i.data) for i in got] == [f[4:] for f in frames]


def test_port_reuse_starts_a_new_connection():
    a = requests(2)
    b = requests(2, first_corr=50)
    segs = [
        (1, seg(C, S, 1000, b"", SYN)),
        (2, seg(S, C, 5000, b"", SYN | ACK)),
        (3, seg(C, S, 1001, a[0] + a[1])),
        (4, seg(C, S, 1001 + len(a[0] + a[1]), b"", FIN | ACK)),
        (5, seg(C, S, 777_000, b"", SYN)),  # same ports, new ISN
        (6, seg(C, S, 777_001, b[0] + b[1])),
    ]
    c1, c2 = reassemble(segs)
    assert c1.to_server.runs[0].data == a[0] + a[1]
    assert c2.to_server.runs[0].data == b[0] + b[1]
    assert c1.uid != c2.uid and c1.first_ts == 1 and c2.first_ts == 5


def test_retransmitted_syn_is_the_same_connection():
    segs = [(1, seg(C, S, 10, b"", SYN)), (2, seg(C, S, 10, b"", SYN)), (3, seg(C, S, 11, b"x"))]
    (conn,) = reassemble(segs)
    assert conn.to_server.captured == 1


def test_without_a_handshake_the_roles_are_left_to_the_decoder():
    junk = b"\xff" * 20
    segs = [(1, seg(S, C, 1, junk)), (2, seg(C, S, 1, junk))]
    (conn,) = reassemble(segs)
    # TCP alone cannot tell: address order, and no role source until decoding.roles decides
    assert (conn.client, conn.server, conn.role_source) == (C, S, "")
    assert conn.to_server.runs[0].data == junk and conn.to_client.runs[0].data == junk


def test_sequence_wraparound():
    reqs = requests(4)
    data = b"".join(reqs)
    isn = 2**32 - 30
    segs = [(0, seg(C, S, isn, b"", SYN))]
    segs += [
        (i + 1, seg(C, S, isn + 1 + off, c)) for i, (off, c) in enumerate(_cut(data, [20, 45]))
    ]
    (conn,) = reassemble(segs)
    assert conn.to_server.runs[0].data == data and conn.to_server.missing == 0


def test_snap_length_cut_segment_becomes_a_gap_and_truncated_frame():
    reqs = requests(3, sizes=[100, 100, 100])
    data = b"".join(reqs)
    n0 = len(reqs[0])
    segs = [
        (0, seg(C, S, 0, b"", SYN)),
        (1, seg(C, S, 1, data[:n0])),
        (2, seg(C, S, 1 + n0, reqs[1][:40], wire_len=len(reqs[1]))),  # cut by the snap length
        (3, seg(C, S, 1 + n0 + len(reqs[1]), reqs[2])),
    ]
    (conn,) = reassemble(segs)
    assert conn.to_server.missing == len(reqs[1]) - 40
    items = split_frames(conn.to_server, requests=True)
    assert [(i.kind, i.captured) for i in items] == [
        ("frame", n0),
        ("truncated", 40),
        ("gap", 0),
        ("frame", len(reqs[2])),
    ]
    # the frame after the gap is found from the truncated frame's size, no search needed
    assert bytes(items[3].data) == reqs[2][4:]


def test_missing_tail_known_from_peer_ack():
    reqs = requests(2, sizes=[10, 10])
    segs = [
        (0, seg(C, S, 0, b"", SYN)),
        (1, seg(C, S, 1, reqs[0])),
        (2, seg(S, C, 0, b"", ACK, ack=1 + len(reqs[0]) + len(reqs[1]))),  # acks the lost one too
    ]
    (conn,) = reassemble(segs)
    assert conn.to_server.missing == len(reqs[1])
    items = split_frames(conn.to_server, requests=True)
    assert [i.kind for i in items] == ["frame", "gap"] and items[1].length == len(reqs[1])


def test_fin_does_not_count_as_a_missing_byte():
    segs = [
        (0, seg(C, S, 0, b"", SYN)),
        (1, seg(C, S, 1, b"abcd")),
        (2, seg(C, S, 5, b"", FIN | ACK)),
        (3, seg(S, C, 0, b"", FIN | ACK, ack=6)),
        (4, seg(C, S, 6, b"", ACK, ack=1)),
    ]
    (conn,) = reassemble(segs)
    assert conn.to_server.missing == 0 and conn.to_client.missing == 0
