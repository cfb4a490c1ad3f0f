"""TCP reassembly: segments to per-connection, per-direction byte streams with gaps recorded.

Handles out-of-order segments, retransmissions and overlaps (the first copy in sequence order
wins), port reuse (a new SYN starts a new connection), segments cut by the snap length, missing
segments (a gap with its size), and captures that start mid-connection (no SYN). It knows TCP
only: which endpoint is the broker comes from the SYN or SYN-ACK; without either the connection
leaves here in address order with an empty `role_source`, and the decoding stage decides from
the payload (`captures.decoding.roles.orient`). Taking segments without SYN, FIN or RST and
stitching one direction into runs run in C (`reassembly.c`, through `native`) when it is built;
`_take` and `_assemble_half` are the reference.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .native import NATIVE
from .packets import ACK, FIN, RST, SYN, TcpSegment, format_ip

__all__ = [
    "Connection",
    "Endpoint",
    "Run",
    "Stream",
    "TcpReassembler",
    "connection_key",
    "reassemble",
]

Endpoint = tuple[bytes, int]  # (packed IP address, port)

_MOD = 1 << 32
_HALF = 1 << 31
# `_assemble_half`'s stitching in C (`reassembly.c`), or None: the Python code below
_NATIVE_HALF = None if NATIVE is None else NATIVE.assemble_half
# `add_fragment`'s segments without SYN, FIN or RST in C (`reassembly.c`), or None
_NATIVE_TAKE = None if NATIVE is None else NATIVE.take_plain
# `add_batches`' segments of open connections without SYN, FIN or RST in C, or None
_NATIVE_ITEMS = None if NATIVE is None else NATIVE.take_items


def _diff(a: int, b: int) -> int:
    """Signed distance from sequence number b to a, modulo 2**32."""
    return ((a - b + _HALF) % _MOD) - _HALF


def connection_key(seg: TcpSegment) -> tuple[Endpoint, Endpoint]:
    """Direction-independent key of the 4-tuple (the Spark job shuffles on it)."""
    a = (seg.src, seg.sport)
    b = (seg.dst, seg.dport)
    return (a, b) if a <= b else (b, a)


@dataclass(slots=True)
class Run:
    """Contiguous captured bytes of one direction, with where each segment's bytes begin."""

    offset: int  # stream offset of data[0]
    data: bytes
    marks: list[int]  # stream offsets where a segment's new bytes start (ascending)
    stamps: list[int]  # capture time (ns) of the segment for each mark

    @property
    def end(self) -> int:
        """Stream offset just past the run."""
        return self.offset + len(self.data)

    def ts_at(self, offset: int) -> int:
        """Capture time of the segment that carried the byte at stream `offset`."""
        i = bisect_right(self.marks, offset) - 1
        return self.stamps[max(i, 0)]


@dataclass(slots=True)
class Stream:
    """One direction of a connection: runs of captured bytes; what lies between runs is missing."""

    runs: list[Run] = field(default_factory=list)
    start: int = 0  # stream offset where the capture begins (0 = the first byte after SYN)
    end: int = 0  # stream offset where the sender's data ends, as far as the capture shows
    syn: bool = False  # offset 0 is the true start of the stream, so a frame boundary
    fin: bool = False
    rst: bool = False
    packets: int = 0
    retransmitted: int = 0  # captured payload bytes seen more than once
    wire_bytes: int = 0  # payload bytes of all segments, as sent (with retransmissions)

    @property
    def captured(self) -> int:
        """Distinct payload bytes captured."""
        return sum(len(r.data) for r in self.runs)

    @property
    def missing(self) -> int:
        """Bytes the sender sent that the capture lacks (sum of all gaps)."""
        return self.end - self.start - self.captured

    def gaps(self) -> list[tuple[int, int]]:
        """(offset, size) of every hole, including one before the first run or after the last."""
        out = []
        pos = self.start
        for r in self.runs:
            if r.offset > pos:
                out.append((pos, r.offset - pos))
            pos = r.end
        if self.end > pos:
            out.append((pos, self.end - pos))
        return out


@dataclass(slots=True)
class Connection:
    """A reassembled TCP connection; its client and broker are decided once `role_source` is."""

    client: Endpoint
    server: Endpoint
    to_server: Stream  # requests
    to_client: Stream  # responses
    first_ts: int
    last_ts: int
    role_source: str  # syn; empty until the decoding stage decides (kafka, port_hint, port_order)
    packets: int

    @property
    def uid(self) -> str:
        """Stable id of the connection: same 4-tuple and start time give the same id."""
        raw = b"%s:%d>%s:%d@%d" % (
            self.client[0],
            self.client[1],
            self.server[0],
            self.server[1],
            self.first_ts,
        )
        return "C" + hashlib.blake2b(raw, digest_size=9).hexdigest()

    @property
    def orig_h(self) -> str:
        """Client address as text."""
        return format_ip(self.client[0])

    @property
    def resp_h(self) -> str:
        """Broker address as text."""
        return format_ip(self.server[0])


class _Half:
    """Segments of one direction, gathered before assembly."""

    __slots__ = ("segs", "syn_seq", "fin_seq", "rst", "packets", "acks", "order")

    def __init__(self) -> None:
        self.segs: list[tuple[int, int, memoryview | bytes, int]] = []  # seq, ts, payload, wire_len
        self.syn_seq: int | None = None
        self.fin_seq: int | None = None
        self.rst = False
        self.packets = 0
        self.acks: list[int] = []  # sequence numbers the peer acknowledged in this half's space
        self.order = 0


class _Conn:
    __slots__ = (
        "key",
        "halves",
        "first_ts",
        "last_ts",
        "client",
        "syn_ack_from",
        "has_data",
        "closed",
    )

    def __init__(self, key: tuple[Endpoint, Endpoint], ts: int) -> None:
        self.key = key
        self.halves: dict[Endpoint, _Half] = {key[0]: _Half(), key[1]: _Half()}
        self.first_ts = ts
        self.last_ts = ts
        self.client: Endpoint | None = None  # sender of the SYN
        self.syn_ack_from: Endpoint | None = None
        self.has_data = False
        self.closed = False


class TcpReassembler:
    """Feed segments in capture order with `add`; `finish` returns the connections."""

    def __init__(self) -> None:
        self._open: dict[tuple[Endpoint, Endpoint], _Conn] = {}
        self._done: list[_Conn] = []

    def add(self, ts_ns: int, seg: TcpSegment) -> None:
        """Take one segment (payload may be a view; it is kept, not copied)."""
        # unpacked at once: nine attribute lookups on the namedtuple cost more than the rest
        sip, sport, dip, dport, seq, ack, flags, payload, wire_len = seg
        a, b = (sip, sport), (dip, dport)
        self._take(ts_ns, a, b, (a, b) if a <= b else (b, a), seq, ack, flags, payload, wire_len)

    def add_fragment(self, a: Endpoint, b: Endpoint, frag: Any) -> None:
        """Take one connection's segments held as parallel lists (`frag.ts`, `.seq`, `.ack`,
        `.flags`, `.wire`, `.from_a`, `.pay`: a fragment of `engines.fragments`), in order, each
        as `add` takes it, without a TcpSegment each."""
        key = (a, b) if a <= b else (b, a)
        take = self._take
        lists = (frag.ts, frag.seq, frag.ack, frag.flags, frag.wire, frag.from_a, frag.pay)
        if _NATIVE_TAKE is not None and all(
            type(x) is list and len(x) == len(frag.ts) for x in lists
        ):
            self._take_lists(a, b, key, lists)
            return
        for ts, seq, ack, flags, wire, from_a, pay in zip(*lists, strict=True):
            if from_a:
                take(ts, a, b, key, seq, ack, flags, pay, wire)
            else:
                take(ts, b, a, key, seq, ack, flags, pay, wire)

    def _take_lists(
        self, a: Endpoint, b: Endpoint, key: tuple[Endpoint, Endpoint], lists: tuple[list, ...]
    ) -> None:
        """`add_fragment`'s loop with the runs of segments without SYN, FIN or RST in C."""
        i, n = 0, len(lists[0])
        while i < n:
            conn = self._open.get(key)
            if conn is not None:
                ha, hb = conn.halves[a], conn.halves[b]
                i, pa, pb, last, data = _NATIVE_TAKE(i, *lists, ha.segs, hb.segs, ha.acks, hb.acks)
                ha.packets += pa
                hb.packets += pb
                if pa or pb:
                    conn.last_ts = last
                    conn.has_data = conn.has_data or data
                if i >= n:
                    return
            ts, seq, ack, flags, wire, from_a, pay = (x[i] for x in lists)
            if from_a:
                self._take(ts, a, b, key, seq, ack, flags, pay, wire)
            else:
                self._take(ts, b, a, key, seq, ack, flags, pay, wire)
            i += 1

    def _take(
        self,
        ts_ns: int,
        src: Endpoint,
        b: Endpoint,
        key: tuple[Endpoint, Endpoint],
        seq: int,
        ack: int,
        flags: int,
        payload: memoryview | bytes,
        wire_len: int,
    ) -> None:
        """One segment from `src` to `b` of the connection `key` (the two, ordered)."""
        conn = self._open.get(key)
        if flags & SYN and not flags & ACK:
            # a SYN with a new ISN after data or a close is a new connection on a reused port
            if conn is not None:
                prior = conn.halves.get(src)
                same = prior is not None and prior.syn_seq == seq
                if not same and (conn.has_data or conn.closed or conn.client is not None):
                    self._done.append(conn)
                    conn = None
            if conn is None:
                conn = self._open[key] = _Conn(key, ts_ns)
            conn.client = src
        elif conn is None:
            conn = self._open[key] = _Conn(key, ts_ns)
        if flags & SYN and flags & ACK:
            conn.syn_ack_from = src
        conn.last_ts = ts_ns
        half = conn.halves[src]
        half.packets += 1
        if flags & SYN:
            half.syn_seq = seq
        if flags & RST:
            half.rst = True
            conn.closed = True
        elif flags & ACK:
            conn.halves[b].acks.append(ack)
        if flags & FIN:
            half.fin_seq = (seq + wire_len) & 0xFFFFFFFF
            conn.closed = True
        if wire_len or len(payload):
            conn.has_data = True
            half.segs.append((seq, ts_ns, payload, wire_len))
        elif not flags & (SYN | RST):
            # a pure ACK still tells how far the sender's stream reached
            half.segs.append((seq, ts_ns, b"", 0))

    def add_many(self, items: Iterable[tuple[int, TcpSegment]]) -> None:
        """Add (ts_ns, segment) pairs."""
        take = self._take  # `add`'s body inline: one call per segment, not two
        for ts, (sip, sport, dip, dport, seq, ack, flags, payload, wire_len) in items:
            a, b = (sip, sport), (dip, dport)
            take(ts, a, b, (a, b) if a <= b else (b, a), seq, ack, flags, payload, wire_len)

    def add_batches(self, batches: Iterable[list[tuple[int, TcpSegment]]]) -> None:
        """Add (ts_ns, segment) pairs in lists, as `add_many` does: the segments of open
        connections without SYN, FIN or RST in C (`reassembly.c` take_items), the others by
        `add`, each in capture order."""
        for batch in batches:
            if _NATIVE_ITEMS is None:
                self.add_many(batch)
                continue
            i, n = 0, len(batch)
            while i < n:
                i = _NATIVE_ITEMS(batch, i, self._open)
                if i < n:
                    ts, seg = batch[i]
                    self.add(ts, seg)
                    i += 1

    def finish(self) -> list[Connection]:
        """Assemble every connection seen, in order of first packet."""
        conns = self._done + list(self._open.values())
        self._done = []
        self._open = {}
        conns.sort(key=lambda c: c.first_ts)
        return [self._assemble(c) for c in conns]

    def _assemble(self, c: _Conn) -> Connection:
        a, b = c.key
        streams = {ep: _assemble_half(h) for ep, h in c.halves.items()}
        if c.client is not None:
            client, source = c.client, "syn"
        elif c.syn_ack_from is not None:
            client, source = (b if c.syn_ack_from == a else a), "syn"
        else:
            client, source = a, ""  # no handshake seen: address order, the decoder decides
        server = b if client == a else a
        return Connection(
            client=client,
            server=server,
            to_server=streams[client],
            to_client=streams[server],
            first_ts=c.first_ts,
            last_ts=c.last_ts,
            role_source=source,
            packets=sum(h.packets for h in c.halves.values()),
        )


def _assemble_half(h: _Half) -> Stream:
    """Order one direction's segments by sequence number and stitch them into runs."""
    st = Stream(syn=h.syn_seq is not None, fin=h.fin_seq is not None, rst=h.rst, packets=h.packets)
    segs = h.segs
    if not segs:
        return st
    if _NATIVE_HALF is not None:
        done = _NATIVE_HALF(segs, h.syn_seq, h.fin_seq, h.acks, Run)
        if done is not None:
            st.runs, st.start, st.end, st.wire_bytes, st.retransmitted = done
            return st
    # unwrap 32-bit sequence numbers against the previous segment in capture order, so streams
    # past 4 GiB and segments arriving out of order both get monotonic 64-bit offsets
    ref = h.syn_seq + 1 if h.syn_seq is not None else segs[0][0]
    last_seq, last_off = ref, 0
    placed: list[tuple[int, int, int, memoryview | bytes, int]] = []
    data_min: int | None = None
    claimed_end = 0
    for i, (seq, ts, payload, wire_len) in enumerate(segs):
        off = last_off + ((seq - last_seq + _HALF) % _MOD) - _HALF  # _diff, inline: per segment
        last_seq, last_off = seq, off
        if wire_len or payload:
            placed.append((off, i, ts, payload, wire_len))
            if data_min is None or off < data_min:
                data_min = off
            st.wire_bytes += wire_len
        end = off + wire_len
        if end > claimed_end:
            claimed_end = end
    start = 0 if h.syn_seq is not None else (data_min if data_min is not None else 0)
    if data_min is not None and data_min < start:
        start = data_min  # data before the SYN's ISN: trust the data
    # the peer's acknowledgements show data that was sent even if no segment of it was captured
    fin_off = None
    if h.fin_seq is not None:
        fin_off = last_off + _diff(h.fin_seq, last_seq)
    # acks arrive almost in order: the furthest one is among the last few
    for ack in h.acks[-8:]:
        ack_off = last_off + _diff(ack, last_seq)
        if fin_off is not None and ack_off > fin_off:
            ack_off = fin_off
        if start <= ack_off <= claimed_end + (1 << 30) and ack_off > claimed_end:
            claimed_end = ack_off
    if fin_off is not None:
        # the FIN ends the data; the ACKs that follow it sit one past it, which is not data
        claimed_end = fin_off
    placed.sort()  # by offset, then capture order: (off, i) is unique, so nothing else compares
    runs = st.runs
    pos = start
    parts: list[memoryview | bytes] = []
    marks: list[int] = []
    stamps: list[int] = []
    run_off = start
    for off, _i, ts, payload, _wire in placed:
        n = len(payload)
        if off + n <= pos:
            st.retransmitted += n
            continue
        if off > pos:
            if parts:
                runs.append(Run(run_off, b"".join(parts), marks, stamps))
                parts, marks, stamps = [], [], []
            run_off = pos = off
        skip = pos - off
        st.retransmitted += skip
        parts.append(payload[skip:] if skip else payload)
        marks.append(pos)
        stamps.append(ts)
        pos = off + n
    if parts:
        runs.append(Run(run_off, b"".join(parts), marks, stamps))
    st.start = start
    st.end = max(pos, claimed_end)
    return st


def reassemble(items: Iterable[tuple[int, TcpSegment]]) -> list[Connection]:
    """Reassemble (ts_ns, segment) pairs into connections."""
    r = TcpReassembler()
    r.add_many(items)
    return r.finish()
