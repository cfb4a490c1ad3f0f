"""Builders shared by the capture tests: Kafka frames, raw packets, capture files, a fake codec."""

from __future__ import annotations

import enum
import os
import random
import shutil
import struct
import types
from pathlib import Path

from hypothesis import HealthCheck, settings

from kipwire.codec import ApiKey, ErrorCode

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
SHARED_CAPTURES = SHARED / "captures"
TSHARK = shutil.which("tshark")

# The compiled-path tests' knobs: drawn bodies or frames, KIPWIRE_EXAMPLES (4 in make test) x 20;
# mutated ones, KIPWIRE_FUZZ_FRAMES.
FUZZ_FRAMES = int(os.environ.get("KIPWIRE_FUZZ_FRAMES", "3000"))
DRAWN = settings(
    max_examples=int(os.environ.get("KIPWIRE_EXAMPLES", "4")) * 20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def request_frame(api_key: int, version: int, corr: int, body: bytes = b"", client="cli") -> bytes:
    """A size-prefixed request with a v1 header (api_key, api_version, corr, client_id)."""
    cid = client.encode()
    payload = struct.pack(">hhih", api_key, version, corr, len(cid)) + cid + body
    return struct.pack(">i", len(payload)) + payload


def response_frame(corr: int, body: bytes = b"\x00\x00") -> bytes:
    """A size-prefixed response with a v0 header."""
    payload = struct.pack(">i", corr) + body
    return struct.pack(">i", len(payload)) + payload


def tcp_header(sport, dport, seq, ack, flags, payload=b"") -> bytes:
    return struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload


def ipv4(src: str, dst: str, l4: bytes, proto: int = 6, total: int | None = None) -> bytes:
    import ipaddress

    total = 20 + len(l4) if total is None else total
    head = struct.pack(">BBHHHBBH", 0x45, 0, total, 1, 0x4000, 64, proto, 0)
    return head + ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed + l4


def ipv6(src: str, dst: str, l4: bytes, nxt: int = 6, ext: bytes = b"") -> bytes:
    import ipaddress

    first_next = nxt if not ext else 0  # hop-by-hop options header first when ext is given
    head = struct.pack(">IHBB", 6 << 28, len(ext) + len(l4), first_next, 64)
    return head + ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed + ext + l4


def ether(ip: bytes, etype: int = 0x0800, vlans: tuple[int, ...] = ()) -> bytes:
    tags = b"".join(struct.pack(">HH", tpid, 5) for tpid in vlans)
    if vlans:
        # the outer ethertype field holds the first tag's TPID; the last tag holds the real type
        first = struct.pack(">H", vlans[0])
        inner = b"".join(struct.pack(">H", 5) + struct.pack(">H", t) for t in (*vlans[1:], etype))
        return b"\x02" * 6 + b"\x04" * 6 + first + inner + ip
    return b"\x02" * 6 + b"\x04" * 6 + struct.pack(">H", etype) + tags + ip


def pcap_bytes(packets, linktype=1, *, nanos=False, endian="<", snaplen=262144) -> bytes:
    """A classic pcap file of (ts_ns, frame[, orig_len]) records."""
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for p in packets:
        ts, frame = p[0], p[1]
        orig = p[2] if len(p) > 2 else len(frame)
        sec, rem = divmod(ts, 1_000_000_000)
        out.append(
            struct.pack(endian + "IIII", sec, rem if nanos else rem // 1000, len(frame), orig)
        )
        out.append(frame)
    return b"".join(out)


def _block(endian: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)


def _opt(endian: str, code: int, value: bytes) -> bytes:
    return struct.pack(endian + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def shb(endian: str = "<") -> bytes:
    return _block(endian, 0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(
    endian: str,
    linktype: int,
    tsresol: int | None = None,
    tsoffset: int | None = None,
    snaplen: int = 0,
) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += _opt(endian, 9, bytes([tsresol]))
    if tsoffset is not None:
        opts += _opt(endian, 14, struct.pack(endian + "q", tsoffset))
    if opts:
        opts += _opt(endian, 0, b"")
    return _block(endian, 1, struct.pack(endian + "HHI", linktype, 0, snaplen) + opts)


def epb(endian: str, iface: int, ticks: int, frame: bytes, orig: int | None = None) -> bytes:
    orig = len(frame) if orig is None else orig
    head = struct.pack(endian + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), orig)
    return _block(endian, 6, head + frame)


def spb(endian: str, frame: bytes) -> bytes:
    return _block(endian, 3, struct.pack(endian + "I", len(frame)) + frame)


def opb(endian: str, iface: int, ticks: int, frame: bytes) -> bytes:
    head = struct.pack(
        endian + "HHIIII", iface, 0, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), len(frame)
    )
    return _block(endian, 2, head + frame)


class FakeDecodeError(ValueError):
    pass


class FakeUnsupportedVersion(FakeDecodeError):
    pass


KNOWN_TO_THE_FAKE = (
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.METADATA,
    ApiKey.OFFSET_COMMIT,
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.API_VERSIONS,
)


def fake_codec(known=KNOWN_TO_THE_FAKE, max_version=20):
    """A stand-in for `codec` with its public API: bodies decode to their raw bytes' hex."""
    api_key = enum.IntEnum("ApiKey", {f"API_{int(k)}": int(k) for k in known})

    def decode_request(data: bytes):
        data = bytes(data)
        if len(data) < 10:
            raise FakeDecodeError("short header")
        key, version, corr, n = struct.unpack_from(">hhih", data)
        if version > max_version:
            raise FakeUnsupportedVersion(f"version {version}")
        if data[10 + max(n, 0) :].startswith(b"BAD"):
            raise FakeDecodeError("bad body")
        cid = data[10 : 10 + n].decode() if n >= 0 else None
        body = {"error_code": ErrorCode.NONE, "raw": data[10 + max(n, 0) :].hex()}
        return types.SimpleNamespace(
            api_key=key,
            api_version=version,
            correlation_id=corr,
            client_id=cid,
            header={},
            body=body,
        )

    def decode_response(data: bytes, key: int, version: int):
        data = bytes(data)
        (corr,) = struct.unpack_from(">i", data)
        if version > max_version:
            raise FakeUnsupportedVersion(f"version {version}")
        if data[4:].startswith(b"BAD"):
            raise FakeDecodeError("bad body")
        err = struct.unpack_from(">h", data, 4)[0] if len(data) >= 6 else ErrorCode.NONE
        return types.SimpleNamespace(correlation_id=corr, header={}, body={"error_code": err})

    def peek_request_header(data: bytes):
        key, version, corr, n = struct.unpack_from(">hhih", data)
        cid = bytes(data[10 : 10 + n]).decode() if n >= 0 else None
        return types.SimpleNamespace(
            api_key=key, api_version=version, correlation_id=corr, client_id=cid
        )

    framing = types.SimpleNamespace(peek_request_header=peek_request_header)
    return types.SimpleNamespace(
        ApiKey=api_key,
        DecodeError=FakeDecodeError,
        framing=framing,
        decode_request=decode_request,
        decode_response=decode_response,
        to_json=lambda obj: obj,
        UnsupportedVersionError=FakeUnsupportedVersion,
    )


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to three byte flips, cuts, insertions or varint-sized values."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(4)
        if op == 0 and out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        elif op == 1 and out:
            del out[rng.randrange(len(out)) :]
        elif op == 2:
            out.insert(rng.randrange(len(out) + 1), rng.randrange(256))
        elif out:
            out[rng.randrange(len(out))] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF])
    return bytes(out)
