"""Kafka framing: cut a reassembled direction into size-prefixed frames, and resynchronise.

After a gap, or when a capture starts mid-connection, the next frame boundary is not known. The
splitter then searches for an offset where a plausible header sits (sane size, known API key and
version for requests; for responses a correlation id the connection's requests used) and checks
it against the correlation-id sequence and the frame that follows. It never guesses silently:
bytes passed over while searching are reported as a `skipped` item with their count. Between
known boundaries each frame is cut by its size prefix, views of the run's bytes (what
`kipwire.codec.framing.FrameBuffer` would give, the sizes checked here first; its buffering
cost as much as the cutting). The whole frames of a run are cut in C (`framing.c`) when it is
built; the loop in `split_frames` is the reference and takes everything else.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from collections.abc import Collection, Iterator
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ..reading.reassembly import Stream

from ..reading.frame_dumps import MAX_FRAME, plausible_request_header
from ..reading.native import NATIVE

__all__ = ["FrameItem", "split_frames"]

_MIN_REQUEST = 8  # api_key, api_version, correlation_id
_MIN_RESPONSE = 4  # correlation_id
_RESYNC_CANDIDATES = 200_000  # bounds the work spent searching one run

_i32 = struct.Struct(">i").unpack_from
_OFFSET = itemgetter(1)  # FrameItem.offset, as a C call
_resp_head = struct.Struct(">ii").unpack_from  # size, correlation_id

# Candidate request headers: size >= 8 and < 128 MiB, api key < 256, version < 64, correlation
# id >= 0. The regex finds candidates at C speed; each is then checked in full.
_REQUEST_RE = re.compile(
    rb"(?![\x00]{3}[\x00-\x07])[\x00-\x07][\x00-\xff]{3}\x00[\x00-\xff]\x00[\x00-\x3f][\x00-\x7f]",
    re.S,
)
_RESPONSE_RE = re.compile(rb"(?![\x00]{3}[\x00-\x03])[\x00-\x07][\x00-\xff]{3}[\x00-\x7f]", re.S)
# The whole frames of a run in C (`framing.c`), or None: the frame loop of `split_frames`
_NATIVE_FRAMES = None if NATIVE is None else NATIVE.frames


class FrameItem(NamedTuple):
    """One piece of a direction: a whole frame, a truncated frame, a gap or skipped bytes."""

    kind: str  # "frame", "truncated", "gap", "skipped"
    offset: int  # stream offset of the item's first byte (the size prefix for frames)
    ts_ns: int | None  # capture time of the segment carrying the first byte
    length: int | None  # frames: the size field; gap/skipped: byte count; None if unknown
    data: memoryview | bytes  # frame bytes after the prefix (partial when truncated)
    captured: int  # captured payload bytes this item accounts for (0 for a gap)
    note: str = ""


class _Splitter:
    """State of one direction's framing."""

    def __init__(self, requests: bool, expected: Collection[int] | None) -> None:
        self.requests = requests
        self.expected = set(expected) if expected is not None else None
        self.last_corr: int | None = None
        self.items: list[FrameItem] = []

    # -- candidate checks -------------------------------------------------------------

    def _header(self, buf: bytes, pos: int) -> tuple[int, int] | None:
        """(size, corr) of a plausible header at pos, or None."""
        if self.requests:
            return plausible_request_header(buf, pos)
        if len(buf) - pos < 8:
            return None
        size, corr = _resp_head(buf, pos)
        if _MIN_RESPONSE <= size <= MAX_FRAME and corr >= 0:
            return size, corr
        return None

    def _strong(self, corr: int, missing: int) -> bool:
        """Does the correlation id fit the sequence seen so far on this connection?"""
        if self.requests:
            if self.last_corr is None:
                return False
            step = corr - self.last_corr
            # clients number requests upwards; requests lost in the gap explain a jump
            return 0 < step <= 1 + missing // _MIN_REQUEST + (1 << 16)
        return bool(self.expected) and corr in self.expected

    def _accept(self, buf: bytes, q: int, end: int, missing: int, limit: int) -> bool:
        """Decide whether a frame starting at q is real, checking the frame after it.

        `limit` is where the sender's stream ends, in buf's coordinates (past `end` when bytes
        were lost after this run).
        """
        head = self._header(buf, q)
        if head is None:
            return False
        size, corr = head
        strong = self._strong(corr, missing)
        nxt = q + 4 + size
        if nxt > limit:
            return False  # longer than what the sender sent
        if nxt == end:
            # the frame fills the run exactly: believable if the corr id fits, or the stream ends
            return strong or nxt == limit
        if nxt > end:
            return strong  # runs past the captured bytes: nothing after it to check
        after = self._header(buf, nxt)
        if after is None:
            return False
        if strong:
            return True
        # a weak candidate needs the next frame to continue the correlation-id sequence
        step = after[1] - corr
        if not self.requests and self.expected and after[1] in self.expected:
            return True
        return 0 < step <= 1 << 16

    def _candidates(self, buf: bytes, p: int, end: int) -> Iterator[int]:
        """Offsets worth checking as frame starts, ascending, starting with p itself."""
        yield p
        if not self.requests and self.expected:
            # a response begins with a correlation id the requests used: find those bytes
            found: set[int] = set()
            for corr in self.expected:
                needle = struct.pack(">i", corr)
                i = buf.find(needle, p + 5, end)
                while i != -1 and len(found) < _RESYNC_CANDIDATES:
                    found.add(i - 4)
                    i = buf.find(needle, i + 1, end)
            yield from sorted(found)
            return
        regex = _REQUEST_RE if self.requests else _RESPONSE_RE
        for n, m in enumerate(regex.finditer(buf, p + 1, end)):
            if n >= _RESYNC_CANDIDATES:
                return
            yield m.start()

    def resync(self, buf: bytes, p: int, end: int, missing: int, limit: int) -> int | None:
        """Offset of the next believable frame start in buf[p:end], or None."""
        for q in self._candidates(buf, p, end):
            if self._accept(buf, q, end, missing, limit):
                return q
        return None


def split_frames(
    stream: Stream, *, requests: bool, expected_corr: Collection[int] | None = None
) -> list[FrameItem]:
    """Cut one direction into frame items; every captured byte lands in exactly one item.

    `requests` says which side this is (it decides the header checks); `expected_corr` are the
    correlation ids of the connection's requests, used to recognise responses after a gap.
    """
    sp = _Splitter(requests, expected_corr)
    items = sp.items
    min_size = _MIN_REQUEST if requests else _MIN_RESPONSE
    runs = stream.runs
    # offset 0 after a SYN is a frame boundary; otherwise the first frame must be found
    expect: int | None = 0 if stream.syn and stream.start == 0 else None
    # a frame cut short: [offset, size, captured, first piece, ts]
    open_frame: list | None = None
    missing = 0  # bytes missing since the last known boundary, for the correlation-id check
    pos = stream.start

    def close_open(note: str) -> None:
        nonlocal open_frame
        off, size, captured, piece, ts = open_frame  # type: ignore[misc]
        items.append(FrameItem("truncated", off, ts, size, piece, captured, note))
        open_frame = None

    for run in runs:
        buf = run.data
        base = run.offset
        end = len(buf)
        limit = stream.end - base  # the sender's stream end, in this run's coordinates
        if base > pos:
            items.append(FrameItem("gap", pos, run.ts_at(base), base - pos, b"", 0))
            missing += base - pos
            if open_frame is not None and open_frame[0] + 4 + open_frame[1] <= base:
                close_open("frame ends inside a gap")
        p = 0
        if open_frame is not None:
            # the run continues a frame begun before the gap; its end is known from its size
            frame_end = open_frame[0] + 4 + open_frame[1]
            take = min(frame_end - base, end)
            open_frame[2] += take
            p = take
            if frame_end > base + end:
                pos = run.end
                continue
            close_open("part of the frame is in a gap")
        elif expect != base:
            expect = None  # the boundary fell inside the gap
        aligned = expect is not None or open_frame is None and p > 0
        if not aligned:
            q = sp.resync(buf, p, end, missing, limit)
            stop = end if q is None else q
            if stop > p:
                note = "no plausible frame boundary" if q is None else "bytes before a frame"
                ts = run.ts_at(base + p)
                items.append(
                    FrameItem("skipped", base + p, ts, stop - p, buf[p:stop], stop - p, note)
                )
            p = stop
            aligned = q is not None
        mv = memoryview(buf)
        # the capture time of the segment holding each frame's first byte (`Run.ts_at`), kept
        # as an index into the run's marks: frames come in offset order
        marks, stamps = run.marks, run.stamps
        last_mark = len(marks) - 1
        j = max(bisect_right(marks, base + p) - 1, 0)
        while p < end:
            if _NATIVE_FRAMES is not None:
                # the run's whole frames in one call; what is not one is left to the code below
                p, j, corr = _NATIVE_FRAMES(
                    items, mv, base, p, marks, stamps, j, min_size, MAX_FRAME, requests, FrameItem
                )
                if corr is not None:
                    sp.last_corr = corr
                if p >= end:
                    break
            off = base + p
            while j < last_mark and marks[j + 1] <= off:
                j += 1
            ts = stamps[j]
            if end - p < 4:
                # a size prefix cut by a gap or by the end of the capture: its frame is unknown
                items.append(
                    FrameItem("truncated", off, ts, None, mv[p:end], end - p, "prefix cut short")
                )
                p = end
                aligned = False
                break
            (size,) = _i32(buf, p)
            if size < min_size or size > MAX_FRAME:
                q = sp.resync(buf, p + 1, end, 0, limit)
                stop = end if q is None else q
                note = f"implausible frame size {size}"
                items.append(FrameItem("skipped", off, ts, stop - p, mv[p:stop], stop - p, note))
                p = stop
                aligned = q is not None
                continue
            nxt = p + 4 + size
            if nxt > end:
                open_frame = [off, size, end - p, mv[p + 4 : end], ts]
                break
            body = mv[p + 4 : nxt]
            items.append(FrameItem("frame", off, ts, size, body, 4 + size))
            if requests:
                sp.last_corr = _i32(body, 4)[0]
            p = nxt
        missing = 0 if aligned else missing
        if open_frame is not None:
            expect = open_frame[0] + 4 + open_frame[1]  # known even if it falls in a gap
        else:
            expect = base + end if aligned else None
        pos = run.end
    if open_frame is not None:
        close_open("frame cut off by the end of the capture")
    if stream.end > pos:
        items.append(FrameItem("gap", pos, None, stream.end - pos, b"", 0, "missing at the end"))
    # a frame cut by a gap is reported when its end is known, after the gap: restore stream order
    items.sort(key=_OFFSET)
    return items
