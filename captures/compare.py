"""Regression comparison of two decoded captures (issue 4, item 6) and the `compare` command.

`compare(baseline_dir, candidate_dir)` reads the `pdus`, `pairs` and `connections` Parquet tables
the decode job wrote (pyarrow only, no Spark) and returns a `Report`; `write_report` renders it as
`report.md`, `report.html` (with PNG plots) and `diff.json`.

How requests are aligned, not by time:

1. Each request PDU becomes an *exchange* (request + the response with its correlation id on the
   same connection). Its body is *normalised* (see `VOLATILE`): volatile values are replaced by
   placeholders, record batches by digests of their keys and values.
2. Connections are matched between captures per client id: the pairs with the best
   `difflib.SequenceMatcher` ratio over their (api, normalised request) token sequences first,
   ties broken by order of first appearance; when a client id has too many connections to score
   every pair, by order of first appearance alone. Connections left over are then matched across
   client ids when their sequences are at least half alike (a client id change shows as a
   `changed` difference on `client_id`); the rest are wholly added or removed.
3. Within a matched pair of connections, SequenceMatcher over the tokens aligns requests; inside a
   replaced block, requests of the same API (by a second SequenceMatcher over API keys) are
   *changed*, the others added/removed. Matched requests are compared for version, request fields
   (field-path diffs of the normalised bodies; when versions differ, fields only one version
   has are the version difference, not reported again), and response error codes.

Differences are grouped (same kind, API, client, versions, path, values) with a count.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import math
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

__all__ = [
    "FUNCTIONAL_KINDS",
    "INFORMATIONAL_KINDS",
    "VOLATILE",
    "CompareInputError",
    "Difference",
    "Report",
    "compare",
    "load_capture",
    "main_compare",
    "normalise",
    "opcodes",
    "write_report",
]

FUNCTIONAL_KINDS = ("added", "removed", "changed", "version", "error_code", "records", "count")
INFORMATIONAL_KINDS = ("health", "rtt")

# The normalisation table: body field name -> (what it is, rule). Rules:
#   "sentinel": null, "", values <= 0 and the all-zero uuid are kept (they mean "none",
#               "unknown", "latest"/"earliest"...), any other value becomes "<field>";
#   "always":   every non-null value becomes "<field>".
# Field names match anywhere in a request or response body (snake_case, as `codec.to_json`
# writes them); names ending in "_timestamp" / "_timestamp_ms" follow the "timestamp" rule.
# The header's correlation id, the TCP ports and PDU timestamps are never compared at all.
VOLATILE: dict[str, tuple[str, str]] = {
    "throttle_time_ms": ("broker quota throttling", "always"),
    "timestamp": ("record / ListOffsets timestamps (-1 latest, -2 earliest kept)", "sentinel"),
    "log_append_time_ms": ("broker append time", "sentinel"),
    "port": ("broker and coordinator ports (ephemeral in test clusters)", "sentinel"),
    "member_id": ("group member ids, assigned by the coordinator", "sentinel"),
    "leader": ("JoinGroup leader member id", "sentinel"),
    "member_epoch": ("consumer-group member epoch", "sentinel"),
    "generation_id": ("group generation", "sentinel"),
    "generation_id_or_member_epoch": ("group generation / member epoch", "sentinel"),
    "group_epoch": ("group epoch", "sentinel"),
    "producer_id": ("idempotent / transactional producer id", "sentinel"),
    "producer_epoch": ("producer epoch", "sentinel"),
    "session_id": ("fetch session id", "sentinel"),
    "session_epoch": ("fetch session epoch", "sentinel"),
    "share_session_epoch": ("share-fetch session epoch", "sentinel"),
    "topic_id": ("topic uuid (rewritten to the topic's name when Metadata told it)", "sentinel"),
    "cluster_id": ("cluster uuid", "sentinel"),
    "incarnation_id": ("broker incarnation uuid", "sentinel"),
    "directory_id": ("log directory uuid", "sentinel"),
    "broker_epoch": ("broker registration epoch", "sentinel"),
    "previous_broker_epoch": ("broker registration epoch", "sentinel"),
    "auth_bytes": ("SASL exchange bytes (nonces)", "always"),
    "session_lifetime_ms": ("SASL session lifetime", "sentinel"),
}
_TIMESTAMP_SUFFIXES = ("_timestamp", "_timestamp_ms")
_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
# keys that identify an element of a list of structs, in preference order (for keyed diffs)
_ID_KEYS = (
    "name",
    "topic",
    "topic_name",
    "topic_id",
    "partition_index",
    "partition",
    "index",
    "api_key",
    "node_id",
    "broker_id",
)
# where a body names its topic and partition (normalise's record digests, request identity)
_TOPIC_KEYS = ("name", "topic", "topic_id")
_PARTITION_KEYS = ("partition", "partition_index", "index")
_WINDOW = 1000  # requests aligned at once once a connection's changed middle is longer
_PAIR_MATRIX_LIMIT = 400  # connection pairs scored per client id before falling back to order
_VALUE_TEXT_LIMIT = 300


class CompareInputError(Exception):
    """A capture directory that is not a decoded capture (missing table or columns)."""


@dataclass(slots=True)
class Difference:
    """One grouped difference between the captures (a `diff.json` entry)."""

    kind: str
    functional: bool
    api_key: int | None = None
    api_name: str | None = None
    client_id: str | None = None
    baseline_version: int | None = None
    candidate_version: int | None = None
    path: str = ""
    baseline: Any = None
    candidate: Any = None
    count: int = 1


@dataclass(slots=True)
class Exchange:
    """One request on a connection, with its response when there was one."""

    flow: str
    index: int
    api_key: int
    api_name: str | None
    api_version: int | None
    client_id: str | None
    status: str  # request decode status
    request: Any  # parsed body_json or None
    response: Any
    response_status: str | None  # response decode status, None when unanswered
    response_error: int | None
    topics: tuple[str, ...]
    norm: Any = None
    token: tuple[int, str] = (0, "")


@dataclass(slots=True)
class Conn:
    """A client connection's exchanges in order."""

    flow: str
    client_id: str
    first_ts: int
    rank: int
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def tokens(self) -> list[tuple[int, str]]:
        """(api key, normalised request digest) per request: what alignment compares."""
        return [e.token for e in self.exchanges]


@dataclass(slots=True)
class Capture:
    """One decoded capture, loaded from its three tables."""

    path: str
    labels: list[str]
    pdus: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    connections: list[dict[str, Any]]
    conns: list[Conn] = field(default_factory=list)
    topic_names: dict[str, str] = field(default_factory=dict)
    records: dict[tuple[str, str, int | None], list[tuple[int | None, str, str]]] = field(
        default_factory=dict
    )

    @property
    def label(self) -> str:
        """The capture names in the tables, or the directory's name."""
        return ",".join(self.labels) if self.labels else Path(self.path).name


@dataclass(slots=True)
class Report:
    """Everything `compare` found; `differences` is what `diff.json` lists."""

    baseline: dict[str, Any]
    candidate: dict[str, Any]
    differences: list[Difference]
    counts: list[dict[str, Any]]
    records: list[dict[str, Any]]
    rtt: list[dict[str, Any]]
    health: list[dict[str, Any]]
    alignment: dict[str, Any]
    rtt_samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    mix: list[dict[str, Any]] = field(default_factory=list)  # requests per API, not per topic

    @property
    def functional(self) -> list[Difference]:
        """The differences that change behaviour (not health or RTT)."""
        return [d for d in self.differences if d.functional]

    def kinds(self) -> Counter:
        """Number of difference entries per kind."""
        return Counter(d.kind for d in self.differences)

    def to_json(self) -> dict[str, Any]:
        """The `diff.json` document."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "summary": dict(sorted(self.kinds().items())),
            "alignment": self.alignment,
            "differences": [asdict(d) for d in self.differences],
        }


# ---------------------------------------------------------------------------------------------
# loading

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
            # Spark may write INT96 (ns) or micros; compare works in integer microseconds
            us = pc.cast(table.column(i), pa.timestamp("us", tz=f.type.tz))
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
            if r["direction"] == "response" and r["api_key"] == 3 and r["decode_status"] == "ok":
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
            ctx = _Ctx(cap, "produce" if e.api_key == 0 else None)
            e.norm = normalise(e.request, cap.topic_names, ctx) if e.request is not None else None
            digest = _digest(e.norm) if e.request is not None else f"<{e.status}>"
            e.token = (e.api_key, digest)
            if e.api_key == 1 and e.response is not None:
                # fetched records count toward the per-partition digests; the body is not diffed
                normalise(e.response, cap.topic_names, _Ctx(cap, "fetch"))
    cap.conns = conns


def _learn_topic_ids(body: Any, names: dict[str, str]) -> None:
    if isinstance(body, Mapping):
        for t in body.get("topics") or ():
            if isinstance(t, Mapping):
                tid, name = t.get("topic_id"), t.get("name")
                if isinstance(tid, str) and isinstance(name, str) and tid != _ZERO_UUID:
                    names[tid] = name


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# ---------------------------------------------------------------------------------------------
# normalisation


@dataclass(slots=True)
class _Ctx:
    """Where the walk is (topic, partition), and where record digests go."""

    cap: Capture | None
    source: str | None  # "produce" / "fetch": collect record digests; None: don't
    topic: str | None = None
    partition: int | None = None


def _rule(key: str) -> str | None:
    hit = VOLATILE.get(key)
    if hit:
        return hit[1]
    if key.endswith(_TIMESTAMP_SUFFIXES):
        return "sentinel"
    return None


def _volatile(key: str, value: Any, rule: str, topic_names: Mapping[str, str]) -> Any:
    if value is None:
        return None
    if key == "topic_id" and isinstance(value, str) and value in topic_names:
        return f"<topic_id:{topic_names[value]}>"
    if rule == "sentinel" and (
        value == ""
        or value == _ZERO_UUID
        or (isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0)
    ):
        return value
    if isinstance(value, list):
        return [_volatile(key, v, rule, topic_names) for v in value]
    return f"<{key}>"


def normalise(value: Any, topic_names: Mapping[str, str] | None = None, ctx: Any = None) -> Any:
    """A body with volatile fields (`VOLATILE`) replaced and `records` blobs summarised."""
    names = topic_names or {}
    if ctx is None:
        ctx = _Ctx(None, None)
    if isinstance(value, list):
        return [normalise(v, names, ctx) for v in value]
    if not isinstance(value, Mapping):
        return value
    topic, part = ctx.topic, ctx.partition
    for k in _TOPIC_KEYS:
        v = value.get(k)
        if isinstance(v, str) and "records" not in value:
            ctx.topic = names.get(v, v) if k == "topic_id" else v
            break
    for k in _PARTITION_KEYS:
        v = value.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            ctx.partition = v
            break
    out = {}
    for k, v in value.items():
        rule = _rule(k)
        if rule is not None:
            out[k] = _volatile(k, v, rule, names)
        elif k == "records" and isinstance(v, (str, list)):
            out[k] = _records(v, ctx)
        else:
            out[k] = normalise(v, names, ctx)
    ctx.topic, ctx.partition = topic, part
    return out


def _h(raw: bytes | None) -> str | None:
    return None if raw is None else "sha256:" + hashlib.sha256(raw).hexdigest()[:16]


def _records(value: str | list, ctx: _Ctx) -> Any:
    """A `records` field as batch summaries: digests of keys, values and headers, no timestamps."""
    batches: list[dict[str, Any]] = []
    if isinstance(value, str):  # base64 of the raw batches, as codec.to_json writes bytes
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return {"undecodable": _h(value.encode())}
        if not raw:
            return []
        try:
            from codec.records import iter_batches

            for b in iter_batches(raw, verify_crc=False):
                batches.append(
                    _batch(
                        {
                            "base_offset": b.base_offset,
                            "magic": b.magic,
                            "compression": b.compression.name.lower(),
                            "timestamp_type": b.timestamp_type.name,
                            "is_transactional": b.is_transactional,
                            "is_control": b.is_control,
                            "producer_id": b.producer_id,
                            "producer_epoch": b.producer_epoch,
                            "base_sequence": b.base_sequence,
                            "record_count": b.record_count,
                            "truncated": b.truncated,
                        },
                        [(r.offset, r.key, r.value, r.headers) for r in b.records],
                        ctx,
                    )
                )
        except Exception as exc:  # noqa: BLE001 - any decode failure: compare the bytes' digest
            return {"undecodable": _h(raw), "error": f"{type(exc).__name__}: {exc}"[:200]}
        return batches
    for b in value:  # expanded by the decoder (codec.records.expand_records)
        if not isinstance(b, Mapping):
            continue
        recs = [
            (
                r.get("offset"),
                _unb64(r.get("key")),
                _unb64(r.get("value")),
                [(k, _unb64(v)) for k, v in r.get("headers") or ()],
            )
            for r in b.get("records") or ()
        ]
        batches.append(_batch({k: v for k, v in b.items() if k != "records"}, recs, ctx))
    return batches


def _unb64(v: Any) -> bytes | None:
    """Bytes of a key/value as `codec.records.expand_records` renders them (base64 text)."""
    if v is None:
        return None
    try:
        return base64.b64decode(v, validate=True)
    except (TypeError, ValueError, binascii.Error):
        return str(v).encode()  # another rendering: its text still tells values apart


# batch header fields compared; crc, lengths, timestamps and attributes (re-derived) left out
_BATCH_FIELDS = (
    "magic",
    "compression",
    "timestamp_type",
    "is_transactional",
    "is_control",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "record_count",
    "truncated",
)


def _batch(head: Mapping[str, Any], recs: list[tuple], ctx: _Ctx) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in _BATCH_FIELDS:
        if k in head:
            rule = _rule(k)
            out[k] = _volatile(k, head[k], rule, {}) if rule else head[k]
    records = []
    sink = None
    if ctx.source and ctx.cap is not None and not head.get("is_control"):
        sink = ctx.cap.records.setdefault((ctx.source, ctx.topic or "?", ctx.partition), [])
    for offset, key, val, headers in recs:
        kh, vh = _h(key), _h(val)
        records.append({"key": kh, "value": vh, "headers": [[k, _h(v)] for k, v in headers]})
        if sink is not None:
            sink.append((offset if ctx.source == "fetch" else None, kh or "-", vh or "-"))
    out["records"] = records
    return out


# ---------------------------------------------------------------------------------------------
# diffs


def _short(v: Any) -> Any:
    if isinstance(v, (dict, list)):
        text = json.dumps(v, sort_keys=True, separators=(",", ":"))
        return text if len(text) <= _VALUE_TEXT_LIMIT else text[: _VALUE_TEXT_LIMIT - 3] + "..."
    return v


_ABSENT = "<absent>"


def _id_key(a: list, b: list) -> str | None:
    items = a + b
    if not items or not all(isinstance(x, Mapping) for x in items):
        return None
    for k in _ID_KEYS:
        if (
            all(k in x and isinstance(x[k], (str, int)) for x in items)
            and len({x[k] for x in a}) == len(a)
            and len({x[k] for x in b}) == len(b)
        ):
            return k
    return None


def diff_values(a: Any, b: Any, path: str = "", *, common_only: bool = False) -> list[tuple]:
    """(path, baseline, candidate) for every leaf that differs; lists of structs by their id."""
    out: list[tuple] = []
    _diff(a, b, path, common_only, out)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _diff(a: Any, b: Any, path: str, common: bool, out: list) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in list(a) + [k for k in b if k not in a]:
            if k in a and k in b:
                _diff(a[k], b[k], _join(path, k), common, out)
            elif not common:
                out.append((_join(path, k), _short(a.get(k, _ABSENT)), _short(b.get(k, _ABSENT))))
        return
    if isinstance(a, list) and isinstance(b, list):
        key = _id_key(a, b)
        if key is not None:
            am = {x[key]: x for x in a}
            bm = {x[key]: x for x in b}
            for k in list(am) + [k for k in bm if k not in am]:
                p = f"{path}[{k}]"
                if k in am and k in bm:
                    _diff(am[k], bm[k], p, common, out)
                else:
                    out.append((p, _short(am.get(k, _ABSENT)), _short(bm.get(k, _ABSENT))))
            return
        for i in range(max(len(a), len(b))):
            p = f"{path}[#{i}]"
            if i < len(a) and i < len(b):
                _diff(a[i], b[i], p, common, out)
            else:
                left = a[i] if i < len(a) else _ABSENT
                right = b[i] if i < len(b) else _ABSENT
                out.append((p, _short(left), _short(right)))
        return
    if a != b or type(a) is not type(b):
        out.append((path, _short(a), _short(b)))


def _error_codes(body: Any, path: str = "", out: dict | None = None) -> dict[str, int]:
    """path -> error code of every `error_code` field in a response body."""
    out = {} if out is None else out
    if isinstance(body, Mapping):
        for k, v in body.items():
            p = _join(path, k)
            if k == "error_code" and isinstance(v, int):
                out[p] = v
            elif isinstance(v, (Mapping, list)):
                _error_codes(v, p, out)
    elif isinstance(body, list):
        key = _id_key(body, [])
        for i, x in enumerate(body):
            seg = f"[{x[key]}]" if key else f"[#{i}]"
            _error_codes(x, path + seg, out)
    return out


class _Collector:
    """Groups equal differences and counts them."""

    def __init__(self) -> None:
        self.groups: dict[tuple, Difference] = {}

    def add(self, kind: str, *, count: int = 1, **kw: Any) -> None:
        d = Difference(kind=kind, functional=kind in FUNCTIONAL_KINDS, **kw)
        key = (
            d.kind,
            d.api_key,
            d.api_name,
            d.client_id,
            d.baseline_version,
            d.candidate_version,
            d.path,
            json.dumps(d.baseline, sort_keys=True, default=str),
            json.dumps(d.candidate, sort_keys=True, default=str),
        )
        hit = self.groups.get(key)
        if hit is None:
            d.count = count
            self.groups[key] = d
        else:
            hit.count += count

    def result(self) -> list[Difference]:
        order = {k: i for i, k in enumerate(FUNCTIONAL_KINDS + INFORMATIONAL_KINDS)}
        return sorted(
            self.groups.values(),
            key=lambda d: (
                order.get(d.kind, 99),
                d.api_key if d.api_key is not None else -1,
                d.api_name or "",
                d.client_id or "",
                d.path,
            ),
        )


# ---------------------------------------------------------------------------------------------
# alignment


def _ratio(a: Conn, b: Conn) -> float:
    ta, tb = a.tokens[:_WINDOW], b.tokens[:_WINDOW]  # bound the quadratic worst case
    sm = SequenceMatcher(None, ta, tb, autojunk=False)
    if sm.real_quick_ratio() == 0:
        return 0.0
    return sm.ratio()


def _greedy(
    base: list[Conn], cand: list[Conn], threshold: float
) -> tuple[list[tuple[Conn, Conn]], list[Conn], list[Conn]]:
    scored = []
    for i, a in enumerate(base):
        for j, b in enumerate(cand):
            r = _ratio(a, b)
            if r >= threshold:
                scored.append((-r, abs(a.rank - b.rank), i, j))
    scored.sort()
    used_a, used_b, pairs = set(), set(), []
    for _, _, i, j in scored:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            pairs.append((base[i], cand[j]))
    rest_a = [a for i, a in enumerate(base) if i not in used_a]
    rest_b = [b for j, b in enumerate(cand) if j not in used_b]
    return pairs, rest_a, rest_b


def match_connections(
    base: Sequence[Conn], cand: Sequence[Conn]
) -> tuple[list[tuple[Conn, Conn]], list[Conn], list[Conn]]:
    """(matched pairs, baseline-only, candidate-only) connections; see the module docstring."""
    by_a: dict[str, list[Conn]] = defaultdict(list)
    by_b: dict[str, list[Conn]] = defaultdict(list)
    for c in base:
        by_a[c.client_id].append(c)
    for c in cand:
        by_b[c.client_id].append(c)
    pairs: list[tuple[Conn, Conn]] = []
    left_a: list[Conn] = []
    left_b: list[Conn] = []
    for cid in list(by_a) + [k for k in by_b if k not in by_a]:
        a, b = by_a.get(cid, []), by_b.get(cid, [])
        if len(a) * len(b) <= _PAIR_MATRIX_LIMIT:
            p, ra, rb = _greedy(a, b, 0.0)
        else:
            n = min(len(a), len(b))
            p, ra, rb = list(zip(a[:n], b[:n], strict=True)), a[n:], b[n:]
        pairs += p
        left_a += ra
        left_b += rb
    if left_a and left_b and len(left_a) * len(left_b) <= _PAIR_MATRIX_LIMIT:
        p, left_a, left_b = _greedy(left_a, left_b, 0.5)
        pairs += p
    return pairs, left_a, left_b


def opcodes(a: Sequence[Any], b: Sequence[Any]) -> list[tuple[str, int, int, int, int]]:
    """SequenceMatcher opcodes, kept near-linear on long sequences.

    The common prefix and suffix are matched directly. SequenceMatcher is quadratic on sequences
    with many repeated tokens (a long run of polls), so the middle is aligned in windows of
    `_WINDOW` requests, each starting after the last match of the one before: exact unless a
    block of more than a window's length was added or removed.
    """
    n = min(len(a), len(b))
    pre = 0
    while pre < n and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < n - pre and a[len(a) - 1 - suf] == b[len(b) - 1 - suf]:
        suf += 1
    ops: list[tuple[str, int, int, int, int]] = []
    if pre:
        ops.append(("equal", 0, pre, 0, pre))
    i, j = pre, pre
    end_a, end_b = len(a) - suf, len(b) - suf
    while i < end_a or j < end_b:
        i2, j2 = min(end_a, i + _WINDOW), min(end_b, j + _WINDOW)
        sm = SequenceMatcher(None, a[i:i2], b[j:j2], autojunk=False)
        last = (i2 - i, j2 - j)  # the final window: take everything
        if i2 < end_a or j2 < end_b:
            # keep up to the last match; the rest is aligned again in the next window, so a
            # shift (an added request) carries over instead of breaking at the window edge
            blocks = [blk for blk in sm.get_matching_blocks() if blk.size]
            if blocks:
                last = (blocks[-1].a + blocks[-1].size, blocks[-1].b + blocks[-1].size)
        for tag, x1, x2, y1, y2 in sm.get_opcodes():
            if x1 >= last[0] and y1 >= last[1]:
                break
            ops.append((tag, i + x1, i + min(x2, last[0]), j + y1, j + min(y2, last[1])))
        i, j = i + last[0], j + last[1]
    if suf:
        ops.append(("equal", len(a) - suf, len(a), len(b) - suf, len(b)))
    return ops


def _partitions(value: Any, topic: Any = None, out: set | None = None) -> set:
    """The (topic, partition) pairs a request names, wherever its schema keeps them."""
    out = set() if out is None else out
    if isinstance(value, dict):
        topic = next((value[k] for k in _TOPIC_KEYS if isinstance(value.get(k), str)), topic)
        part = next((value[k] for k in _PARTITION_KEYS if isinstance(value.get(k), int)), None)
        if part is not None and not isinstance(part, bool):
            out.add((topic, part))
        for child in value.values():
            if isinstance(child, dict | list):
                _partitions(child, topic, out)
    elif isinstance(value, list):
        for child in value:
            _partitions(child, topic, out)
    return out


def _identity(e: Exchange) -> tuple:
    """What a request is about: its API and the topic-partitions it names."""
    return (e.api_key, e.topics, tuple(sorted(_partitions(e.request), key=repr)))


def _pair_by(
    ea: list[Exchange], eb: list[Exchange], key: Any, matched: list
) -> tuple[list[Exchange], list[Exchange]]:
    """Pair each request with the first unpaired one of equal `key` on the other side.

    Order between different keys does not matter (requests about different partitions may be
    sent in any order); among requests of one key, the n-th pairs with the n-th.
    """
    queues: dict[Any, list[Exchange]] = {}
    for e in eb:
        queues.setdefault(key(e), []).append(e)
    rest_a = []
    for e in ea:
        queue = queues.get(key(e))
        if queue:
            matched.append((e, queue.pop(0)))
        else:
            rest_a.append(e)
    paired = {id(y) for _, y in matched}
    return rest_a, [e for e in eb if id(e) not in paired]


def _align(a: Conn, b: Conn) -> tuple[list[tuple[Exchange, Exchange]], list, list]:
    """(matched, removed, added) exchanges of two matched connections.

    After the sequence alignment, the requests left over are paired in three passes: the same
    normalised request sent at another point (a client may send one Produce per partition in
    any order), then requests about the same topic-partitions, then the same API.
    """
    matched: list[tuple[Exchange, Exchange]] = []
    left_a: list[Exchange] = []
    left_b: list[Exchange] = []
    ea, eb = a.exchanges, b.exchanges
    for tag, i1, i2, j1, j2 in opcodes(a.tokens, b.tokens):
        if tag == "equal":
            matched += zip(ea[i1:i2], eb[j1:j2], strict=True)
        else:
            left_a += ea[i1:i2]
            left_b += eb[j1:j2]
    for key in (lambda e: e.token, _identity, lambda e: e.api_key):
        left_a, left_b = _pair_by(left_a, left_b, key, matched)
    return matched, left_a, left_b


# ---------------------------------------------------------------------------------------------
# the comparison


def _common(e: Exchange) -> dict[str, Any]:
    return {"api_key": e.api_key, "api_name": e.api_name, "client_id": e.client_id}


def _compare_exchange(x: Exchange, y: Exchange, out: _Collector) -> None:
    versions = {"baseline_version": x.api_version, "candidate_version": y.api_version}
    if x.api_version != y.api_version:
        out.add("version", **_common(y), **versions)
    if x.token != y.token:
        if x.norm is None or y.norm is None:
            out.add(
                "changed",
                **_common(y),
                **versions,
                path="decode_status",
                baseline=x.status,
                candidate=y.status,
            )
        else:
            common = x.api_version != y.api_version
            for path, bv, cv in diff_values(x.norm, y.norm, common_only=common):
                out.add("changed", **_common(y), **versions, path=path, baseline=bv, candidate=cv)
    if (x.response_status is None) != (y.response_status is None):
        out.add(
            "changed",
            **_common(y),
            **versions,
            path="response",
            baseline="answered" if x.response_status else "no_response",
            candidate="answered" if y.response_status else "no_response",
        )
    if x.response is not None or y.response is not None:
        ca, cb = _error_codes(x.response), _error_codes(y.response)
        for p in list(ca) + [p for p in cb if p not in ca]:
            in_a, in_b = p in ca, p in cb
            if (in_a and in_b and ca[p] != cb[p]) or (
                # a non-zero error field only one response has (say, one more partition);
                # across versions a field one version lacks is the version difference
                in_a != in_b and x.api_version == y.api_version and (ca.get(p) or cb.get(p))
            ):
                out.add(
                    "error_code",
                    **_common(y),
                    **versions,
                    path=p,
                    baseline=ca.get(p),
                    candidate=cb.get(p),
                )
    elif x.response_error != y.response_error:
        out.add(
            "error_code",
            **_common(y),
            **versions,
            path="error_code",
            baseline=x.response_error,
            candidate=y.response_error,
        )


def _summary(e: Exchange) -> str:
    return ",".join(e.topics) if e.topics else ""


def _nonzero_errors(cap: Capture) -> Counter:
    out: Counter = Counter()
    for c in cap.conns:
        for e in c.exchanges:
            codes = set(_error_codes(e.response).values()) if e.response is not None else set()
            if e.response_error:
                codes.add(e.response_error)
            for code in codes - {0}:
                out[(e.api_key, e.api_name, e.client_id, code)] += 1
    return out


def _counts(cap: Capture) -> Counter:
    out: Counter = Counter()
    for r in cap.pdus:
        if r["api_key"] is None or r["direction"] not in ("request", "response"):
            continue
        for t in r["topics"] or ("",):
            key = (r["api_name"] or str(r["api_key"]), r["api_version"], r["direction"])
            out[(*key, r["client_id"] or "", t)] += 1
    return out


def _mix(base: Capture, cand: Capture) -> list[dict[str, Any]]:
    sides = []
    for cap in (base, cand):
        sides.append(
            Counter(
                r["api_name"] or str(r["api_key"])
                for r in cap.pdus
                if r["direction"] == "request" and r["api_key"] is not None
            )
        )
    apis = sorted(set(sides[0]) | set(sides[1]), key=lambda a: (-(sides[0][a] + sides[1][a]), a))
    return [{"api": a, "baseline": sides[0][a], "candidate": sides[1][a]} for a in apis]


def _percentile(sorted_vals: list[float], q: float) -> float | None:
    if not sorted_vals:
        return None
    pos = (len(sorted_vals) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def _rtt(cap: Capture) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for r in cap.pairs:
        if r["rtt_ms"] is not None and r["status"] == "answered":
            out[r["api_name"] or str(r["api_key"])].append(float(r["rtt_ms"]))
    for v in out.values():
        v.sort()
    return out


def _health(cap: Capture) -> dict[str, int]:
    out: Counter = Counter()
    for r in cap.pdus:
        out[f"pdus {r['direction'] or '-'} {r['decode_status']}"] += 1
        if r["decode_status"] == "gap":
            out["gap bytes"] += r.get("length") or 0
    for r in cap.pairs:
        out[f"pairs {r['status']}"] += 1
    out["connections"] = len(cap.connections)
    out["missed bytes"] = sum(c.get("missed_bytes") or 0 for c in cap.connections)
    return dict(out)


def _record_stats(cap: Capture) -> dict[tuple, dict[str, Any]]:
    out = {}
    for key, recs in cap.records.items():
        if key[0] == "fetch":  # the same record fetched twice counts once
            recs = sorted({r[0]: r for r in recs}.values(), key=lambda r: r[0] or 0)
        keys = hashlib.sha256("\n".join(r[1] for r in recs).encode()).hexdigest()[:16]
        values = hashlib.sha256("\n".join(r[2] for r in recs).encode()).hexdigest()[:16]
        out[key] = {"record_count": len(recs), "key_hash": keys, "value_hash": values}
    return out


def _describe(cap: Capture) -> dict[str, Any]:
    return {
        "dir": cap.path,
        "capture": cap.label,
        "pdus": len(cap.pdus),
        "pairs": len(cap.pairs),
        "connections": len(cap.connections),
        "client_connections": len(cap.conns),
    }


def compare(baseline_dir: str | os.PathLike, candidate_dir: str | os.PathLike) -> Report:
    """Compare two decoded captures; raises `CompareInputError` when a table is missing."""
    base = load_capture(baseline_dir)
    cand = load_capture(candidate_dir)
    out = _Collector()

    pairs, only_a, only_b = match_connections(base.conns, cand.conns)
    n_matched = n_removed = n_added = 0
    for a, b in pairs:
        if a.client_id != b.client_id:
            out.add(
                "changed",
                client_id=b.client_id,
                path="client_id",
                baseline=a.client_id,
                candidate=b.client_id,
            )
        matched, removed, added = _align(a, b)
        n_matched += len(matched)
        for x, y in matched:
            _compare_exchange(x, y, out)
        for e in removed:
            out.add("removed", **_common(e), baseline_version=e.api_version, baseline=_summary(e))
        for e in added:
            out.add("added", **_common(e), candidate_version=e.api_version, candidate=_summary(e))
        n_removed += len(removed)
        n_added += len(added)
    for c in only_a:
        for e in c.exchanges:
            out.add("removed", **_common(e), baseline_version=e.api_version, baseline=_summary(e))
        n_removed += len(c.exchanges)
    for c in only_b:
        for e in c.exchanges:
            out.add("added", **_common(e), candidate_version=e.api_version, candidate=_summary(e))
        n_added += len(c.exchanges)

    # error codes the candidate shows that the baseline never did (for that API and client)
    reported = {
        (d.api_key, d.client_id, d.candidate) for d in out.groups.values() if d.kind == "error_code"
    }
    errs_a, errs_b = _nonzero_errors(base), _nonzero_errors(cand)
    seen_a = {(k[0], k[2], k[3]) for k in errs_a}
    for (key, name, cid, code), n in errs_b.items():
        if (key, cid, code) not in seen_a and (key, cid, code) not in reported:
            out.add(
                "error_code",
                api_key=key,
                api_name=name,
                client_id=cid,
                path="(new)",
                candidate=code,
                count=n,
            )

    # counts by (api, direction, client, topic); the version split is the `version` kind's job
    counts_a, counts_b = _counts(base), _counts(cand)
    counts_rows = [
        {
            "api": k[0],
            "version": k[1],
            "direction": k[2],
            "client_id": k[3],
            "topic": k[4],
            "baseline": counts_a.get(k, 0),
            "candidate": counts_b.get(k, 0),
        }
        for k in sorted(set(counts_a) | set(counts_b), key=lambda k: tuple(map(str, k)))
    ]
    agg_a: Counter = Counter()
    agg_b: Counter = Counter()
    for k, n in counts_a.items():
        agg_a[(k[0], k[2], k[3], k[4])] += n
    for k, n in counts_b.items():
        agg_b[(k[0], k[2], k[3], k[4])] += n
    for k in sorted(set(agg_a) | set(agg_b)):
        if agg_a.get(k, 0) != agg_b.get(k, 0):
            out.add(
                "count",
                api_name=k[0],
                client_id=k[2],
                path=f"{k[1]} topic={k[3] or '-'}",
                baseline=agg_a.get(k, 0),
                candidate=agg_b.get(k, 0),
                count=abs(agg_a.get(k, 0) - agg_b.get(k, 0)),
            )

    # per topic-partition records: produced (request order), fetched (by offset)
    rec_a, rec_b = _record_stats(base), _record_stats(cand)
    record_rows = []
    for k in sorted(set(rec_a) | set(rec_b), key=lambda k: (k[0], k[1], k[2] or -1)):
        ra, rb = rec_a.get(k, {}), rec_b.get(k, {})
        record_rows.append(
            {"source": k[0], "topic": k[1], "partition": k[2], "baseline": ra, "candidate": rb}
        )
        for f in ("record_count", "key_hash", "value_hash"):
            if ra.get(f) != rb.get(f):
                out.add(
                    "records",
                    api_key=0 if k[0] == "produce" else 1,
                    api_name="Produce" if k[0] == "produce" else "Fetch",
                    path=f"{k[0]} {k[1]}-{k[2]} {f}",
                    baseline=ra.get(f),
                    candidate=rb.get(f),
                )

    # RTT per API (informational): flagged when p95 moved by 2x and at least 1 ms
    rtt_a, rtt_b = _rtt(base), _rtt(cand)
    rtt_rows = []
    for api in sorted(set(rtt_a) | set(rtt_b)):
        row: dict[str, Any] = {"api": api}
        for side, src in (("baseline", rtt_a), ("candidate", rtt_b)):
            vals = src.get(api, [])
            row[side] = {
                "n": len(vals),
                **{f"p{q}": _percentile(vals, q / 100) for q in (50, 95, 99)},
            }
        rtt_rows.append(row)
        pa_, pb_ = row["baseline"]["p95"], row["candidate"]["p95"]
        if pa_ is not None and pb_ is not None:
            hi, lo = max(pa_, pb_), min(pa_, pb_)
            if hi - lo >= 1.0 and hi >= 2 * lo:
                out.add(
                    "rtt",
                    api_name=api,
                    path="p95_ms",
                    baseline=round(pa_, 3),
                    candidate=round(pb_, 3),
                )

    # decode health, apart from behaviour
    ha, hb = _health(base), _health(cand)
    health_rows = [
        {"metric": k, "baseline": ha.get(k, 0), "candidate": hb.get(k, 0)}
        for k in sorted(set(ha) | set(hb))
    ]
    for r in health_rows:
        if r["baseline"] != r["candidate"] and r["metric"] not in ("connections",):
            if r["metric"].startswith("pairs answered") or r["metric"].endswith(" ok"):
                continue  # healthy traffic volume: a functional `count`/`added` matter
            out.add("health", path=r["metric"], baseline=r["baseline"], candidate=r["candidate"])

    return Report(
        baseline=_describe(base),
        candidate=_describe(cand),
        differences=out.result(),
        counts=counts_rows,
        records=record_rows,
        rtt=rtt_rows,
        health=health_rows,
        alignment={
            "rule": "per client id: best SequenceMatcher ratio over (api, normalised request)",
            "matched_connections": len(pairs),
            "baseline_only_connections": len(only_a),
            "candidate_only_connections": len(only_b),
            "matched_requests": n_matched,
            "removed_requests": n_removed,
            "added_requests": n_added,
        },
        rtt_samples={"baseline": dict(rtt_a), "candidate": dict(rtt_b)},
        mix=_mix(base, cand),
    )


# ---------------------------------------------------------------------------------------------
# the command


def parse_fail_on(text: str | None) -> set[str]:
    """`--fail-on` value as a set of kinds; `functional` expands; ValueError on unknown kinds."""
    if not text:
        return set()
    kinds: set[str] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part == "functional":
            kinds.update(FUNCTIONAL_KINDS)
        elif part == "all":
            kinds.update(FUNCTIONAL_KINDS + INFORMATIONAL_KINDS)
        elif part in FUNCTIONAL_KINDS or part in INFORMATIONAL_KINDS:
            kinds.add(part)
        else:
            known = ", ".join(FUNCTIONAL_KINDS + INFORMATIONAL_KINDS)
            raise ValueError(f"unknown difference kind {part!r} (known: functional, all, {known})")
    return kinds


def write_report(report: Report, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write report.md, report.html, the PNG plots and diff.json; returns their paths."""
    from captures.report import render

    return render(report, Path(out_dir))


def main_compare(argv: Sequence[str] | None = None) -> int:
    """`compare BASELINE_DIR CANDIDATE_DIR --out REPORT_DIR [--fail-on KINDS]` (argv after it)."""
    p = argparse.ArgumentParser(
        prog="kipwire-capture compare",
        description="Compare two decoded captures for regressions.",
    )
    p.add_argument("baseline", help="decoded capture directory (with pdus/, pairs/, connections/)")
    p.add_argument("candidate", help="decoded capture directory to compare with the baseline")
    p.add_argument("--out", required=True, help="report directory (created)")
    p.add_argument(
        "--fail-on",
        default="",
        help="exit 1 when a difference of these kinds is found: a comma list of "
        f"{', '.join(FUNCTIONAL_KINDS + INFORMATIONAL_KINDS)}, or `functional`",
    )
    try:
        args = p.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return 2 if exc.code else 0
    try:
        fail_on = parse_fail_on(args.fail_on)
    except ValueError as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    try:
        report = compare(args.baseline, args.candidate)
    except CompareInputError as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    paths = write_report(report, args.out)
    kinds = report.kinds()
    summary = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "no differences"
    print(f"{report.baseline['capture']} -> {report.candidate['capture']}: {summary}")
    print(f"report: {paths['md']}")
    hits = sorted(k for k in kinds if k in fail_on)
    if hits:
        print(f"failing: differences of kind {', '.join(hits)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main_compare())
