"""Reading for the Spark job: one input (or packet range) into segment fragments.

A fragment is one row per TCP connection seen in a read partition: that partition's segments of
it (times, sequence numbers, flags, payloads as parallel Arrow lists, `schema.FRAGMENTS`). Rows
carry the connection key (both endpoints, in a direction-independent order), the file's rotation
ordinal and where the fragment starts in the file (its first segment's position among the file's
TCP segments, counted from its packet range's first packet), so after a shuffle by key and a
sort by (key, file_ord, first_index) every connection's segments arrive at one task in capture
order, whichever packet ranges or rotated files (tcpdump -C) they came from. Problems with the
file itself travel as rows with `issue_*` set. Segments are grouped in C (`fragments.c`) when it
is built; `_add` is the reference and takes what that leaves.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from ..decoding.pipeline import input_segment_batches
from ..reading.inputs import CaptureFile, file_size
from ..reading.native import NATIVE
from ..reading.pcap import CaptureFormatError, FileIssue, PacketRange
from .schema import FRAGMENTS

__all__ = ["Fragment", "fragment_groups", "fragments_of"]

# A fragment is closed at this many payload bytes or segments, so no Spark row grows huge
_FRAG_BYTES = 4 << 20
_FRAG_SEGS = 20_000
_BATCH_BYTES = 8 << 20  # Arrow batch size the reader aims for
# `fragment_groups`' loop over a batch of segments in C (`fragments.c`), or None: `_add`'s
_NATIVE_GROUP = None if NATIVE is None else NATIVE.group


class Fragment:
    """One connection's segments in one read partition, as parallel lists."""

    __slots__ = (
        "a",
        "b",
        "first_index",
        "ts",
        "seq",
        "ack",
        "flags",
        "wire",
        "from_a",
        "pay",
        "nbytes",
    )

    def __init__(self, a: tuple[bytes, int], b: tuple[bytes, int], first_index: int) -> None:
        self.a, self.b, self.first_index = a, b, first_index
        self.ts: list[int] = []
        self.seq: list[int] = []
        self.ack: list[int] = []
        self.flags: list[int] = []
        self.wire: list[int] = []
        self.from_a: list[bool] = []
        self.pay: list[bytes | memoryview] = []
        self.nbytes = 0


def _batch(frags: list[Fragment], issues: Sequence[FileIssue], file: CaptureFile) -> pa.RecordBatch:
    n = len(frags) + len(issues)
    none = [None] * len(issues)
    cols: dict[str, list[Any]] = {
        "group": [file.group] * n,
        "a_ip": [f.a[0] for f in frags] + none,
        "a_port": [f.a[1] for f in frags] + none,
        "b_ip": [f.b[0] for f in frags] + none,
        "b_port": [f.b[1] for f in frags] + none,
        "file": [file.name] * n,
        "file_ord": [file.ord] * n,
        "timed": [file.kind == "pcap"] * n,
        "first_index": [f.first_index for f in frags] + [i.offset for i in issues],
        "ts": [f.ts for f in frags] + none,
        "seq": [f.seq for f in frags] + none,
        "ack": [f.ack for f in frags] + none,
        "flags": [f.flags for f in frags] + none,
        "wire_len": [f.wire for f in frags] + none,
        "from_a": [f.from_a for f in frags] + none,
        "payload": [f.pay for f in frags] + none,
        "issue_status": [None] * len(frags) + [i.status for i in issues],
        "issue_offset": [None] * len(frags) + [i.offset for i in issues],
        "issue_length": [None] * len(frags) + [i.length for i in issues],
        "issue_message": [None] * len(frags) + [i.message for i in issues],
    }
    return pa.RecordBatch.from_pydict(cols, schema=FRAGMENTS)


def fragments_of(
    file: CaptureFile,
    packet_range: PacketRange | None = None,
    extra_issues: Sequence[FileIssue] = (),
    content: bytes | None = None,
    mtime: int = 0,
) -> Iterator[pa.RecordBatch]:
    """Segment fragments (Arrow batches of `FRAGMENTS`) of one input or packet range of it.

    `content` holds the file's bytes when Spark read them (binaryFile, remote inputs), `mtime`
    its modification time (epoch ns).
    """
    for frags, issues in fragment_groups(
        file, packet_range, extra_issues, content, mtime, copy=True
    ):
        yield _batch(frags, issues, file)


def _add(open_: dict[tuple, Fragment], item: tuple, first: int, copy: bool) -> Fragment | None:
    """One (ts, segment) into its connection's fragment; that fragment back if now full."""
    ts, (sip, sport, dip, dport, seq, ack, flags, payload, wire_len) = item
    src, dst = (sip, sport), (dip, dport)
    from_a = src <= dst
    key = (src, dst) if from_a else (dst, src)
    frag = open_.get(key)
    if frag is None:
        frag = open_[key] = Fragment(key[0], key[1], first)
    if copy:
        payload = bytes(payload)
    frag.ts.append(ts)
    frag.seq.append(seq)
    frag.ack.append(ack)
    frag.flags.append(flags)
    frag.wire.append(wire_len)
    frag.from_a.append(from_a)
    frag.pay.append(payload)
    frag.nbytes += len(payload)
    return frag if len(frag.pay) >= _FRAG_SEGS or frag.nbytes >= _FRAG_BYTES else None


def fragment_groups(
    file: CaptureFile,
    packet_range: PacketRange | None = None,
    extra_issues: Sequence[FileIssue] = (),
    content: bytes | None = None,
    mtime: int = 0,
    *,
    copy: bool = False,
) -> Iterator[tuple[list[Fragment], list[FileIssue]]]:
    """The fragments of `fragments_of` as objects, each group what one of its batches holds.

    The in-process engine takes them as they are (no Arrow batch to build and read back);
    `copy` detaches payloads from the file's buffer, as an Arrow batch needs.
    """
    open_: dict[tuple, Fragment] = {}
    done: list[Fragment] = []
    done_bytes = 0
    issues: list[FileIssue] = []
    first0 = 0 if packet_range is None else packet_range.first_index  # the first's first_index
    try:
        for batch in input_segment_batches(
            file, packet_range=packet_range, issues=issues, content=content, mtime=mtime
        ):
            i, n = 0, len(batch)
            while i < n:
                full = None
                if _NATIVE_GROUP is not None:
                    # the batch's segments in C, up to one that fills its fragment or one it
                    # leaves to the loop below
                    i, full = _NATIVE_GROUP(
                        batch, i, first0, open_, Fragment, copy, _FRAG_SEGS, _FRAG_BYTES
                    )
                if full is None and i < n:
                    full = _add(open_, batch[i], first0 + i, copy)
                    i += 1
                if full is not None:
                    # closed early so rows stay small; the next fragment of this key sorts after
                    done.append(open_.pop((full.a, full.b)))
                    done_bytes += full.nbytes
                    if done_bytes >= _BATCH_BYTES:
                        yield done, []
                        done, done_bytes = [], 0
            first0 += n
    except (CaptureFormatError, OSError, ValueError) as exc:
        size = len(content) if content is not None else file_size(file.path)
        issues.append(FileIssue(0, "malformed", size, f"not readable: {exc}"))
    done.extend(sorted(open_.values(), key=lambda f: f.first_index))
    issues.extend(extra_issues)
    if done or issues:
        yield done, issues
