"""The compiled stitching of one direction (`reading/reassembly.c`) against `_assemble_half`.

Both paths must give the same connections (runs, marks, stamps, gap and retransmission counts)
for segments in order and out of it, with gaps, retransmissions, overlaps, payloads cut by the
snap length, sequence numbers wrapping, with and without a handshake, FIN or RST; and the same
table rows for captures of those cases. What the C code leaves to Python (odd payload types,
numbers outside its ranges) is handed back, not read differently.
"""

from __future__ import annotations

import random

import pytest
from captures_testkit import (
    FUZZ_FRAMES,
    SHARED_CAPTURES,
    ether,
    ipv4,
    mutate,
    pcap_bytes,
    request_frame,
    response_frame,
    tcp_header,
)
from memory_growth import blocks_left_by

from kipwire.captures.decoding import framing
from kipwire.captures.decoding.framing import split_frames
from kipwire.captures.decoding.pipeline import decode_capture
from kipwire.captures.reading import reassembly
from kipwire.captures.reading.frame_dumps import MAX_FRAME
from kipwire.captures.reading.native import NATIVE
from kipwire.captures.reading.packets import ACK, FIN, PSH, RST, SYN, TcpSegment
from kipwire.captures.reading.reassembly import Run, TcpReassembler, reassemble
from kipwire.codec import ApiKey

pytestmark = pytest.mark.skipif(NATIVE is None, reason="the capture loops are not built")

C = (bytes([10, 0, 0, 1]), 50000)
S = (bytes([10, 0, 0, 2]), 9092)
ROUNDS = 150


def _seg(src, dst, seq, payload=b"", flags=ACK | PSH, ack=0, wire_len=None) -> TcpSegment:
    wire = len(payload) if wire_len is None else wire_len
    return TcpSegment(src[0], src[1], dst[0], dst[1], seq & 0xFFFFFFFF, ack, flags, payload, wire)


def _stream(rng: random.Random, requests: bool) -> bytes:
    n = rng.randint(1, 6)
    if requests:
        frames = [request_frame(ApiKey.METADATA, 9, i, b"r" * rng.randint(0, 40)) for i in range(n)]
    else:
        frames = [response_frame(i, b"s" * rng.randint(0, 40)) for i in range(n)]
    if rng.random() < 0.2:
        frames.append(b"\x7f\xff\xff\xff" + b"x" * 12)  # a frame larger than the limit
    return b"".join(frames)


def _direction(rng, src, dst, isn, data, handshake) -> list[tuple[int, TcpSegment]]:
    """One side's segments: cut anywhere, some lost, retransmitted, overlapping, cut short."""
    cuts = sorted({0, len(data), *(rng.randrange(len(data) + 1) for _ in range(rng.randint(0, 9)))})
    pieces = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    sent = []
    for a, b in pieces:
        roll = rng.random()
        if roll < 0.1:
            continue  # lost: a gap
        sent.append((a, b))
        if roll > 0.9:
            sent.append((a, b))  # retransmitted
    if rng.random() < 0.3 and data:
        a = rng.randrange(len(data))
        sent.append((a, min(len(data), a + rng.randint(1, 30))))  # overlapping others
    if rng.random() < 0.3:
        rng.shuffle(sent)  # out of order
    segs = []
    first = isn + 1 if handshake else isn
    for a, b in sent:
        payload: bytes | memoryview = data[a:b]
        wire = b - a
        if rng.random() < 0.1:
            payload = payload[: rng.randint(0, len(payload))]  # cut by the snap length
        if rng.random() < 0.5:
            payload = memoryview(payload)
        segs.append(_seg(src, dst, first + a, payload, ack=rng.randrange(1 << 32), wire_len=wire))
        if rng.random() < 0.1:
            segs.append(_seg(src, dst, first + b, b"", ACK))  # a pure ACK
    if handshake:
        segs.insert(0, _seg(src, dst, isn, b"", SYN if src == C else SYN | ACK))
    end = rng.random()
    if end < 0.3:
        segs.append(_seg(src, dst, first + len(data), b"", FIN | ACK))
    elif end < 0.4:
        segs.append(_seg(src, dst, first + rng.randrange(len(data) + 1), b"", RST))
    return segs


def _segments(rng: random.Random, c=C, s=S) -> list[tuple[int, TcpSegment]]:
    handshake = rng.random() < 0.7
    wrap = rng.random() < 0.3
    isn_c = (1 << 32) - rng.randint(1, 60) if wrap else rng.randrange(1 << 32)
    isn_s = rng.randrange(1 << 32)
    up = _direction(rng, c, s, isn_c, _stream(rng, True), handshake)
    down = _direction(rng, s, c, isn_s, _stream(rng, False), handshake)
    both = up + down
    if rng.random() < 0.5:
        rng.shuffle(both)
    for i, seg in enumerate(both):
        # the peer acknowledges what this side sent (some of the acks matter: the stream's end)
        if seg.flags & ACK and rng.random() < 0.3:
            peer = isn_s if (seg.src, seg.sport) == c else isn_c
            both[i] = seg._replace(ack=(peer + rng.randint(0, 400)) & 0xFFFFFFFF)
    return [(1000 + 7 * i, seg) for i, seg in enumerate(both)]


def _interleaved(rng: random.Random, same_time: bool) -> list[tuple[int, TcpSegment]]:
    """Several connections' segments merged in a random order; some reuse their ports."""
    queues = []
    for n in range(rng.randint(1, 5)):
        client = (bytes([10, 0, 0, 1 + n % 2]), 40000 + n)
        segs = [seg for _, seg in _segments(rng, client, S)]
        if rng.random() < 0.4:
            again = _seg(client, S, rng.randrange(1 << 32), b"", SYN)  # the port reused
            segs += [again] + [seg for _, seg in _segments(rng, client, S)]
        queues.append(segs)
    merged = []
    while queues:
        q = rng.choice(queues)
        merged.append(q.pop(0))
        queues = [q for q in queues if q]
    # without times (tcpflow-like), connections replaced on a reused port start together
    return [(5 if same_time else 1000 + 3 * i, seg) for i, seg in enumerate(merged)]


def _batches(segs, size: int) -> list[list]:
    return [segs[i : i + size] for i in range(0, len(segs), size)]


def test_batches_give_the_capture_order_connections(monkeypatch):
    rng = random.Random(41)
    for n in range(ROUNDS):
        segs = _interleaved(rng, same_time=n % 4 == 0)
        if n % 7 == 0:
            segs.insert(len(segs) // 2, (3, tuple(segs[0][1])))  # an item C leaves: replayed
        batches = _batches(segs, rng.randint(1, 40))
        reasm = TcpReassembler()
        reasm.add_batches(iter(batches))
        expected = _python(monkeypatch, lambda s=segs: reassemble(s))
        assert reasm.finish() == expected


def _python(monkeypatch, fn):
    with monkeypatch.context() as m:
        m.setattr(reassembly, "_NATIVE_HALF", None)
        m.setattr(reassembly, "_NATIVE_TAKE", None)
        m.setattr(reassembly, "_NATIVE_ITEMS", None)
        m.setattr(framing, "_NATIVE_FRAMES", None)
        return fn()


def _frames(conns) -> list:
    out = []
    for c in conns:
        out.append(split_frames(c.to_server, requests=True))
        out.append(split_frames(c.to_client, requests=False, expected_corr=[0, 1, 2]))
    return out


def test_drawn_segments_give_the_python_streams_and_frames(monkeypatch):
    rng = random.Random(2323)
    kinds = {"runs>1": 0, "retransmitted": 0, "skipped": 0, "truncated": 0}
    for _ in range(ROUNDS):
        segs = _segments(rng)
        conns = reassemble(segs)
        assert conns == _python(monkeypatch, lambda segs=segs: reassemble(segs))
        frames = _frames(conns)
        assert frames == _python(monkeypatch, lambda conns=conns: _frames(conns))
        streams = [s for c in conns for s in (c.to_server, c.to_client)]
        kinds["runs>1"] += any(len(s.runs) > 1 for s in streams)
        kinds["retransmitted"] += any(s.retransmitted for s in streams)
        items = [i.kind for f in frames for i in f]
        kinds["skipped"] += "skipped" in items
        kinds["truncated"] += "truncated" in items
    # the draws reach the cases: gaps, retransmissions, resynchronising, frames cut short
    assert all(n >= 5 for n in kinds.values()), kinds


class _Fragment:
    """A connection's segments as `add_fragment` takes them: parallel lists."""

    def __init__(self, a, b, segs) -> None:
        self.ts = [t for t, _ in segs]
        self.seq = [s.seq for _, s in segs]
        self.ack = [s.ack for _, s in segs]
        self.flags = [s.flags for _, s in segs]
        self.wire = [s.wire_len for _, s in segs]
        self.from_a = [(s.src, s.sport) == a for _, s in segs]
        self.pay = [s.payload for _, s in segs]


def _by_fragments(segs, rng: random.Random):
    """The segments fed as fragments of a few segments each, in order, as `_Decoder` feeds them."""
    reasm = TcpReassembler()
    a, b = sorted((C, S))
    i = 0
    while i < len(segs):
        n = rng.randint(1, 6)
        reasm.add_fragment(a, b, _Fragment(a, b, segs[i : i + n]))
        i += n
    return reasm.finish()


def test_fragments_give_the_python_connections(monkeypatch):
    rng = random.Random(17)
    for _ in range(ROUNDS):
        segs = _segments(rng)
        if rng.random() < 0.2:
            segs.append((9999, _seg(C, S, 5, b"", SYN)))  # a new ISN on the same ports
        seed = rng.random()
        conns = _by_fragments(segs, random.Random(seed))
        again = _python(monkeypatch, lambda s=segs, r=seed: _by_fragments(s, random.Random(r)))
        assert conns == again
        assert conns == reassemble(segs)
    odd = _Fragment(C, S, _segments(rng))
    odd.flags[-1] = str(odd.flags[-1])  # flags that are not an int: Python's error, not C's
    with pytest.raises(TypeError):
        TcpReassembler().add_fragment(C, S, odd)
    short = _Fragment(C, S, _segments(rng))
    del short.pay[-1]
    with pytest.raises(ValueError):
        TcpReassembler().add_fragment(C, S, short)


def _capture(segs: list[tuple[int, TcpSegment]]) -> bytes:
    packets = []
    for ts, s in segs:
        tcp = tcp_header(s.sport, s.dport, s.seq, s.ack, s.flags, bytes(s.payload))
        packets.append((ts, ether(ipv4(".".join(map(str, s.src)), ".".join(map(str, s.dst)), tcp))))
    return pcap_bytes(packets)


def test_named_cases_give_the_python_tables(monkeypatch):
    reqs = b"".join(request_frame(ApiKey.METADATA, 9, i, b"q" * 30) for i in range(4))
    resp = b"".join(response_frame(i, b"a" * 20) for i in range(4))
    big = b"".join(request_frame(ApiKey.METADATA, 9, 9, b"z" * 3000) for _ in range(2))

    def conn(data, order=None, drop=(), again=(), cut_at=None, chunk=40):
        up = [(0, _seg(C, S, 99, b"", SYN)), (1, _seg(S, C, 499, b"", SYN | ACK))]
        pieces = [(a, data[a : a + chunk]) for a in range(0, len(data), chunk)]
        if cut_at is not None:
            pieces = [(a, p) for a, p in pieces if a < cut_at]
        order = order or list(range(len(pieces)))
        body = [pieces[i] for i in order if i not in drop] + [pieces[i] for i in again]
        up += [(10 + k, _seg(C, S, 100 + a, p)) for k, (a, p) in enumerate(body)]
        up.append((500, _seg(S, C, 500, resp)))
        return up

    cases = {
        "in order": conn(reqs),
        "out of order": conn(reqs, order=[1, 0, 2, 4, 3]),
        "a gap": conn(reqs, drop={2}),
        "a retransmit": conn(reqs, again=[1, 3]),
        "a frame over many segments": conn(big, chunk=100),
        "a frame larger than the limit": conn(
            reqs[:40] + (MAX_FRAME + 1).to_bytes(4, "big") + reqs
        ),
        "cut mid-frame": conn(reqs, cut_at=len(reqs) - 50),
    }
    for name, segs in cases.items():
        data = _capture(segs)
        rows = decode_capture(data)
        expected = _python(monkeypatch, lambda data=data: decode_capture(data))
        assert (rows.pdus, rows.pairs, rows.connections) == (
            expected.pdus,
            expected.pairs,
            expected.connections,
        ), name
        assert rows.pdus, name


@pytest.mark.skipif(not SHARED_CAPTURES.is_dir(), reason=f"{SHARED_CAPTURES} is absent")
def test_the_capture_corpus_and_mutated_copies_give_the_python_tables(monkeypatch):
    rng = random.Random(8)
    inputs = [p.read_bytes() for p in sorted(SHARED_CAPTURES.rglob("*.pcap*"))]
    inputs += [mutate(rng, rng.choice(inputs)) for _ in range(max(FUZZ_FRAMES // 100, 30))]
    compared = 0
    for data in inputs:
        try:
            rows = decode_capture(data)
        except ValueError:
            continue  # not a capture at all: both paths refuse it before reading
        expected = _python(monkeypatch, lambda data=data: decode_capture(data))
        assert (rows.pdus, rows.pairs, rows.connections) == (
            expected.pdus,
            expected.pairs,
            expected.connections,
        )
        compared += 1
    assert compared >= 10


def _half(segs, syn=None, fin=None, acks=()):
    return NATIVE.assemble_half(list(segs), syn, fin, list(acks), Run)


def test_what_it_does_not_read_is_left_to_python():
    good = (5, 1, b"ab", 2)
    assert _half([good]) is not None
    for odd in [
        (5, 1, bytearray(b"ab"), 2),  # a payload that is neither bytes nor memoryview
        (5, 1, memoryview(b"abcd").cast("H"), 4),  # items of two bytes
        (1 << 32, 1, b"ab", 2),  # a sequence number outside 32 bits
        (5, 1, b"ab", -1),
        (5, 1, b"ab", 1 << 70),
        [5, 1, b"ab", 2],  # not a tuple
        (5, 1, b"ab"),
    ]:
        assert _half([good, odd]) is None, odd
    assert _half([good], syn=-1) is None
    assert _half([good], acks=[1 << 40]) is None
    assert _half([]) is None  # nothing to stitch: the Python code's early return
    # times are carried, not read: any object stays the stamp
    (run,), *_ = _half([(5, None, b"ab", 2)])
    assert run.stamps == [None] and run.marks == [0] and run.data == b"ab"


def test_bad_arguments_are_errors():
    with pytest.raises(TypeError):
        NATIVE.assemble_half([], None, None, [])
    with pytest.raises(TypeError):
        NATIVE.assemble_half((), None, None, [], Run)
    with pytest.raises(TypeError):
        NATIVE.assemble_half([], None, None, [], 5)
    with pytest.raises(ZeroDivisionError):
        NATIVE.assemble_half([(1, 1, b"x", 1)], None, None, [], lambda *a: 1 / 0)


def test_take_plain_stops_at_what_it_does_not_take():
    lists = [[1, 2, 3], [10, 11, 12], [0, 0, 0], [ACK, ACK | FIN, ACK], [1, 0, 0], [True] * 3]
    lists.append([b"x", b"", memoryview(b"")])
    halves = [[], [], [], []]
    assert NATIVE.take_plain(0, *lists, *halves) == (1, 1, 0, 1, True)
    assert halves == [[(10, 1, b"x", 1)], [], [], [0]]
    # a segment with no data is kept as (seq, ts, b"", 0), whatever held its payload
    assert NATIVE.take_plain(2, *lists, *halves) == (3, 1, 0, 3, False)
    assert halves[0][-1] == (12, 3, b"", 0) and type(halves[0][-1][2]) is bytes
    assert NATIVE.take_plain(3, *lists, *halves)[:3] == (3, 0, 0)
    with pytest.raises(TypeError):
        NATIVE.take_plain(0, *lists, *halves[:3])
    with pytest.raises(TypeError):
        NATIVE.take_plain(0, *lists[:6], (), *halves)


def test_take_items_stops_where_add_takes_over():
    up = [(1, _seg(C, S, 10, b"ab")), (2, _seg(S, C, 50, b"cd")), (3, _seg(C, S, 12, b"", FIN))]
    reasm = TcpReassembler()
    # no connection open yet: the first segment is add's (it opens the connection)
    assert NATIVE.take_items(up, 0, reasm._open) == 0
    reasm.add(*up[0])
    assert NATIVE.take_items(up, 1, reasm._open) == 2  # stops at the FIN
    (conn,) = reasm._open.values()
    assert conn.last_ts == 2 and conn.halves[S].packets == 1 and conn.halves[C].acks == [0]
    assert conn.halves[S].segs == [(50, 2, b"cd", 2)]
    with pytest.raises(TypeError):
        NATIVE.take_items(up, 0)
    with pytest.raises(TypeError):
        NATIVE.take_items((), 0, {})
    assert NATIVE.take_items([(1, tuple(up[0][1])[:8])], 0, reasm._open) == 0


def test_no_reference_leaks():
    rng = random.Random(5)
    drawn = [_segments(rng) for _ in range(20)]

    def run(n: int) -> int:
        made = 0
        for i in range(n):
            segs = drawn[i % len(drawn)]
            batched = TcpReassembler()
            batched.add_batches(_batches(segs, 16))
            for c in reassemble(segs) + _by_fragments(segs, random.Random(i)) + batched.finish():
                made += len(c.to_server.runs) + len(c.to_client.runs)
        return made

    run(50)
    made, grown = blocks_left_by(lambda: run(2000))
    assert made > 2000
    assert grown < 1000, f"{grown} more blocks allocated after 2,000 reassemblies"
