"""tcpflow-style stream files as input: one file of reassembled payload per direction.

tcpflow names each file `HOST.PORT-HOST.PORT` (sender first), IPv4 octets and ports zero-padded
(`010.000.000.001.09092-010.000.000.002.45678`), optionally followed by `--VLAN` and by `cN` when
the same 4-tuple carried several connections. Files carry no timestamps; the files' modification
times stand in for the connection's first and last time, and PDU times stay unknown. The files
become TCP segments (`tcpflow_segments`), decoded like a capture's.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .frame_dumps import chunk_segments
from .packets import TcpSegment
from .reassembly import Endpoint

__all__ = [
    "FlowName",
    "parse_flow_name",
    "tcpflow_segments",
]

_NAME = re.compile(
    r"^(?P<a>[0-9A-Fa-f.:]+)\.(?P<ap>\d{1,5})-(?P<b>[0-9A-Fa-f.:]+)\.(?P<bp>\d{1,5})"
    r"(?:--(?P<vlan>\d+))?(?:c(?P<conn>\d+))?$"
)


@dataclass(frozen=True, slots=True)
class FlowName:
    """What a tcpflow file name says: sender, receiver, VLAN and connection number."""

    src: Endpoint
    dst: Endpoint
    vlan: int | None = None
    conn: int = 0


def _host(text: str) -> bytes | None:
    if ":" not in text:
        # tcpflow pads IPv4 octets to three digits; ip_address rejects leading zeros
        parts = text.split(".")
        if len(parts) != 4 or not all(p.isdigit() for p in parts):
            return None
        text = ".".join(str(int(p)) for p in parts)
    try:
        return ipaddress.ip_address(text).packed
    except ValueError:
        return None


def parse_flow_name(name: str) -> FlowName | None:
    """Parse a tcpflow file name; None when it is not one (e.g. report.xml)."""
    m = _NAME.match(os.path.basename(name))
    if m is None:
        return None
    a, b = _host(m["a"]), _host(m["b"])
    ap, bp = int(m["ap"]), int(m["bp"])
    if a is None or b is None or ap > 65535 or bp > 65535:
        return None
    return FlowName(
        (a, ap),
        (b, bp),
        int(m["vlan"]) if m["vlan"] else None,
        int(m["conn"]) if m["conn"] else 0,
    )


def tcpflow_segments(
    path: str, peer: str | None = None, *, content: bytes | None = None, mtime: int = 0
) -> Iterator[tuple[int, TcpSegment]]:
    """The bytes of one or both direction files as TCP segments, the older file's first.

    No SYN: where a file starts is not known to be a frame boundary (tcpflow may have joined
    the connection late). Each file's modification time stands in for its segments' times.
    `content` (with its `mtime`, epoch ns) is the one file `path` names, read elsewhere.
    """
    files = []
    for p in filter(None, (path, peer)):
        flow = parse_flow_name(p)
        if flow is None:
            raise ValueError(f"{p}: not a tcpflow file name (HOST.PORT-HOST.PORT)")
        if content is not None:
            files.append((mtime, p, flow, content))
            break
        with open(p, "rb") as f:
            files.append((os.fstat(f.fileno()).st_mtime_ns, p, flow, f.read()))
    files.sort(key=lambda x: (x[0], x[1]))
    for mtime, _p, flow, data in files:
        yield from chunk_segments(flow.src, flow.dst, data, mtime)
