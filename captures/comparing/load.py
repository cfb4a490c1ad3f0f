"""Loading a decoded capture for the comparison: its three tables as exchanges per connection.

`load_capture` reads the `pdus`, `pairs` and `connections` Parquet tables the decode wrote
(pyarrow only, no Spark). Each request PDU becomes an *exchange*: the request and the response
with its correlation id on the same connection, its body normalised by `comparing.normalise`, with
a digest of it that the alignment matches on. The dataclasses are in `comparing.model`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kipwire.codec import ApiKey

from .model import Capture, Conn, Exchange
from .normalise import ZERO_UUID, WalkContext, normalise

__all__ = ["CompareInputError", "load_capture"]


class CompareInputError(Exception):
    """A capture directory that is not a decoded capture (missing table or columns)."""


_REQUIRED = {
    "pdus": (
        "flow_uid",
        "direction",
        "pdu_index",
        "api_key",
        "api_name",
        "api_version",
        "correlation_id",
        "client_id",
        "decode_status",
        "body_json",
    ),
    "pairs": ("api_key", "api_name", "rtt_ms", "status"),
    "connections": ("flow_uid",),
}
_OPTIONAL = {
    "pdus": ("capture", "ts", "length", "error_code", "topics", "record_count"),
    "pairs": ("capture", "client_id", "api_version", "error_code"),
    "connections": ("capture", "first_ts", "missed_bytes", "request_pdus", "response_pdus"),
}


def _read_table(root: Path, name: str) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    path = root / name
    if not path.exists():
        raise CompareInputError(f"{root}: no `{name}` table (expected {path}/ with Parquet files)")
    try:
        dataset = ds.dataset(path, format="parquet", partitioning="hive")
        present = set(dataset.schema.names)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CompareInputError(f"{path}: not a Parquet dataset: {exc}") from None
    missing = [c for c in _REQUIRED[name] if c not in present]
    if missing:
        raise CompareInputError(f"{path}: missing column(s) {', '.join(missing)}")
    cols = [c for c in (*_REQUIRED[name], *_OPTIONAL[name]) if c in present]
    table = dataset.to_table(columns=cols)
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type):
            # the tables hold ns (Spark's writer: us); compare works in integer microseconds
            us = pc.cast(table.column(i), pa.timestamp("us", tz=f.type.tz), safe=False)
            table = table.set_column(i, f.name, pc.cast(us, pa.int64()))
    rows = table.to_pylist()
    for r in rows:
        for c in _OPTIONAL[name]:
            r.setdefault(c, None)
    return rows


def load_capture(path: str | os.PathLike) -> Capture:
    """Read a decoded capture's three tables; `CompareInputError` when it is not one."""
    root = Path(path)
    if not root.is_dir():
        raise CompareInputError(f"{root}: not a directory of decoded tables")
    pdus = _read_table(root, "pdus")
    pairs = _read_table(root, "pairs")
    connections = _read_table(root, "connections")
    labels = sorted({r["capture"] for r in pdus if r.get("capture")})
    cap = Capture(os.fspath(root), labels, pdus, pairs, connections)
    _build(cap)
    return cap


def _parse(body: str | None) -> Any:
    if body is None:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _build(cap: Capture) -> None:
    """Exchanges per connection, the topic-id map, then normalised bodies and record digests."""
    by_flow: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in cap.pdus:
        if r["flow_uid"] is not None and r["direction"] in ("request", "response"):
            by_flow[(r.get("capture") or "", r["flow_uid"])].append(r)
    first_ts = {
        (c.get("capture") or "", c["flow_uid"]): c.get("first_ts") or 0 for c in cap.connections
    }
    for rows in by_flow.values():
        for r in rows:
            if (
                r["direction"] == "response"
                and r["api_key"] == ApiKey.METADATA
                and r["decode_status"] == "ok"
            ):
                _learn_topic_ids(_parse(r["body_json"]), cap.topic_names)

    conns: list[Conn] = []
    for key, rows in by_flow.items():
        rows.sort(key=lambda r: (r["direction"], r["pdu_index"] or 0))
        responses: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            if r["direction"] == "response" and r["correlation_id"] is not None:
                responses[r["correlation_id"]].append(r)
        exchanges = []
        for r in rows:
            if r["direction"] != "request" or r["api_key"] is None:
                continue
            waiting = responses.get(r["correlation_id"])
            resp = waiting.pop(0) if waiting else None
            exchanges.append(
                Exchange(
                    flow=key[1],
                    index=len(exchanges),
                    api_key=r["api_key"],
                    api_name=r["api_name"],
                    api_version=r["api_version"],
                    client_id=r["client_id"],
                    status=r["decode_status"],
                    request=_parse(r["body_json"]) if r["decode_status"] == "ok" else None,
                    response=(
                        _parse(resp["body_json"])
                        if resp and resp["decode_status"] == "ok"
                        else None
                    ),
                    response_status=resp["decode_status"] if resp else None,
                    response_error=resp["error_code"] if resp else None,
                    topics=tuple(r["topics"] or ()),
                )
            )
        if not exchanges:
            continue
        cid = Counter(e.client_id for e in exchanges if e.client_id is not None)
        conns.append(
            Conn(
                flow=key[1],
                client_id=cid.most_common(1)[0][0] if cid else "",
                first_ts=first_ts.get(key) or 0,
                rank=0,
                exchanges=exchanges,
            )
        )
    conns.sort(key=lambda c: (c.first_ts, c.flow))
    per_client: Counter = Counter()
    for c in conns:
        c.rank = per_client[c.client_id]
        per_client[c.client_id] += 1
        for e in c.exchanges:
            ctx = WalkContext(cap, "produce" if e.api_key == ApiKey.PRODUCE else None)
            e.norm = normalise(e.request, cap.topic_names, ctx) if e.request is not None else None
            digest = _digest(e.norm) if e.request is not None else f"<{e.status}>"
            e.token = (e.api_key, digest)
            if e.api_key == ApiKey.FETCH and e.response is not None:
                # fetched records count toward the per-partition digests; the body is not diffed
                normalise(e.response, cap.topic_names, WalkContext(cap, "fetch"))
    cap.conns = conns


def _learn_topic_ids(body: Any, names: dict[str, str]) -> None:
    if isinstance(body, Mapping):
        for t in body.get("topics") or ():
            if isinstance(t, Mapping):
                tid, name = t.get("topic_id"), t.get("name")
                if isinstance(tid, str) and isinstance(name, str) and tid != ZERO_UUID:
                    names[tid] = name


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]
