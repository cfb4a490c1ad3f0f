"""Loading a decoded capture for the comparison: its three tables as exchanges per connection.

`load_capture` reads the `pdus`, `pairs` and `connections` Parquet tables the decode wrote
(pyarrow only, no Spark). Each request PDU becomes an *exchange*: the request and the response
with its correlation id on the same connection, its body normalised by `comparing.normalise`, with
a digest of it that the alignment matches on. The dataclasses are in `comparing.model`.

A connection is the cluster's own (`Conn.internal`) when it carries controller or inter-broker
APIs (`INTERNAL_APIS`) or a follower's or the metadata log's Fetch; `clients_only` sets those
aside in `Capture.internal` and leaves their rows out of the tables the compare counts.
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

from ..decoding.metadata_records import METADATA_TOPIC_ID
from .model import Capture, Conn, Exchange
from .normalise import ZERO_UUID, WalkContext, normalise
from .rules import Rules

__all__ = ["INTERNAL_APIS", "CompareInputError", "is_internal", "load_capture"]

#: APIs only brokers and controllers send each other (KRaft, replication, the metadata quorum).
INTERNAL_APIS = frozenset(
    {
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.ALTER_PARTITION,
        ApiKey.ENVELOPE,
        ApiKey.FETCH_SNAPSHOT,
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        ApiKey.CONTROLLER_REGISTRATION,
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        ApiKey.ADD_RAFT_VOTER,
        ApiKey.REMOVE_RAFT_VOTER,
        ApiKey.UPDATE_RAFT_VOTER,
        ApiKey.GET_REPLICA_LOG_INFO,
    }
)
_METADATA_TOPIC = "__cluster_metadata"


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
    "pairs": ("capture", "flow_uid", "client_id", "api_version", "error_code"),
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


def is_internal(e: Exchange) -> bool:
    """True for a request only the cluster sends itself: inter-broker, controller, replica Fetch."""
    if e.api_key in INTERNAL_APIS:
        return True
    if e.api_key != ApiKey.FETCH or not isinstance(e.request, Mapping):
        return False
    state = e.request.get("replica_state")
    replica = state.get("replica_id") if isinstance(state, Mapping) else None
    if replica is None:
        replica = e.request.get("replica_id")
    return (isinstance(replica, int) and replica >= 0) or _METADATA_TOPIC in e.topics


def load_capture(
    path: str | os.PathLike, *, rules: Rules | None = None, clients_only: bool = False
) -> Capture:
    """Read a decoded capture's three tables; `CompareInputError` when it is not one.

    `rules` change which body fields are volatile (`comparing.rules`); `clients_only` sets the
    cluster's own connections aside (`Capture.internal`, rows left out of `pdus` and `pairs`).
    """
    root = Path(path)
    if not root.is_dir():
        raise CompareInputError(f"{root}: not a directory of decoded tables")
    pdus = _read_table(root, "pdus")
    pairs = _read_table(root, "pairs")
    connections = _read_table(root, "connections")
    labels = sorted({r["capture"] for r in pdus if r.get("capture")})
    cap = Capture(os.fspath(root), labels, pdus, pairs, connections)
    _build(cap, rules)
    if clients_only:
        cap.internal = [c for c in cap.conns if c.internal]
        cap.conns = [c for c in cap.conns if not c.internal]
        flows = {c.flow for c in cap.internal}
        cap.pdus = [r for r in cap.pdus if r["flow_uid"] not in flows]
        cap.pairs = [r for r in cap.pairs if r.get("flow_uid") not in flows]
        cap.connections = [r for r in cap.connections if r["flow_uid"] not in flows]
        cap.records = {}
        for c in cap.conns:
            _digest_records(cap, c)
    return cap


def _parse(body: str | None) -> Any:
    if body is None:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _build(cap: Capture, rules: Rules | None = None) -> None:
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
                    ts=r.get("ts"),
                    response_ts=resp.get("ts") if resp else None,
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
        c.internal = any(is_internal(e) for e in c.exchanges)
        for e in c.exchanges:
            if e.request is None:
                e.token = (e.api_key, f"<{e.status}>")
                continue
            api = e.api_name or str(e.api_key)
            e.norm = normalise(e.request, cap.topic_names, rules=rules, path=api)
            e.token = (e.api_key, _digest(e.norm))
        _digest_records(cap, c)
    cap.conns = conns


def _digest_records(cap: Capture, c: Conn) -> None:
    """Per topic-partition digests of the records a connection produced and fetched.

    Each exchange keeps its own (`Exchange.records`, for the semantic facts); the capture sums
    them per partition. The metadata log's records are the controller's decisions, which the
    `metadata` kind compares field by field; their digests would only repeat the brokers'
    epochs and ports.
    """
    for e in c.exchanges:
        if e.api_key == ApiKey.PRODUCE and e.request is not None:
            source, body = "produce", e.request
        elif e.api_key == ApiKey.FETCH and e.response is not None:
            source, body = "fetch", e.response
        else:
            continue
        if e.records is None:
            sink = Capture("", [], [], [], [])
            normalise(body, cap.topic_names, WalkContext(sink, source))
            e.records = {(t, part): recs for (_, t, part), recs in sink.records.items()}
        for (topic, part), recs in e.records.items():
            if topic not in (_METADATA_TOPIC, METADATA_TOPIC_ID):
                cap.records.setdefault((source, topic, part), []).extend(recs)


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
