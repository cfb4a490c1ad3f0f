"""A capture's packets as TCP segments: through the compiled walker (`walk.c`) when it is built.

`tcp_segments` gives (ts_ns, segment) for every TCP packet of a `PacketReader` and counts the
rest by reason. The Python readers (`pcap.PacketReader`, `packets.parse_tcp`) are the reference:
the walker reads the plain blocks and records and stops at anything else, which the Python
reader then takes one block at a time; a frame the walker does not turn into a segment comes
back whole for `parse_tcp`, which says why it is not one (`native` loads the walker).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from . import native
from .packets import TcpSegment, parse_tcp
from .pcap import Packet, PacketReader, Section

__all__ = ["batched", "tcp_segment_batches", "tcp_segments"]

T = TypeVar("T")

_BATCH = 1024  # packets per call into the walker: memory stays flat on any file size


def tcp_segments(
    reader: PacketReader, stats: Any, *, copy: bool = False, pure: bool = False
) -> Iterator[tuple[int, TcpSegment]]:
    """(ts_ns, segment) of every TCP packet; `stats` (a `pipeline.PacketStats`) counts them all.

    `copy` detaches payloads from the file buffer; `pure` keeps to the Python path.
    """
    for batch in tcp_segment_batches(reader, stats, copy=copy, pure=pure):
        yield from batch


def tcp_segment_batches(
    reader: PacketReader, stats: Any, *, copy: bool = False, pure: bool = False
) -> Iterator[list[tuple[int, TcpSegment]]]:
    """`tcp_segments` in lists (what one call into the walker reads), in the same order."""
    walker = None if pure else native.NATIVE
    if walker is None:
        yield from batched(_segments_of(reader, stats, copy))
        return
    start, end, _ = reader.bounds()
    buf = reader.buf
    ctx = reader.context
    little = ctx.endian == "<"
    if reader.kind == "pcap":
        iface = ctx.interfaces[0]
        ifaces: tuple = ((iface.linktype, iface.ts_units, 0),)
        pos = start
        while pos < end:
            items, pos, n, tcp, cut, stopped = walker.walk(
                buf, pos, end, False, little, ifaces, copy, _BATCH
            )
            yield _taken(items, stats, n, tcp, cut, copy)
            if stopped:
                # a record cut short or of a bad length: the Python reader's issue ends the file
                yield from batched(_segments_of(reader._iter_pcap(pos, end, 0), stats, copy))
                return
        return
    at = Section(ctx.endian, list(ctx.interfaces))
    ifaces = _interfaces(at)
    pos = start
    while pos < end:
        items, pos, n, tcp, cut, stopped = walker.walk(
            buf, pos, end, True, at.endian == "<", ifaces, copy, _BATCH
        )
        yield _taken(items, stats, n, tcp, cut, copy)
        if stopped:
            # a block the walker leaves (section or interface header, a problem): one block of
            # the Python reader, which may change the section, then the walker again
            one = _segments_of(reader._iter_pcapng(pos, end, 0, at, one=True), stats, copy)
            yield from batched(one)
            pos = at.pos
            ifaces = _interfaces(at)


def batched(items: Iterable[T]) -> Iterator[list[T]]:
    """`items` in lists of up to a walker batch; a list cut short by an error comes first."""
    batch: list[T] = []
    try:
        for item in items:
            batch.append(item)
            if len(batch) >= _BATCH:
                yield batch
                batch = []
    except Exception:
        if batch:
            yield batch  # what came before the error, then the error, as one by one
        raise
    if batch:
        yield batch


def _interfaces(at: Section) -> tuple:
    return tuple((i.linktype, i.ts_units, i.ts_offset_s) for i in at.interfaces)


def _taken(
    items: list[tuple], stats: Any, packets: int, tcp: int, cut: int, copy: bool
) -> list[tuple[int, TcpSegment]]:
    """The walker's items as segments: its own, and `parse_tcp`'s of the frames it left."""
    stats.packets += packets
    stats.tcp += tcp
    stats.truncated += cut
    if tcp == packets:
        return items  # every item is the walker's (ts, segment)
    out = []
    for item in items:
        if len(item) == 2:
            out.append(item)
            continue
        ts, linktype, frame = item
        seg = _parsed(linktype, frame, stats, copy)
        if seg is not None:
            out.append((ts, seg))
    return out


def _segments_of(
    packets: Iterable[Packet], stats: Any, copy: bool
) -> Iterator[tuple[int, TcpSegment]]:
    """The Python path: every packet through `parse_tcp`."""
    for pkt in packets:
        stats.packets += 1
        seg = _parsed(pkt.linktype, pkt.data, stats, copy)
        if seg is not None:
            yield pkt.ts_ns, seg


def _parsed(linktype: int, frame: Any, stats: Any, copy: bool) -> TcpSegment | None:
    """`parse_tcp`'s segment of one frame, counted in `stats`; None (counted as skipped) if none."""
    seg = parse_tcp(linktype, frame)
    if type(seg) is str:
        stats.skipped[seg] += 1
        return None
    stats.tcp += 1
    if len(seg.payload) < seg.wire_len:
        stats.truncated += 1
    return seg._replace(payload=bytes(seg.payload)) if copy else seg
