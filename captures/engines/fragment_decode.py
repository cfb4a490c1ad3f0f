"""Decoding for the Spark job: segment fragments (sorted by connection key) to table rows.

`decode_fragments` is the body of the job's `mapInArrow`: it feeds each connection's fragments
to a reassembler, then frames, decodes and pairs the connection (`pipeline.rows_for_connections`)
into a sink: `table_files.ParquetSink` (the tasks write the tables) or `UnionBatches` (Spark
writes them). `decode_file` is the shortcut for a read partition that holds whole connections.
"""

from __future__ import annotations

import gc
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import pyarrow as pa

from ..decoding.pairing import column_of, load_codec, set_column
from ..decoding.pipeline import (
    columns_rows,
    decode_input,
    drop_stand_in_times,
    issue_row,
    rows_for_connections,
)
from ..reading.inputs import CaptureFile, file_size
from ..reading.pcap import CaptureFormatError, FileIssue
from ..reading.reassembly import TcpReassembler
from .fragments import fragment_groups
from .table_files import OUT_ROWS, ParquetSink, UnionBatches

__all__ = ["decode_file", "decode_fragment_groups", "decode_fragments", "fewer_collections"]

# A fragment row's segment columns, under the names of `fragments.Fragment`'s lists
_ROW = ("ts", "seq", "ack", "flags", "wire_len", "from_a", "payload")
_Row = NamedTuple(
    "_Row", [(n, list) for n in ("ts", "seq", "ack", "flags", "wire", "from_a", "pay")]
)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The block runs with the cyclic garbage collector mostly out of the way, restored after.

    A decode makes millions of short-lived containers (segments, frames, rows) that form no
    cycles, and keeps many alive for a while: the collector's passes over them took a tenth of
    the local engine's time. The objects made before the block are frozen out of its passes
    (`gc.freeze`), and it runs after 50,000 new containers, not 700; cycles are still collected.
    """
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def decode_file(
    file: CaptureFile,
    sink: Any,
    *,
    capture: str,
    broker_ports: Iterable[int] = (),
    with_body_json: bool = True,
) -> None:
    """Decode one whole input into `sink`, the same rows as `pipeline.decode_input`."""
    try:
        rows = decode_input(
            file,
            capture=capture,
            broker_ports=broker_ports,
            decoder=load_codec(),
            with_body_json=with_body_json,
            columns=True,
        )
    except (CaptureFormatError, OSError, ValueError) as exc:
        issue = FileIssue(0, "malformed", file_size(file.path), f"not readable: {exc}")
        sink.add("pdus", [issue_row(capture, file.name, issue)])
        return
    sink.add("pdus", rows.pdus)
    sink.add("pairs", rows.pairs)
    sink.add("connections", rows.connections)


class _Decoder:
    """Feeds fragments to a reassembler and decodes the connections into rows."""

    def __init__(self, capture: str, broker_ports: Iterable[int], with_body_json: bool) -> None:
        self.capture = capture
        self.broker_ports = tuple(broker_ports)
        self.with_body_json = with_body_json
        self.reasm = TcpReassembler()
        # connection key -> ([first ts of each fragment], [its file]), in replay order
        self.files: dict[tuple, tuple[list[int], list[str]]] = {}
        self.untimed: set[tuple] = set()  # keys of connections read from inputs without times

    def feed(
        self, a: tuple[bytes, int], b: tuple[bytes, int], file: str, timed: bool, frag: Any
    ) -> None:
        """Add one fragment's segments to its connection.

        `frag` holds them as parallel lists: a `fragments.Fragment`, or a row of its batch.
        """
        ts = frag.ts
        if not ts:
            return
        stamps, names = self.files.setdefault((a, b), ([], []))
        if not timed:
            self.untimed.add((a, b))
        if not names or names[-1] != file:
            stamps.append(ts[0])
            names.append(file)
        self.reasm.add_fragment(a, b, frag)

    def flush(self, out: Any, decoder: Any) -> None:
        """Decode every connection fed so far into `out`."""
        for conn in self.reasm.finish():
            key = tuple(sorted((conn.client, conn.server)))
            stamps, names = self.files.get(key, ([], [""]))
            rows = rows_for_connections(
                [conn],
                capture=self.capture,
                file=names[0],
                decoder=decoder,
                with_body_json=self.with_body_json,
                out=columns_rows(),
                broker_ports=self.broker_ports,
            )
            if key in self.untimed:
                drop_stand_in_times(rows)
            elif len(names) > 1:
                # a connection spanning rotated files: each row names the file holding its start
                times = column_of(rows.pdus, "ts")
                set_column(rows.pdus, "file", _file_names(times, stamps, names))
                times = [
                    a or b
                    for a, b in zip(
                        column_of(rows.pairs, "request_ts"),
                        column_of(rows.pairs, "response_ts"),
                        strict=True,
                    )
                ]
                set_column(rows.pairs, "file", _file_names(times, stamps, names))
            out.add("pdus", rows.pdus)
            out.add("pairs", rows.pairs)
            out.add("connections", rows.connections)
        self.files = {}
        self.untimed = set()


def _file_names(times: list[int | None], stamps: list[int], names: list[str]) -> list[str]:
    """The file each time falls in (`stamps`: each file's first time), the first for None.

    Rows come mostly in time order: a row in the same file as the one before costs two
    comparisons, not a search (when the files' times ascend, as rotation writes them).
    """
    lo = hi = None  # the [lo, hi) time span of the file `name`
    name = names[0]
    last = len(stamps) - 1
    spans = all(a <= b for a, b in zip(stamps, stamps[1:], strict=False))
    out = []
    for ts in times:
        if ts is None:
            out.append(names[0])
            continue
        if not spans or lo is None or not lo <= ts < hi:
            i = max(bisect_right(stamps, ts) - 1, 0)
            name = names[i]
            lo = stamps[i] if i else -(1 << 63)
            hi = stamps[i + 1] if i < last else 1 << 64
        out.append(name)
    return out


def decode_fragments(
    batches: Iterable[pa.RecordBatch],
    *,
    capture: str,
    broker_ports: Iterable[int] = (),
    with_body_json: bool = True,
    keys_sorted: bool = True,
    sink: ParquetSink | None = None,
) -> Iterator[pa.RecordBatch]:
    """Fragments to rows: union-schema batches, or with `sink` its `STATS` once written.

    With `keys_sorted` (after the shuffle and sort) each connection is decoded as soon as its
    key ends, so memory holds one connection at a time; otherwise all at the end.
    """
    codec = load_codec()
    state = _Decoder(capture, broker_ports, with_body_json)
    out: Any = sink if sink is not None else UnionBatches()
    current: tuple | None = None
    with fewer_collections():  # while the task decodes, and Spark serialises between batches
        for batch in batches:
            cols = batch.to_pydict()
            for i in range(batch.num_rows):
                status = cols["issue_status"][i]
                if status is not None:
                    issue = FileIssue(
                        cols["issue_offset"][i],
                        status,
                        cols["issue_length"][i],
                        cols["issue_message"][i],
                    )
                    out.add("pdus", [issue_row(capture, cols["file"][i], issue)])
                    continue
                a = (cols["a_ip"][i], cols["a_port"][i])
                b = (cols["b_ip"][i], cols["b_port"][i])
                group = cols["group"][i]
                if current is not None and group != current[0]:
                    state.flush(out, codec)  # another rotation set: its connections are apart
                elif keys_sorted and current is not None and (a, b) != current[1]:
                    state.flush(out, codec)
                current = (group, (a, b))
                row = _Row(*(cols[k][i] for k in _ROW))
                state.feed(a, b, cols["file"][i], cols["timed"][i], row)
                if sink is None and out.count >= OUT_ROWS:
                    yield out.batch()
        state.flush(out, codec)
        if sink is not None:
            sink.close()
            yield sink.stats()
        elif out.count:
            yield out.batch()


def decode_fragment_groups(
    files: Iterable[CaptureFile],
    sink: ParquetSink,
    *,
    capture: str,
    broker_ports: Iterable[int] = (),
    with_body_json: bool = True,
) -> None:
    """The files of one rotation set, in rotation order, decoded into `sink` in this process.

    The rows of `decode_fragments(..., keys_sorted=False)` over their `fragments_of` batches,
    without building those batches and reading them back.
    """
    codec = load_codec()
    state = _Decoder(capture, broker_ports, with_body_json)
    for file in files:
        timed = file.kind == "pcap"
        for frags, issues in fragment_groups(file):
            for frag in frags:
                state.feed(frag.a, frag.b, file.name, timed, frag)
            for issue in issues:
                sink.add("pdus", [issue_row(capture, file.name, issue)])
    state.flush(sink, codec)
    sink.close()
