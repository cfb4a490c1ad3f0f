"""The compiled grouping of segments into fragments (`engines/fragments.c`) against `_add`.

Both paths must give the same fragments (keys, first indexes, every list, payload types, byte
counts, where fragments close) and the same issues for captures of many interleaved
connections, the shared real captures, mutated copies, packet ranges, with and without copied
payloads, and under limits small enough to close fragments often; the local engine's tables
stay the same. What the C loop leaves to Python (items that are not segments as the walker
makes them) is handed back at the item, not read differently.
"""

from __future__ import annotations

import io
import random
import struct

import pytest
from captures_testkit import SHARED_CAPTURES, mutate, request_frame, response_frame
from memory_growth import blocks_left_by

from kipwire.captures.engines import fragments
from kipwire.captures.engines.fragments import Fragment, fragment_groups
from kipwire.captures.reading.inputs import CaptureFile
from kipwire.captures.reading.native import NATIVE
from kipwire.captures.reading.packets import ACK, TcpSegment
from kipwire.captures.reading.pcap import PcapngWriter, scan_index
from kipwire.codec import ApiKey

pytestmark = pytest.mark.skipif(NATIVE is None, reason="the capture loops are not built")

_T = 1_700_000_000_000_000_000


def _interleaved(connections: int, exchanges: int, seed: int) -> bytes:
    rng = random.Random(seed)
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        convs = [
            w.conversation((f"10.1.{i % 3}.{i + 2}", 50000 + i), ("10.1.0.1", 9092 + i % 2), _T)
            for i in range(connections)
        ]
        for n in range(exchanges):
            conv = rng.choice(convs)
            body = b"b" * rng.randint(0, 300)
            conv.client_sends(request_frame(ApiKey.METADATA, 9, n, body), _T + 1000 * n)
            conv.server_sends(response_frame(n, body), _T + 1000 * n + 500)
        for conv in convs:
            conv.close(_T + 10**9)
    return buf.getvalue()


def _shape(groups) -> list:
    return [
        (
            [
                (f.a, f.b, f.first_index, f.ts, f.seq, f.ack, f.flags, f.wire, f.from_a)
                + ([bytes(p) for p in f.pay], [type(p) for p in f.pay], f.nbytes)
                for f in frags
            ],
            issues,
        )
        for frags, issues in groups
    ]


def _both(monkeypatch, tmp_path, data: bytes, **kw) -> list:
    path = tmp_path / "cap.pcapng"
    path.write_bytes(data)
    file = CaptureFile("cap.pcapng", str(path), 0)
    got = _shape(fragment_groups(file, **kw))
    with monkeypatch.context() as m:
        m.setattr(fragments, "_NATIVE_GROUP", None)
        assert _shape(fragment_groups(file, **kw)) == got
    return got


def test_captures_give_the_python_fragments(monkeypatch, tmp_path):
    caps = [_interleaved(12, 400, 1), _interleaved(1, 50, 2)]
    if SHARED_CAPTURES.is_dir():
        caps += [p.read_bytes() for p in sorted(SHARED_CAPTURES.glob("*/*.pcap*"))]
    rng = random.Random(9)
    caps += [mutate(rng, caps[n % 2]) for n in range(30)]
    closed = 0
    for n, data in enumerate(caps):
        with monkeypatch.context() as m:
            if n % 2:
                # limits small enough that fragments close mid-batch, and batches close too
                m.setattr(fragments, "_FRAG_SEGS", 7)
                m.setattr(fragments, "_FRAG_BYTES", 900)
                m.setattr(fragments, "_BATCH_BYTES", 3000)
            got = _both(monkeypatch, tmp_path, data, copy=n % 3 == 0)
        closed += sum(len(frags) for frags, _ in got) > 1
    assert closed > 10


def test_packet_ranges_give_the_python_fragments(monkeypatch, tmp_path):
    data = _interleaved(5, 200, 3)
    ranges = scan_index(data).split(max_bytes=6000)
    assert len(ranges) > 3
    for rng in ranges:
        assert _both(monkeypatch, tmp_path, data, packet_range=rng)


def _segment(sip=b"\x0a\0\0\x01", sport=5000, dip=b"\x0a\0\0\x02", dport=9092, payload=b"x"):
    return TcpSegment(sip, sport, dip, dport, 1, 2, ACK, payload, len(payload))


def _group(items, i=0, open_=None, frag=Fragment, copy=False, segs=100, nbytes=1000):
    open_ = {} if open_ is None else open_
    return NATIVE.group(items, i, 10, open_, frag, copy, segs, nbytes), open_


def test_what_it_does_not_take_is_left_at_the_item():
    good = (1, _segment())
    for odd in [
        (1, tuple(_segment())),  # not a TcpSegment
        (1, _segment(sip=bytearray(4))),  # an address that is not bytes
        (1, _segment(sport=True)),  # a port that is not an int
        (1, _segment(dport=1 << 80)),
        (1, _segment(), 3),
        [1, _segment()],
    ]:
        (i, full), open_ = _group([good, good, odd, good])
        assert (i, full) == (2, None), odd
        (frag,) = open_.values()
        assert frag.ts == [1, 1] and frag.nbytes == 2 and frag.first_index == 10
    # the segment that fills its fragment ends the call, after it
    (i, full), open_ = _group([good] * 5, segs=3)
    assert i == 3 and full is next(iter(open_.values())) and len(full.pay) == 3
    (i, full), _ = _group([good, (2, _segment(payload=b"y" * 50))], nbytes=40)
    assert i == 2 and full.nbytes == 51
    # a fragment whose lists are not lists is the Python loop's
    weird = Fragment((b"\x0a\0\0\x01", 5000), (b"\x0a\0\0\x02", 9092), 0)
    weird.ts = ()
    (i, full), _ = _group([good], open_={(weird.a, weird.b): weird})
    assert (i, full) == (0, None) and weird.ts == ()
    # copied payloads are bytes; views are kept as they are
    view = memoryview(b"abc")
    (_, _), open_ = _group([(1, _segment(payload=view))], copy=True)
    assert next(iter(open_.values())).pay == [b"abc"]
    (_, _), open_ = _group([(1, _segment(payload=view))])
    assert next(iter(open_.values())).pay[0] is view


def test_many_connections_in_one_batch_keep_their_counts():
    items = [
        (n, _segment(sport=4000 + n % 20, payload=b"p" * (n % 5 + 1))) for n in range(400)
    ]  # more connections than the C loop keeps at hand
    (i, full), open_ = _group(items, segs=1000, nbytes=1 << 20)
    assert (i, full) == (400, None) and len(open_) == 20
    for frag in open_.values():
        assert frag.nbytes == sum(len(p) for p in frag.pay)
        assert frag.first_index == 10 + frag.ts[0]


def test_bad_arguments_are_errors():
    with pytest.raises(TypeError):
        NATIVE.group([], 0, 0, {}, Fragment, False, 1)
    with pytest.raises(TypeError):
        NATIVE.group((), 0, 0, {}, Fragment, False, 1, 1)
    with pytest.raises(TypeError):
        NATIVE.group([], 0, 0, [], Fragment, False, 1, 1)
    with pytest.raises(ZeroDivisionError):
        NATIVE.group([(1, _segment())], 0, 0, {}, lambda *a: 1 / 0, False, 1, 1)


def test_no_reference_leaks():
    items = [(n, _segment(sport=4000 + n % 11, payload=struct.pack(">i", n))) for n in range(300)]

    def run(n: int) -> int:
        made = 0
        for k in range(n):
            i, open_ = 0, {}
            while i < len(items):
                (i, full), _ = _group(items, i, open_, copy=k % 2 == 0, segs=13)
                made += full is not None
        return made

    run(20)
    made, grown = blocks_left_by(lambda: run(1000))
    assert made > 1000
    assert grown < 1000, f"{grown} more blocks allocated after 1,000 groupings"
