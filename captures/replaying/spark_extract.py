"""Extraction on Spark, for captures too large to read in one process: the decode job's reading
and shuffle, then each connection's request and response frames cut in the tasks.

The inputs are read by the decode job's own `fragments_dataframe` (split by file and packet
range) and its fragments brought together per connection (`balance_connections`, the shuffle);
each task reassembles its connections and runs `extract.extract_connections` on them, one at a
time, and returns one row per captured exchange (its frames as bytes) and one per `NotReplayed`
row. The driver collects the rows into an `Extracted` and sends them: the sending needs one
process that sees every connection, for causality across them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from ..engines.schema import spark_ddl
from ..engines.spark_job import balance_connections, fragments_dataframe
from ..engines.spark_session import task_slots
from ..reading.packets import TcpSegment
from ..reading.reassembly import TcpReassembler
from .extract import CapturedExchange, ClientConnection, Extracted, NotReplayed, extract_connections

__all__ = ["EXCHANGES", "extract_batches", "extract_on_spark"]

UNREADABLE = "capture file unreadable"

#: One row per captured exchange, or (with `reason`) per `NotReplayed` row.
EXCHANGES = pa.schema(
    [
        ("input_set", pa.int32()),  # the same connection in two inputs is two connections
        ("uid", pa.string()),
        ("client_h", pa.string()),
        ("client_p", pa.int32()),
        ("server_h", pa.string()),
        ("server_p", pa.int32()),
        ("first_ts", pa.int64()),
        ("idx", pa.int32()),
        ("ts", pa.int64()),
        ("frame", pa.binary()),
        ("api_key", pa.int32()),
        ("api_version", pa.int32()),
        ("client_id", pa.string()),
        ("response", pa.binary()),
        ("response_ts", pa.int64()),
        ("reason", pa.string()),
        ("connection", pa.string()),
        ("requests", pa.int32()),
        ("detail", pa.string()),
    ]
)
_SEGMENT_COLUMNS = ("ts", "seq", "ack", "flags", "wire_len", "from_a", "payload")


def _rows(found: Extracted, input_set: int = 0) -> list[dict[str, Any]]:
    rows = []
    for c in found.connections:
        for ex in c.exchanges:
            rows.append(
                {
                    "input_set": input_set,
                    "uid": c.uid,
                    "client_h": c.client[0],
                    "client_p": c.client[1],
                    "server_h": c.server[0],
                    "server_p": c.server[1],
                    "first_ts": c.first_ts_ns,
                    "idx": ex.index,
                    "ts": ex.ts_ns,
                    "frame": ex.frame,
                    "api_key": ex.api_key,
                    "api_version": ex.api_version,
                    "client_id": ex.client_id,
                    "response": ex.response,
                    "response_ts": ex.response_ts_ns,
                }
            )
    for r in found.not_replayed:
        rows.append(
            {"reason": r.reason, "connection": r.connection, "requests": r.requests}
            | {"detail": r.detail}
        )
    return rows


def extract_batches(
    batches: Iterable[pa.RecordBatch],
    *,
    client_id: str | None,
    sasl: bool,
    keys_sorted: bool,
) -> Iterator[pa.RecordBatch]:
    """Fragment batches (sorted by connection when `keys_sorted`) to `EXCHANGES` batches."""
    reasm, untimed, current = TcpReassembler(), False, None

    def flush() -> Iterator[pa.RecordBatch]:
        nonlocal reasm
        found = extract_connections(
            reasm.finish(), from_start_known=untimed, client_id=client_id, sasl=sasl
        )
        reasm = TcpReassembler()
        rows = _rows(found, current[0] if current is not None else 0)
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=EXCHANGES)

    for batch in batches:
        cols = batch.to_pydict()
        for i in range(batch.num_rows):
            if cols["issue_status"][i] is not None:
                issue = NotReplayed(UNREADABLE, cols["file"][i], 0, cols["issue_message"][i])
                yield pa.RecordBatch.from_pylist(_rows(Extracted([], [issue])), schema=EXCHANGES)
                continue
            a = (cols["a_ip"][i], cols["a_port"][i])
            b = (cols["b_ip"][i], cols["b_port"][i])
            key = (cols["group"][i], a, b)
            if current is not None and key != current and (keys_sorted or key[0] != current[0]):
                yield from flush()
            current, untimed = key, not cols["timed"][i]
            for t, seq, ack, flags, wire, from_a, payload in zip(
                *(cols[c][i] for c in _SEGMENT_COLUMNS), strict=True
            ):
                src, dst = (a, b) if from_a else (b, a)
                seg = TcpSegment(src[0], src[1], dst[0], dst[1], seq, ack, flags, payload, wire)
                reasm.add(t, seg)
    yield from flush()


def _collected(table: pa.Table) -> Extracted:
    found = Extracted()
    by_uid: dict[tuple[int, str], ClientConnection] = {}
    for r in table.to_pylist():
        if r["reason"] is not None:
            found.not_replayed.append(
                NotReplayed(r["reason"], r["connection"], r["requests"], r["detail"] or "")
            )
            continue
        key = (r["input_set"], r["uid"])
        conn = by_uid.get(key)
        if conn is None:
            client, server = (r["client_h"], r["client_p"]), (r["server_h"], r["server_p"])
            conn = by_uid[key] = ClientConnection(r["uid"], client, server, r["first_ts"], [])
        conn.exchanges.append(
            CapturedExchange(
                r["idx"],
                r["ts"],
                r["frame"],
                r["api_key"],
                r["api_version"],
                r["client_id"],
                r["response"],
                r["response_ts"],
            )
        )
    for conn in by_uid.values():
        conn.exchanges.sort(key=lambda ex: ex.index)
    found.connections = sorted(by_uid.values(), key=lambda c: (c.first_ts_ns, c.uid))
    return found


def extract_on_spark(
    spark: SparkSession,
    inputs: Sequence[str],
    *,
    client_id: str | None = None,
    sasl: bool = False,
) -> Extracted:
    """What `extract.extract` gives, with the reading, shuffle and cutting in Spark tasks."""
    frags = fragments_dataframe(spark, list(inputs))
    frame, keys_sorted = frags.frame, False
    if frags.partitions > 1:
        frame = frame.persist()  # read twice: the connections' sizes, then the extraction
        frame, _ranks = balance_connections(frame, max(frags.partitions, 4 * task_slots(spark)))
        keys_sorted = True

    def cut(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return extract_batches(batches, client_id=client_id, sasl=sasl, keys_sorted=keys_sorted)

    try:
        table = frame.mapInArrow(cut, spark_ddl(EXCHANGES)).toArrow()
    finally:
        if frags.partitions > 1:
            frags.frame.unpersist()
    return _collected(table)
