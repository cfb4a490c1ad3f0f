"""Capture files: classic pcap and pcapng readers, a cheap index scan, and a pcapng writer.

Imports only the standard library, so the mock broker can record traffic without Spark or construct.
"""

from __future__ import annotations

import mmap
import os
import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from .pcapng_writer import PcapngWriter, TcpConversation

__all__ = [
    "CaptureFormatError",
    "FileIssue",
    "Interface",
    "Packet",
    "PacketIndex",
    "PacketRange",
    "PacketReader",
    "PcapngWriter",
    "ReaderContext",
    "Section",
    "TcpConversation",
    "load",
    "read_packets",
    "scan_index",
]

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_IDB, _OPB, _SPB, _EPB = 1, 2, 3, 6
# Block length with the fixed fields of each block type: 12 bytes of type, length and trailing
# length, plus 8 (IDB: link type, reserved, snap length), 20 (EPB/OPB: interface, timestamp,
# lengths) or 4 (SPB: original length).
_MIN_BLOCK = {_IDB: 20, _OPB: 32, _SPB: 16, _EPB: 32}

# A record claiming more than this is corruption, not a packet (pcap's own limit is 256 KiB;
# some tools write jumbo reassembled frames, so allow more before declaring the file broken).
_MAX_RECORD = 64 * 1024 * 1024


class CaptureFormatError(ValueError):
    """The bytes are neither classic pcap nor pcapng."""


class Packet(NamedTuple):
    """One captured frame: link-layer bytes as a zero-copy view into the file."""

    index: int  # position of the packet in the file, from 0
    ts_ns: int  # epoch nanoseconds
    linktype: int
    data: memoryview  # the stored (captured) bytes
    orig_len: int  # length on the wire
    interface: int  # pcapng interface id (0 for classic pcap)
    offset: int  # file offset of the record/block, for error reports


@dataclass(frozen=True, slots=True)
class Interface:
    """A pcapng interface (or the single implicit one of classic pcap)."""

    linktype: int
    snaplen: int
    ts_units: int = 1_000_000  # timestamp ticks per second
    ts_offset_s: int = 0  # if_tsoffset: seconds added to every timestamp

    def to_ns(self, ticks: int) -> int:
        """Convert timestamp ticks of this interface to epoch nanoseconds."""
        units = self.ts_units
        if units <= 1_000_000_000 and 1_000_000_000 % units == 0:
            ns = ticks * (1_000_000_000 // units)
        else:
            ns = ticks * 1_000_000_000 // units
        return ns + self.ts_offset_s * 1_000_000_000


@dataclass(frozen=True, slots=True)
class ReaderContext:
    """What a reader must know to parse packets from the middle of a file (picklable)."""

    kind: str  # "pcap" or "pcapng"
    endian: str  # "<" or ">"
    interfaces: tuple[Interface, ...]


@dataclass(slots=True)
class Section:
    """Where a pcapng read stands: the section's byte order and interfaces, the next block."""

    endian: str
    interfaces: list[Interface]
    pos: int = 0


@dataclass(frozen=True, slots=True)
class FileIssue:
    """A problem with the file itself: a truncated last record, or a corrupt block."""

    offset: int
    status: str  # "truncated" or "malformed"
    length: int  # bytes affected
    message: str


@dataclass(frozen=True, slots=True)
class PacketRange:
    """A run of whole packets, [start, end) in file offsets, readable on its own."""

    start: int
    end: int
    first_index: int
    count: int
    context: ReaderContext


@dataclass(slots=True)
class PacketIndex:
    """Result of `scan_index`: every packet's file offset, and the context at each section."""

    kind: str
    size: int
    offsets: array = field(default_factory=lambda: array("Q"))
    # (packet number where the context starts, context); pcapng changes it at SHB/IDB blocks
    contexts: list[tuple[int, ReaderContext]] = field(default_factory=list)
    issues: list[FileIssue] = field(default_factory=list)
    data_end: int = 0  # end of the last whole block/record

    def split(self, max_bytes: int = 64 * 1024 * 1024) -> list[PacketRange]:
        """Cut the file into packet ranges of about `max_bytes` each, on packet boundaries."""
        ranges: list[PacketRange] = []
        offsets = self.offsets
        n = len(offsets)
        if n == 0:
            return ranges
        ctx_starts = [c[0] for c in self.contexts] + [n]
        for (first, ctx), limit in zip(self.contexts, ctx_starts[1:], strict=False):
            i = first
            while i < limit:
                start = offsets[i]
                j = i + 1
                # packets of one context are contiguous: cut where the next offset passes the budget
                while j < limit and offsets[j] - start < max_bytes:
                    j += 1
                end = offsets[j] if j < n else self.data_end
                ranges.append(PacketRange(start, end, i, j - i, ctx))
                i = j
        return ranges


def load(source: str | os.PathLike | bytes | bytearray | memoryview) -> memoryview:
    """Map a capture file read-only (or wrap bytes) as a memoryview, without copying."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return memoryview(source).cast("B")
    with open(source, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return memoryview(b"")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return memoryview(mm)


def _sniff(buf: memoryview) -> tuple[str, str]:
    """Tell the file kind and byte order from the first four bytes."""
    if len(buf) < 4:
        raise CaptureFormatError(f"file too short for a capture header ({len(buf)} bytes)")
    (le,) = struct.unpack_from("<I", buf, 0)
    (be,) = struct.unpack_from(">I", buf, 0)
    if le in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        return "pcap", "<"
    if be in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        return "pcap", ">"
    if le == PCAPNG_SHB:
        if len(buf) < 12:
            raise CaptureFormatError("pcapng section header block cut short")
        (bom,) = struct.unpack_from("<I", buf, 8)
        if bom == PCAPNG_BYTE_ORDER_MAGIC:
            return "pcapng", "<"
        if bom == 0x4D3C2B1A:
            return "pcapng", ">"
        raise CaptureFormatError(f"pcapng byte-order magic is {bom:#010x}")
    raise CaptureFormatError(f"not a pcap or pcapng file (magic {le:#010x})")


def _pcap_context(buf: memoryview) -> ReaderContext:
    """Parse the classic pcap global header."""
    _, endian = _sniff(buf)
    if len(buf) < 24:
        raise CaptureFormatError("pcap global header cut short")
    magic, _major, _minor, _zone, _sigfigs, snaplen, network = struct.unpack_from(
        endian + "IHHiIII", buf, 0
    )
    units = 1_000_000_000 if magic == PCAP_MAGIC_NS else 1_000_000
    # the upper bits of the link-type field carry FCS information, not the link type
    iface = Interface(network & 0xFFFF, snaplen, units)
    return ReaderContext("pcap", endian, (iface,))


def _options(buf: memoryview, pos: int, end: int, endian: str) -> Iterator[tuple[int, memoryview]]:
    """Yield (code, value) of a pcapng option list, stopping at opt_endofopt or the block end."""
    unpack = struct.Struct(endian + "HH").unpack_from
    while pos + 4 <= end:
        code, length = unpack(buf, pos)
        if code == 0:
            return
        value_end = pos + 4 + length
        if value_end > end:
            return  # a bad option list spoils only the options, never the packet
        yield code, buf[pos + 4 : value_end]
        pos += 4 + ((length + 3) & ~3)


def _parse_idb(buf: memoryview, pos: int, block_len: int, endian: str) -> Interface:
    """Parse an Interface Description Block at `pos`."""
    linktype, _reserved, snaplen = struct.unpack_from(endian + "HHI", buf, pos + 8)
    units, offset_s = 1_000_000, 0
    for code, value in _options(buf, pos + 16, pos + block_len - 4, endian):
        if code == 9 and len(value) >= 1:  # if_tsresol
            r = value[0]
            units = 2 ** (r & 0x7F) if r & 0x80 else 10**r
        elif code == 14 and len(value) >= 8:  # if_tsoffset
            (offset_s,) = struct.unpack_from(endian + "q", value, 0)
    return Interface(linktype, snaplen, units, offset_s)


class PacketReader:
    """Iterate the packets of a pcap or pcapng buffer, or of one `PacketRange` of it.

    Problems with the file itself (a record cut short at the end, a corrupt block) do not raise:
    they are appended to `issues` and iteration stops cleanly (or yields what was captured).
    """

    def __init__(
        self,
        source: str | os.PathLike | bytes | bytearray | memoryview,
        *,
        packet_range: PacketRange | None = None,
        base_offset: int = 0,
    ) -> None:
        """Open `source`; with `packet_range`, `source` holds the file from `base_offset` on."""
        self.buf = load(source)
        self.issues: list[FileIssue] = []
        self.range = packet_range
        self.base_offset = base_offset
        if packet_range is not None:
            self.context = packet_range.context
        else:
            kind, endian = _sniff(self.buf)
            self.context = (
                _pcap_context(self.buf) if kind == "pcap" else ReaderContext("pcapng", endian, ())
            )
        self.kind = self.context.kind

    def bounds(self) -> tuple[int, int, int]:
        """(start, end) of the packets to read in `buf`, and the index of the first."""
        rng = self.range
        if rng is None:
            return (24 if self.kind == "pcap" else 0), len(self.buf), 0
        end = min(rng.end - self.base_offset, len(self.buf))
        return rng.start - self.base_offset, end, rng.first_index

    def __iter__(self) -> Iterator[Packet]:
        """Yield packets in file order."""
        start, end, first = self.bounds()
        if self.kind == "pcap":
            return self._iter_pcap(start, end, first)
        return self._iter_pcapng(start, end, first)

    def _issue(self, offset: int, status: str, length: int, message: str) -> None:
        self.issues.append(FileIssue(offset + self.base_offset, status, length, message))

    def _iter_pcap(self, pos: int, end: int, index: int) -> Iterator[Packet]:
        buf = self.buf
        ctx = self.context
        iface = ctx.interfaces[0]
        linktype = iface.linktype
        scale = 1_000_000_000 // iface.ts_units
        unpack = struct.Struct(ctx.endian + "IIII").unpack_from
        base = self.base_offset
        while pos < end:
            if pos + 16 > end:
                self._issue(pos, "truncated", end - pos, "pcap record header cut short")
                return
            sec, frac, incl, orig = unpack(buf, pos)
            data_start = pos + 16
            data_end = data_start + incl
            if incl > _MAX_RECORD:
                self._issue(pos, "malformed", end - pos, f"pcap record claims {incl} bytes")
                return
            if data_end > end:
                # the last record is cut: keep what was written, like a short snap length
                self._issue(pos, "truncated", data_end - end, "pcap record data cut short")
                data_end = end
            yield Packet(
                index,
                sec * 1_000_000_000 + frac * scale,
                linktype,
                buf[data_start:data_end],
                orig,
                0,
                pos + base,
            )
            index += 1
            pos = data_end

    def _iter_pcapng(
        self, pos: int, end: int, index: int, at: Section | None = None, *, one: bool = False
    ) -> Iterator[Packet]:
        """Packets of the pcapng blocks in [pos, end); `at` follows the section as it goes.

        With `one`, only the block at `pos` (the compiled walker hands over the blocks it does
        not read); `at.pos` is then where the next block starts, or `end` after a problem that
        ends the file.
        """
        buf = self.buf
        if at is None:
            at = Section(self.context.endian, list(self.context.interfaces))
        endian = at.endian
        interfaces = at.interfaces
        head = struct.Struct(endian + "II").unpack_from
        epb = struct.Struct(endian + "IIIII").unpack_from
        base = self.base_offset
        at.pos = end  # unless a block below ends cleanly
        while pos < end:
            if pos + 12 > end:
                self._issue(pos, "truncated", end - pos, "pcapng block header cut short")
                return
            btype, blen = head(buf, pos)
            if btype == PCAPNG_SHB:
                # a new section may switch byte order; its interfaces start afresh
                try:
                    _, endian = _sniff(buf[pos : pos + 12])
                except CaptureFormatError as exc:
                    self._issue(pos, "malformed", end - pos, str(exc))
                    return
                head = struct.Struct(endian + "II").unpack_from
                epb = struct.Struct(endian + "IIIII").unpack_from
                btype, blen = head(buf, pos)
                interfaces = at.interfaces = []
                at.endian = endian
            if blen < 12 or blen % 4 or blen > _MAX_RECORD:
                self._issue(pos, "malformed", end - pos, f"pcapng block length {blen}")
                return
            if pos + blen > end:
                if btype in (_EPB, _OPB):
                    partial = self._truncated_packet(pos, end, btype, endian, interfaces, index)
                    if partial is not None:
                        yield partial
                self._issue(pos, "truncated", pos + blen - end, "pcapng block cut short")
                return
            if blen < _MIN_BLOCK.get(btype, 12):
                self._issue(pos, "malformed", blen, _short_block_message(btype, blen))
                if btype != _IDB:
                    index += 1  # a packet block all the same: `scan_index` counts it
                pos += blen
                if one:
                    at.pos = pos
                    return
                continue
            if btype in (_EPB, _OPB):
                if btype == _EPB:
                    if_id, ts_hi, ts_lo, caplen, orig = epb(buf, pos + 8)
                else:
                    if_id, ts_hi, ts_lo, caplen, orig = struct.unpack_from(
                        endian + "HxxIIII", buf, pos + 8
                    )
                data_start = pos + 28
                if if_id >= len(interfaces) or data_start + caplen > pos + blen - 4:
                    self._issue(pos, "malformed", blen, "packet block with a bad interface/length")
                else:
                    iface = interfaces[if_id]
                    yield Packet(
                        index,
                        iface.to_ns((ts_hi << 32) | ts_lo),
                        iface.linktype,
                        buf[data_start : data_start + caplen],
                        orig,
                        if_id,
                        pos + base,
                    )
                index += 1
            elif btype == _SPB:
                if not interfaces:
                    self._issue(pos, "malformed", blen, "simple packet block before any interface")
                else:
                    iface = interfaces[0]
                    (orig,) = struct.unpack_from(endian + "I", buf, pos + 8)
                    caplen = min(orig, blen - 16, iface.snaplen or orig)
                    # SPBs carry no timestamp
                    yield Packet(
                        index,
                        0,
                        iface.linktype,
                        buf[pos + 12 : pos + 12 + caplen],
                        orig,
                        0,
                        pos + base,
                    )
                index += 1
            elif btype == _IDB:
                interfaces.append(_parse_idb(buf, pos, blen, endian))
            pos += blen
            if one:
                at.pos = pos
                return

    def _truncated_packet(
        self, pos: int, end: int, btype: int, endian: str, interfaces: list[Interface], index: int
    ) -> Packet | None:
        """Salvage the captured part of a packet block cut off by the end of the file."""
        if pos + 28 > end:
            return None
        fmt = endian + ("IIIII" if btype == _EPB else "HxxIIII")
        if_id, ts_hi, ts_lo, _caplen, orig = struct.unpack_from(fmt, self.buf, pos + 8)
        if if_id >= len(interfaces):
            return None
        iface = interfaces[if_id]
        return Packet(
            index,
            iface.to_ns((ts_hi << 32) | ts_lo),
            iface.linktype,
            self.buf[pos + 28 : end],
            orig,
            if_id,
            pos + self.base_offset,
        )


def _short_block_message(btype: int, blen: int) -> str:
    return (
        f"pcapng block of type {btype} is {blen} bytes long, shorter than its fixed fields "
        f"({_MIN_BLOCK[btype]} bytes)"
    )


def read_packets(source: str | os.PathLike | bytes | bytearray | memoryview) -> PacketReader:
    """Open a pcap or pcapng file (path or bytes) for iteration over its packets."""
    return PacketReader(source)


def scan_index(source: str | os.PathLike | bytes | bytearray | memoryview) -> PacketIndex:
    """Find every packet's file offset by reading only record/block headers."""
    buf = load(source)
    kind, endian = _sniff(buf)
    end = len(buf)
    index = PacketIndex(kind, end)
    offsets = index.offsets
    if kind == "pcap":
        ctx = _pcap_context(buf)
        index.contexts.append((0, ctx))
        unpack = struct.Struct(endian + "8xI").unpack_from
        pos = 24
        while pos + 16 <= end:
            (incl,) = unpack(buf, pos)
            if incl > _MAX_RECORD:
                index.issues.append(FileIssue(pos, "malformed", end - pos, "bad record length"))
                break
            nxt = pos + 16 + incl
            if nxt > end:
                index.issues.append(FileIssue(pos, "truncated", nxt - end, "record cut short"))
                offsets.append(pos)
                pos = end
                break
            offsets.append(pos)
            pos = nxt
        index.data_end = min(pos, end)
        return index
    interfaces: list[Interface] = []
    head = struct.Struct(endian + "II").unpack_from
    pos = 0
    ctx_dirty = True
    while pos + 12 <= end:
        btype, blen = head(buf, pos)
        if btype == PCAPNG_SHB:
            try:
                _, endian = _sniff(buf[pos : pos + 12])
            except CaptureFormatError as exc:
                index.issues.append(FileIssue(pos, "malformed", end - pos, str(exc)))
                break
            head = struct.Struct(endian + "II").unpack_from
            btype, blen = head(buf, pos)
            interfaces = []
            ctx_dirty = True
        if blen < 12 or blen % 4 or blen > _MAX_RECORD:
            index.issues.append(FileIssue(pos, "malformed", end - pos, f"block length {blen}"))
            break
        if btype == _IDB and pos + blen <= end and blen >= _MIN_BLOCK[_IDB]:
            interfaces.append(_parse_idb(buf, pos, blen, endian))
            ctx_dirty = True
        elif btype in (_EPB, _SPB, _OPB):
            if ctx_dirty:
                index.contexts.append(
                    (len(offsets), ReaderContext("pcapng", endian, tuple(interfaces)))
                )
                ctx_dirty = False
            offsets.append(pos)
        if pos + blen > end:
            index.issues.append(FileIssue(pos, "truncated", pos + blen - end, "block cut short"))
            pos = end
            break
        pos += blen
    index.data_end = min(pos, end)
    return index
