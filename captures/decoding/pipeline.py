"""One input (a capture file or a packet range of it, a tcpflow connection, a frame dump) to
table rows, without Spark.

The Spark job runs the same steps split across tasks: `input_segments` per packet range, a
shuffle on the connection key, then `TcpReassembler` and `decode_connection` per connection.
`read_flow_dir` gives a tcpflow folder's connections, their roles decided.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..reading.frame_dumps import frame_dump_segments
from ..reading.inputs import CaptureFile, input_label
from ..reading.packets import TcpSegment
from ..reading.pcap import FileIssue, PacketRange, PacketReader
from ..reading.reassembly import Connection, TcpReassembler, reassemble
from ..reading.tcpflow import parse_flow_name, tcpflow_segments
from ..reading.walk import batched, tcp_segment_batches, tcp_segments
from .pairing import PAIR_COLUMNS, PDU_COLUMNS, decode_connection, new_rows, set_column
from .roles import orient

__all__ = [
    "CaptureRows",
    "PacketStats",
    "columns_rows",
    "connections_from_files",
    "decode_capture",
    "decode_input",
    "drop_stand_in_times",
    "input_segment_batches",
    "input_segments",
    "issue_row",
    "read_flow_dir",
    "rows_for_connections",
    "segments",
]


@dataclass(slots=True)
class PacketStats:
    """What the reader saw: every packet is TCP or is counted under the reason it is not."""

    packets: int = 0
    tcp: int = 0
    truncated: int = 0  # packets whose TCP payload was cut by the snap length
    skipped: Counter = field(default_factory=Counter)  # reason -> packets

    def merge(self, other: PacketStats) -> None:
        """Add another range's counts."""
        self.packets += other.packets
        self.tcp += other.tcp
        self.truncated += other.truncated
        self.skipped.update(other.skipped)


@dataclass(slots=True)
class CaptureRows:
    """Rows of the three tables, plus what the reader noticed.

    `pdus` and `pairs` are lists of row dicts, or `pairing.new_rows` tables (`columns_rows()`):
    `rows_for_connections` adds to either kind.
    """

    pdus: Any = field(default_factory=list)
    pairs: Any = field(default_factory=list)
    connections: list[dict[str, Any]] = field(default_factory=list)
    stats: PacketStats = field(default_factory=PacketStats)
    issues: list[FileIssue] = field(default_factory=list)


def columns_rows() -> CaptureRows:
    """Empty rows whose `pdus` and `pairs` are held as columns when the compiled loops are
    built (`pairing.new_rows`): what the engines write, without a dict per row."""
    return CaptureRows(new_rows(PDU_COLUMNS), new_rows(PAIR_COLUMNS))


def segments(
    reader: PacketReader, stats: PacketStats | None = None, *, copy: bool = False
) -> Iterator[tuple[int, TcpSegment]]:
    """(ts_ns, segment) for every TCP packet; `copy` detaches payloads from the file buffer."""
    st = stats if stats is not None else PacketStats()
    yield from tcp_segments(reader, st, copy=copy)


def input_segments(
    file: CaptureFile,
    stats: PacketStats | None = None,
    packet_range: PacketRange | None = None,
    *,
    copy: bool = False,
    issues: list[FileIssue] | None = None,
    content: bytes | None = None,
    mtime: int = 0,
) -> Iterator[tuple[int, TcpSegment]]:
    """(ts_ns, segment) of any input kind; a pcap's file problems are appended to `issues`.

    `content` is the file's bytes when they were read elsewhere (Spark's binaryFile source),
    `mtime` its modification time (epoch ns).
    """
    for batch in input_segment_batches(
        file, stats, packet_range, copy=copy, issues=issues, content=content, mtime=mtime
    ):
        yield from batch


def input_segment_batches(
    file: CaptureFile,
    stats: PacketStats | None = None,
    packet_range: PacketRange | None = None,
    *,
    copy: bool = False,
    issues: list[FileIssue] | None = None,
    content: bytes | None = None,
    mtime: int = 0,
) -> Iterator[list[tuple[int, TcpSegment]]]:
    """`input_segments` in lists, in the same order: a capture's as the walker reads them."""
    if file.kind == "tcpflow":
        yield from batched(tcpflow_segments(file.path, file.peer, content=content, mtime=mtime))
        return
    if file.kind == "frames":
        yield from batched(frame_dump_segments(file.path, file.peer, content=content, mtime=mtime))
        return
    reader = PacketReader(file.path if content is None else content, packet_range=packet_range)
    st = stats if stats is not None else PacketStats()
    yield from tcp_segment_batches(reader, st, copy=copy)
    if issues is not None:
        issues.extend(reader.issues)


def drop_stand_in_times(rows: CaptureRows) -> None:
    """Empty the PDU and pair times of an input that has none (tcpflow, frame dumps), in place.

    Their segments carry the file's modification time only so reassembly has a clock; that time
    stays on the connection row, and no RTT is made up from it.
    """
    set_column(rows.pdus, "ts", [None] * len(rows.pdus))
    nones = [None] * len(rows.pairs)
    for name in ("request_ts", "response_ts", "rtt_ms"):
        set_column(rows.pairs, name, nones)


def rows_for_connections(
    conns: Iterable[Connection],
    *,
    capture: str,
    file: str,
    decoder: Any = None,
    with_body_json: bool = True,
    out: CaptureRows | None = None,
    broker_ports: Iterable[int] = (),
) -> CaptureRows:
    """Decode reassembled connections into rows (`broker_ports`: hints for `roles.orient`)."""
    rows = out if out is not None else CaptureRows()
    ports = frozenset(broker_ports)
    for conn in conns:
        r = decode_connection(
            conn,
            capture=capture,
            file=file,
            decoder=decoder,
            with_body_json=with_body_json,
            broker_ports=ports,
            into=(rows.pdus, rows.pairs),
        )
        rows.connections.append(r.connection)
    return rows


def issue_row(capture: str, file: str, issue: FileIssue) -> dict[str, Any]:
    """The `pdus` row that reports a problem with the capture file itself."""
    row = dict.fromkeys(PDU_COLUMNS)
    row.update(
        capture=capture,
        file=file,
        length=issue.length,
        decode_status=issue.status,
        decode_error=f"file offset {issue.offset}: {issue.message}",
        stream_offset=issue.offset,
        captured_bytes=issue.length if issue.status == "malformed" else 0,
    )
    return row


def decode_capture(
    source: str | os.PathLike | bytes,
    *,
    capture: str | None = None,
    file: str | None = None,
    broker_ports: Iterable[int] = (),
    decoder: Any = None,
    with_body_json: bool = True,
    packet_range: PacketRange | None = None,
    columns: bool = False,
) -> CaptureRows:
    """Read, reassemble, frame, decode and pair one capture file into table rows.

    A damaged file still yields rows: its problems become `truncated`/`malformed` rows. With
    `columns`, the rows are held as `columns_rows()` holds them.
    """
    if file is None:
        file = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<bytes>"
    if capture is None:
        capture = input_label(file) if file else ""
    reader = PacketReader(source, packet_range=packet_range)
    rows = columns_rows() if columns else CaptureRows()
    reasm = TcpReassembler()
    reasm.add_batches(tcp_segment_batches(reader, rows.stats))
    rows_for_connections(
        reasm.finish(),
        capture=capture,
        file=file,
        decoder=decoder,
        with_body_json=with_body_json,
        out=rows,
        broker_ports=broker_ports,
    )
    rows.issues = list(reader.issues)
    rows.pdus.extend(issue_row(capture, file, i) for i in reader.issues)
    return rows


def decode_input(
    file: CaptureFile,
    *,
    capture: str,
    broker_ports: Iterable[int] = (),
    decoder: Any = None,
    with_body_json: bool = True,
    columns: bool = False,
) -> CaptureRows:
    """Decode one whole input of any kind into table rows; an unreadable one is an issue row.

    `columns` as for `decode_capture`."""
    if file.kind == "pcap":
        return decode_capture(
            file.path,
            capture=capture,
            file=file.name,
            broker_ports=broker_ports,
            decoder=decoder,
            with_body_json=with_body_json,
            columns=columns,
        )
    rows = columns_rows() if columns else CaptureRows()
    reasm = TcpReassembler()
    reasm.add_many(input_segments(file, rows.stats))
    rows_for_connections(
        reasm.finish(),
        capture=capture,
        file=file.name,
        decoder=decoder,
        with_body_json=with_body_json,
        out=rows,
        broker_ports=broker_ports,
    )
    drop_stand_in_times(rows)
    return rows


def connections_from_files(
    paths: Iterable[str | os.PathLike], broker_ports: Iterable[int] = ()
) -> list[Connection]:
    """Pair tcpflow files by 4-tuple into connections (a lone direction gets an empty peer).

    tcpflow keeps no handshake: each connection's roles come from its bytes (`roles.orient`),
    `broker_ports` being the weakest hint.
    """
    hints = frozenset(broker_ports)
    groups: dict[tuple, list[str]] = {}
    for path in paths:
        name = parse_flow_name(os.fspath(path))
        if name is None:
            continue
        a, b = sorted((name.src, name.dst))
        groups.setdefault((a, b, name.vlan, name.conn), []).append(os.fspath(path))
    conns = []
    for _key, files in sorted(groups.items(), key=lambda kv: str(kv[0])):
        conns.extend(orient(c, hints) for c in reassemble(tcpflow_segments(*sorted(files)[:2])))
    return conns


def read_flow_dir(
    directory: str | os.PathLike, broker_ports: Iterable[int] = ()
) -> list[Connection]:
    """All connections in a tcpflow output directory."""
    return connections_from_files(sorted(Path(directory).iterdir()), broker_ports)
