"""A pcapng writer that records TCP conversations with synthetic Ethernet/IP/TCP headers.

The mock broker records its traffic through `PcapngWriter` (re-exported by `captures.pcap`); the
files open in Wireshark/tshark, which follow each stream: SYN handshake, consistent sequence and
acknowledgement numbers, segments no larger than the MSS, and a FIN exchange on close.

Without a destination the writer does no I/O at all (like h11): the blocks pile up until
`data_to_send()` hands them over, so a trio program writes them with its own async file or
worker thread instead of blocking its event loop.
"""

from __future__ import annotations

import ipaddress
import os
import struct
import sys
import threading
import time
from array import array
from typing import IO

__all__ = ["PcapngWriter", "TcpConversation"]

_FIN, _SYN, _PSH, _ACK = 0x01, 0x02, 0x08, 0x10
_SHB_MAGIC = 0x1A2B3C4D
_LITTLE_ENDIAN_HOST = sys.byteorder == "little"


def _checksum(*parts: bytes) -> int:
    """RFC 1071 ones'-complement sum, computed on 16-bit words in C (no per-byte loop)."""
    data = b"".join(parts)
    if len(data) % 2:
        data += b"\0"
    words = array("H", data)
    if _LITTLE_ENDIAN_HOST:  # the words were read in host order: make them network order
        words.byteswap()
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _mac(ip: bytes) -> bytes:
    """A locally administered MAC address derived from the IP, stable per endpoint."""
    return b"\x02\x00" + ip[-4:]


def _option(code: int, value: bytes) -> bytes:
    pad = (-len(value)) % 4
    return struct.pack("<HH", code, len(value)) + value + b"\0" * pad


class TcpConversation:
    """One TCP connection between a client and a server, written as it happens."""

    def __init__(
        self,
        writer: PcapngWriter,
        client: tuple[str, int],
        server: tuple[str, int],
        ts_ns: int | None,
        isn: tuple[int, int],
    ) -> None:
        self._w = writer
        self.client = client
        self.server = server
        c_ip = ipaddress.ip_address(client[0])
        s_ip = ipaddress.ip_address(server[0])
        if c_ip.version != s_ip.version:
            raise ValueError("client and server must both be IPv4 or both IPv6")
        self._v6 = c_ip.version == 6
        self._ips = (c_ip.packed, s_ip.packed)
        self._ports = (client[1], server[1])
        # next sequence number each side will send: index 0 is the client, 1 the server
        self._seq = [isn[0], isn[1]]
        self.closed = False
        ts = writer._now(ts_ns)
        mss_opt = struct.pack(">BBH", 2, 4, writer.mss)
        self._segment(0, _SYN, b"", ts, options=mss_opt, ack=0)
        self._seq[0] = (self._seq[0] + 1) & 0xFFFFFFFF
        self._segment(1, _SYN | _ACK, b"", ts, options=mss_opt)
        self._seq[1] = (self._seq[1] + 1) & 0xFFFFFFFF
        self._segment(0, _ACK, b"", ts)

    def client_sends(self, data: bytes, ts_ns: int | None = None) -> None:
        """Record `data` sent by the client (e.g. one size-prefixed request frame)."""
        self._send(0, data, ts_ns)

    def server_sends(self, data: bytes, ts_ns: int | None = None) -> None:
        """Record `data` sent by the server (e.g. one size-prefixed response frame)."""
        self._send(1, data, ts_ns)

    def close(self, ts_ns: int | None = None, *, by_client: bool = True) -> None:
        """Record the FIN exchange: the closing side's FIN, the peer's FIN, the final ACK."""
        if self.closed:
            return
        ts = self._w._now(ts_ns)
        first = 0 if by_client else 1
        with self._w._lock:
            for side in (first, 1 - first):
                self._segment(side, _FIN | _ACK, b"", ts)
                self._seq[side] = (self._seq[side] + 1) & 0xFFFFFFFF
            self._segment(first, _ACK, b"", ts)
        self.closed = True

    def _send(self, side: int, data: bytes, ts_ns: int | None) -> None:
        if self.closed:
            raise ValueError("conversation already closed")
        ts = self._w._now(ts_ns)
        mss = self._w.mss
        view = memoryview(data)
        with self._w._lock:
            for start in range(0, len(view), mss):
                chunk = view[start : start + mss]
                last = start + mss >= len(view)
                self._segment(side, _ACK | (_PSH if last else 0), chunk, ts)
                self._seq[side] = (self._seq[side] + len(chunk)) & 0xFFFFFFFF
            # an empty send records nothing: TCP has no zero-length writes on the wire

    def _segment(
        self,
        side: int,
        flags: int,
        payload: bytes | memoryview,
        ts: int,
        *,
        options: bytes = b"",
        ack: int | None = None,
    ) -> None:
        src_ip, dst_ip = self._ips[side], self._ips[1 - side]
        sport, dport = self._ports[side], self._ports[1 - side]
        ack_no = self._seq[1 - side] if ack is None else ack
        hdr_len = 20 + len(options)
        tcp = struct.pack(
            ">HHIIBBHHH",
            sport,
            dport,
            self._seq[side],
            ack_no,
            (hdr_len // 4) << 4,
            flags,
            65535,
            0,
            0,
        )
        tcp_len = hdr_len + len(payload)
        payload = bytes(payload)
        if self._v6:
            pseudo = src_ip + dst_ip + struct.pack(">IxxxB", tcp_len, 6)
        else:
            pseudo = src_ip + dst_ip + struct.pack(">xBH", 6, tcp_len)
        csum = _checksum(pseudo, tcp, options, payload)
        tcp = tcp[:16] + struct.pack(">H", csum) + tcp[18:]
        if self._v6:
            ip = struct.pack(">IHBB", 6 << 28, tcp_len, 6, 64) + src_ip + dst_ip
            etype = 0x86DD
        else:
            ident = self._w._next_ident()
            head = struct.pack(">BBHHHBBH", 0x45, 0, 20 + tcp_len, ident, 0x4000, 64, 6, 0)
            csum = _checksum(head, src_ip, dst_ip)
            ip = head[:10] + struct.pack(">H", csum) + src_ip + dst_ip
            etype = 0x0800
        eth = _mac(dst_ip) + _mac(src_ip) + struct.pack(">H", etype)
        self._w._write_packet(ts, eth + ip + tcp + options + payload)


class PcapngWriter:
    """Write pcapng (one Ethernet interface, nanosecond timestamps) of recorded conversations.

    Thread-safe: each packet is written whole under a lock. Use as a context manager, or call
    `close()`. `dest` is a path or a binary file object (left open when passed in), or None to
    collect the bytes for `data_to_send()`.
    """

    def __init__(
        self,
        dest: str | os.PathLike | IO[bytes] | None = None,
        *,
        mss: int = 1460,
        snaplen: int = 262144,
        flush_each: bool = False,
    ) -> None:
        self._pending = bytearray()
        self._f: IO[bytes] | None
        if isinstance(dest, (str, os.PathLike)):
            self._f = open(dest, "wb")  # noqa: SIM115 - owned and closed by close()
            self._own = True
        else:
            self._f = dest
            self._own = False
        self.mss = mss
        self.snaplen = snaplen
        self.flush_each = flush_each
        self._lock = threading.RLock()
        self._ident = 0
        self._isn = 0x1000
        self._last_port = 49151
        self._write_headers()

    def __enter__(self) -> PcapngWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_headers(self) -> None:
        shb_opts = _option(4, b"kipwire captures.pcap") + _option(0, b"")
        body = struct.pack("<IHHq", _SHB_MAGIC, 1, 0, -1) + shb_opts
        self._block(0x0A0D0D0A, body)
        # if_tsresol 9: nanoseconds
        idb_opts = _option(9, b"\x09") + _option(0, b"")
        self._block(1, struct.pack("<HHI", 1, 0, self.snaplen) + idb_opts)

    def _block(self, btype: int, body: bytes) -> None:
        body += b"\0" * ((-len(body)) % 4)
        total = 12 + len(body)
        block = struct.pack("<II", btype, total) + body + struct.pack("<I", total)
        if self._f is None:
            self._pending += block
        else:
            self._f.write(block)

    def data_to_send(self) -> bytes:
        """The bytes recorded since the last call (only a writer made without `dest` keeps any)."""
        with self._lock:
            out = bytes(self._pending)
            self._pending.clear()
            return out

    def _write_packet(self, ts_ns: int, frame: bytes) -> None:
        caplen = min(len(frame), self.snaplen)
        body = struct.pack("<IIIII", 0, ts_ns >> 32, ts_ns & 0xFFFFFFFF, caplen, len(frame))
        with self._lock:
            self._block(6, body + frame[:caplen])
            if self.flush_each and self._f is not None:
                self._f.flush()

    def _now(self, ts_ns: int | None) -> int:
        return time.time_ns() if ts_ns is None else ts_ns

    def _next_ident(self) -> int:
        self._ident = (self._ident + 1) & 0xFFFF
        return self._ident

    def conversation(
        self,
        client: tuple[str, int] | str,
        server: tuple[str, int],
        ts_ns: int | None = None,
        *,
        isn: tuple[int, int] | None = None,
    ) -> TcpConversation:
        """Start a connection (writes the SYN handshake); `client` may be a bare host."""
        with self._lock:
            if isinstance(client, str):
                self._last_port = 49152 + (self._last_port - 49151) % 16383
                client = (client, self._last_port)
            if isn is None:
                # distinct, deterministic initial sequence numbers, some near the 2^32 wrap
                isn = (self._isn, (self._isn * 2654435761) & 0xFFFFFFFF)
                self._isn = (self._isn * 69069 + 1) & 0xFFFFFFFF
            return TcpConversation(self, client, server, ts_ns, isn)

    def flush(self) -> None:
        """Flush the underlying file."""
        with self._lock:
            if self._f is not None:
                self._f.flush()

    def close(self) -> None:
        """Flush, and close the file if this writer opened it."""
        with self._lock:
            if self._f is None:
                return
            self._f.flush()
            if self._own:
                self._f.close()
