"""tcpflow-style stream files as input: one file of reassembled payload per direction.

tcpflow names each file `HOST.PORT-HOST.PORT` (sender first), IPv4 octets and ports zero-padded
(`010.000.000.001.09092-010.000.000.002.45678`), optionally followed by `--VLAN` and by `cN` when
the same 4-tuple carried several connections. Files carry no timestamps; the files' modification
times stand in for the connection's first and last time, and PDU times stay unknown.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .reassembly import Connection, Endpoint, Run, Stream
from .roles import decide_client

__all__ = ["FlowName", "connections_from_files", "parse_flow_name", "read_flow_dir", "stream_of"]

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


def stream_of(data: bytes) -> Stream:
    """A direction made of one run of bytes; where it starts is not known to be a boundary."""
    st = Stream(start=0, end=len(data))
    if data:
        st.runs.append(Run(0, data, [0], [None]))  # type: ignore[list-item]
    return st


def connections_from_files(
    paths: Iterable[str | os.PathLike], broker_ports: Iterable[int] = ()
) -> list[Connection]:
    """Pair tcpflow files by 4-tuple into connections (a lone direction gets an empty peer)."""
    hints = frozenset(broker_ports)
    groups: dict[tuple, dict[Endpoint, Path]] = {}
    for path in paths:
        p = Path(path)
        name = parse_flow_name(p.name)
        if name is None:
            continue
        a, b = sorted((name.src, name.dst))
        groups.setdefault((a, b, name.vlan, name.conn), {})[name.src] = p
    conns = []
    for (a, b, _vlan, _n), files in sorted(groups.items(), key=lambda kv: str(kv[0])):
        streams = {
            ep: stream_of(files[ep].read_bytes()) if ep in files else Stream() for ep in (a, b)
        }
        mtimes = [f.stat().st_mtime_ns for f in files.values()]
        client, source = decide_client(a, b, streams[a], streams[b], hints)
        server = b if client == a else a
        conns.append(
            Connection(
                client=client,
                server=server,
                to_server=streams[client],
                to_client=streams[server],
                first_ts=min(mtimes),
                last_ts=max(mtimes),
                role_source=source,
                packets=0,
            )
        )
    return conns


def read_flow_dir(
    directory: str | os.PathLike, broker_ports: Iterable[int] = ()
) -> list[Connection]:
    """All connections in a tcpflow output directory."""
    return connections_from_files(sorted(Path(directory).iterdir()), broker_ports)
