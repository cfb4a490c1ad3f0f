"""Client and broker roles of a connection seen without its SYN, from what each side sent.

Reassembly knows TCP only and leaves such a connection in address order with an empty
`role_source`; `orient` decides here, before any frame is cut, and swaps the ends if needed.

Evidence, strongest first: which direction's first bytes parse as a chain of Kafka requests (and
whether the other direction answers the first correlation id), then `broker_ports` hints, then
the higher port as the client's (ephemeral ports usually are). `role_source` records which one
decided: `kafka`, `port_hint` or `port_order`.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from dataclasses import replace
from typing import TYPE_CHECKING

from ..reading.frame_dumps import plausible_request_header

if TYPE_CHECKING:
    from ..reading.reassembly import Connection, Endpoint, Stream

__all__ = ["decide_client", "guess_request_direction", "orient"]

_i32 = struct.Struct(">i").unpack_from


def _request_chain(buf: bytes | memoryview, limit: int = 4) -> tuple[int, list[int]]:
    """How many consecutive plausible request frames start at offset 0, and their corr ids."""
    pos, n, corrs = 0, 0, []
    while n < limit:
        head = plausible_request_header(buf, pos)
        if head is None or (corrs and head[1] < corrs[-1]):
            break
        corrs.append(head[1])
        n += 1
        pos += 4 + head[0]
        if pos >= len(buf):
            break
    return n, corrs


def guess_request_direction(a: bytes | memoryview, b: bytes | memoryview) -> int | None:
    """Which of two directions' first bytes are Kafka requests: 0, 1, or None if unclear."""
    na, corr_a = _request_chain(a)
    nb, corr_b = _request_chain(b)
    # a response starts with the correlation id of the first request: the strongest evidence
    b_answers_a = na and len(b) >= 8 and _i32(b, 4)[0] == corr_a[0]
    a_answers_b = nb and len(a) >= 8 and _i32(a, 4)[0] == corr_b[0]
    if b_answers_a and not a_answers_b:
        return 0
    if a_answers_b and not b_answers_a:
        return 1
    if na and not nb:
        return 0
    if nb and not na:
        return 1
    return None


def decide_client(
    a: Endpoint, b: Endpoint, sa: Stream, sb: Stream, broker_ports: Collection[int] = ()
) -> tuple[Endpoint, str]:
    """Pick the client of a connection seen without its SYN, and say how it was decided."""
    verdict = guess_request_direction(_head(sa), _head(sb))
    if verdict == 0:
        return a, "kafka"
    if verdict == 1:
        return b, "kafka"
    a_hint, b_hint = a[1] in broker_ports, b[1] in broker_ports
    if a_hint != b_hint:
        return (b if a_hint else a), "port_hint"
    # ephemeral client ports are usually the higher number; recorded as the weakest evidence
    return (a if a[1] > b[1] else b), "port_order"


def _head(stream: Stream, limit: int = 65536) -> bytes:
    """The first captured bytes of a stream, if the capture has its true beginning run."""
    if not stream.runs:
        return b""
    first = stream.runs[0]
    if first.offset != stream.start:
        return b""
    return first.data[:limit]


def orient(conn: Connection, broker_ports: Collection[int] = ()) -> Connection:
    """`conn` with its roles decided: as it is after a handshake, else from what each end sent."""
    if conn.role_source:
        return conn
    client, source = decide_client(
        conn.client, conn.server, conn.to_server, conn.to_client, broker_ports
    )
    if client == conn.client:
        return replace(conn, role_source=source)
    return replace(
        conn,
        client=conn.server,
        server=conn.client,
        to_server=conn.to_client,
        to_client=conn.to_server,
        role_source=source,
    )
