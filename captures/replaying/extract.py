"""Client connections and their requests, out of captures, for the replay.

Each input is read and reassembled by the reading stage, each connection's roles decided and its
directions cut into frames by the decoding stage (the local engine's steps, in process). What a
connection cannot give the replay becomes a `NotReplayed` row with its reason, never a silent
skip: the cluster's own traffic (replication, controller), a connection whose start the capture
missed, one with a gap, TLS without plaintext, a SASL exchange (its secrets are redacted in
kipwire's recordings, absent from tcpdump's), and those `--client-id` leaves out.
"""

from __future__ import annotations

import os
import re
import struct
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kipwire.codec import ApiKey, DecodeError, decode_request, decode_response

from ..comparing.load import INTERNAL_APIS
from ..decoding.framing import split_frames
from ..decoding.pipeline import input_segments
from ..decoding.roles import orient
from ..reading.inputs import CaptureFile, expand_inputs
from ..reading.packets import format_ip
from ..reading.reassembly import Connection, TcpReassembler

__all__ = [
    "CapturedExchange",
    "ClientConnection",
    "Extracted",
    "NotReplayed",
    "SASL_APIS",
    "client_connection",
    "extract",
    "extract_connections",
]

_FIXED = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_i32 = struct.Struct(">i").unpack_from
#: The SASL exchange's APIs: never sent as captured (the replay authenticates itself).
SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
_METADATA_TOPIC = "__cluster_metadata"
# a TLS record starts with its content type (handshake 22, alert 21, ...) and version 3.x
_TLS_START = re.compile(rb"^[\x14-\x17]\x03[\x00-\x04]")

# the reasons of `NotReplayed` rows, as the report names them
CLUSTER_TRAFFIC = "cluster's own traffic (replication, controller)"
MID_CONNECTION = "capture starts mid-connection"
CAPTURE_GAP = "capture misses bytes of the connection"
TLS = "TLS without plaintext"
SASL = "SASL exchange (secrets redacted or absent)"
CLIENT_FILTER = "left out by --client-id"
NO_REQUESTS = "no requests"


@dataclass(frozen=True, slots=True)
class NotReplayed:
    """Requests the replay did not send, and why (one row of the report)."""

    reason: str
    connection: str  # "client -> server" of the original connection
    requests: int
    detail: str = ""


@dataclass(slots=True)
class CapturedExchange:
    """One captured request (its frame, no size prefix) with the response it got, if any."""

    index: int
    ts_ns: int | None
    frame: bytes
    api_key: int
    api_version: int
    client_id: str | None
    response: bytes | None = None
    response_ts_ns: int | None = None

    def decoded_response(self) -> Any:
        """The captured response's body, None when there is none or it does not decode."""
        if self.response is None:
            return None
        try:
            return decode_response(
                self.response, self.api_key, self.api_version, trailing="ignore"
            ).body
        except DecodeError:
            return None


@dataclass(slots=True)
class ClientConnection:
    """A captured client connection: who talked to which broker, and its exchanges in order."""

    uid: str
    client: tuple[str, int]
    server: tuple[str, int]
    first_ts_ns: int
    exchanges: list[CapturedExchange]

    @property
    def name(self) -> str:
        """ "host:port -> host:port" for the report."""
        return f"{_addr(self.client)} -> {_addr(self.server)}"

    @property
    def client_id(self) -> str | None:
        """The client id its first request names."""
        return self.exchanges[0].client_id if self.exchanges else None


@dataclass(slots=True)
class Extracted:
    """What the captures give the replay."""

    connections: list[ClientConnection] = field(default_factory=list)
    not_replayed: list[NotReplayed] = field(default_factory=list)


def _addr(ep: tuple[str, int]) -> str:
    host, port = ep
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _client_id(frame: bytes) -> str | None:
    # request header v1+: client id is an int16-length string after the fixed part
    if len(frame) < 10:
        return None
    n = struct.unpack_from(">h", frame, 8)[0]
    if n < 0 or len(frame) < 10 + n:
        return None
    return frame[10 : 10 + n].decode("utf-8", "replace")


def _is_cluster_traffic(ex: CapturedExchange) -> bool:
    """A request only brokers and controllers send: inter-broker APIs, a follower's Fetch."""
    if ex.api_key in INTERNAL_APIS:
        return True
    if ex.api_key != ApiKey.FETCH:
        return False
    try:
        body = decode_request(ex.frame, trailing="ignore").body
    except DecodeError:
        return False
    state = body.get("replica_state")
    replica = state.get("replica_id") if state is not None else body.get("replica_id")
    if isinstance(replica, int) and replica >= 0:
        return True
    return any(t.get("topic") == _METADATA_TOPIC for t in body.get("topics") or ())


def client_connection(conn: Connection, broker_ports: Iterable[int] = ()) -> ClientConnection:
    """A reassembled connection's request frames paired with their responses, roles decided."""
    conn = orient(conn, frozenset(broker_ports))
    requests = split_frames(conn.to_server, requests=True)
    exchanges: list[CapturedExchange] = []
    waiting: dict[int, deque[CapturedExchange]] = {}
    for item in requests:
        if item.kind != "frame" or len(item.data) < _FIXED.size:
            continue
        frame = bytes(item.data)
        key, version, corr = _FIXED.unpack_from(frame)
        ex = CapturedExchange(len(exchanges), item.ts_ns, frame, key, version, _client_id(frame))
        exchanges.append(ex)
        waiting.setdefault(corr, deque()).append(ex)
    corrs = list(waiting)
    for item in split_frames(conn.to_client, requests=False, expected_corr=corrs):
        if item.kind != "frame" or len(item.data) < 4:
            continue
        queue = waiting.get(_i32(item.data, 0)[0])
        if queue:
            ex = queue.popleft()
            ex.response, ex.response_ts_ns = bytes(item.data), item.ts_ns
    return ClientConnection(
        conn.uid,
        (format_ip(conn.client[0]), conn.client[1]),
        (format_ip(conn.server[0]), conn.server[1]),
        conn.first_ts,
        exchanges,
    )


def _why_not(
    conn: Connection, cc: ClientConnection, from_start_known: bool, sasl: bool
) -> str | None:
    """The reason a connection cannot be replayed, None when it can."""
    head = bytes(conn.to_server.runs[0].data[:8]) if conn.to_server.runs else b""
    if _TLS_START.match(head):
        return TLS
    if not cc.exchanges:
        return NO_REQUESTS
    if any(_is_cluster_traffic(ex) for ex in cc.exchanges):
        return CLUSTER_TRAFFIC
    if not from_start_known:
        return MID_CONNECTION
    if conn.to_server.missing or conn.to_client.missing:
        return CAPTURE_GAP
    if not sasl and any(ex.api_key in SASL_APIS for ex in cc.exchanges):
        return SASL
    return None


def extract_connections(
    conns: Iterable[Connection],
    *,
    from_start_known: bool,
    client_id: str | None = None,
    broker_ports: Iterable[int] = (),
    out: Extracted | None = None,
    sasl: bool = False,
) -> Extracted:
    """Sort reassembled connections into replayable client connections and `NotReplayed` rows.

    `from_start_known`: the input shows where a connection starts without a handshake (frame
    dumps, tcpflow); in a pcap only a SYN does. `sasl`: the replay authenticates with the
    target's credentials, so a connection with a SASL exchange can go (without it).
    """
    found = out if out is not None else Extracted()
    wanted = re.compile(client_id) if client_id is not None else None
    ports = tuple(broker_ports)
    for conn in conns:
        cc = client_connection(conn, ports)
        reason = _why_not(conn, cc, from_start_known or conn.to_server.syn, sasl)
        if reason is None and wanted is not None and not wanted.search(cc.client_id or ""):
            reason = CLIENT_FILTER
        if reason is None:
            found.connections.append(cc)
        elif reason != NO_REQUESTS or conn.to_server.captured:
            found.not_replayed.append(
                NotReplayed(reason, cc.name, len(cc.exchanges), cc.client_id or "")
            )
    return found


def _connections(file: CaptureFile) -> Iterator[Connection]:
    reasm = TcpReassembler()
    reasm.add_many(input_segments(file))
    yield from reasm.finish()


def extract(
    inputs: Sequence[str | os.PathLike],
    *,
    client_id: str | None = None,
    broker_ports: Iterable[int] = (),
    sasl: bool = False,
) -> Extracted:
    """The client connections of every capture (pcap, pcapng, tcpflow, frame dumps), in order
    of their first packet; what cannot be replayed as `NotReplayed` rows (`sasl`: as in
    `extract_connections`)."""
    found = Extracted()
    for file in expand_inputs([os.fspath(i) for i in inputs]):
        extract_connections(
            _connections(file),
            from_start_known=file.kind != "pcap",
            client_id=client_id,
            broker_ports=broker_ports,
            out=found,
            sasl=sasl,
        )
    found.connections.sort(key=lambda c: (c.first_ts_ns, c.uid))
    return found
