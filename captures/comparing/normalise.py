"""Normalisation of request and response bodies before captures are compared.

`VOLATILE` is the table of fields whose values differ from run to run (ids, epochs, ports,
timestamps) and the rule that replaces them by placeholders; `normalise()` applies it to a body
and summarises each `records` field as per-batch digests of keys, values and headers, collecting
per topic-partition record digests on the capture when walking Produce and Fetch bodies.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .model import Capture
from .rules import IGNORE, SEMANTIC, Rules

__all__ = [
    "PARTITION_KEYS",
    "TOPIC_KEYS",
    "VOLATILE",
    "ZERO_UUID",
    "WalkContext",
    "normalise",
]

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
    "replica_epoch": (
        "a follower's broker epoch in its Fetch (brokers register in any order)",
        "sentinel",
    ),
    "leader_epoch": ("partition leader epoch", "always"),
    "current_leader_epoch": ("partition leader epoch the client knows", "always"),
    "last_fetched_epoch": ("leader epoch of the last fetched batch", "always"),
    "fetch_offset": ("where a fetch starts: follows what was written before", "always"),
    "log_start_offset": ("first offset of the log", "always"),
    "high_watermark": ("partition high watermark", "always"),
    "last_stable_offset": ("partition last stable offset", "always"),
    "base_offset": ("offset the broker gave a batch", "always"),
    "auth_bytes": ("SASL exchange bytes (nonces)", "always"),
    "session_lifetime_ms": ("SASL session lifetime", "sentinel"),
}
_TIMESTAMP_SUFFIXES = ("_timestamp", "_timestamp_ms")
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
# where a body names its topic and partition (normalise's record digests, request identity)
TOPIC_KEYS = ("name", "topic", "topic_id")
PARTITION_KEYS = ("partition", "partition_index", "index")


@dataclass(slots=True)
class WalkContext:
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
        or value == ZERO_UUID
        or (isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0)
    ):
        return value
    if isinstance(value, list):
        return [_volatile(key, v, rule, topic_names) for v in value]
    return f"<{key}>"


def normalise(
    value: Any,
    topic_names: Mapping[str, str] | None = None,
    ctx: Any = None,
    *,
    rules: Rules | None = None,
    path: str = "",
) -> Any:
    """A body with volatile fields (`VOLATILE`, `rules`) replaced and `records` summarised.

    `path` names the body for the rules (its API name); a rule that makes a field semantic keeps
    its value, volatile replaces it, ignore leaves it out.
    """
    names = topic_names or {}
    if ctx is None:
        ctx = WalkContext(None, None)
    if isinstance(value, list):
        return [normalise(v, names, ctx, rules=rules, path=path) for v in value]
    if not isinstance(value, Mapping):
        return value
    topic, part = ctx.topic, ctx.partition
    for k in TOPIC_KEYS:
        v = value.get(k)
        if isinstance(v, str) and "records" not in value:
            ctx.topic = names.get(v, v) if k == "topic_id" else v
            break
    for k in PARTITION_KEYS:
        v = value.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            ctx.partition = v
            break
    out = {}
    for k, v in value.items():
        rule = _rule(k)
        child = ""
        if rules:
            child = f"{path}.{k}" if path else k
            cls = rules.classify(child)
            if cls == IGNORE:
                continue
            if cls == SEMANTIC:
                rule = None
            elif cls is not None:  # volatile
                rule = rule or "sentinel"
        if rule is not None:
            out[k] = _volatile(k, v, rule, names)
        elif k == "records" and isinstance(v, (str, list)):
            out[k] = _records(v, ctx)
        else:
            out[k] = normalise(v, names, ctx, rules=rules, path=child)
    ctx.topic, ctx.partition = topic, part
    return out


def _h(raw: bytes | None) -> str | None:
    return None if raw is None else "sha256:" + hashlib.sha256(raw).hexdigest()[:16]


def _records(value: str | list, ctx: WalkContext) -> Any:
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
            from kipwire.codec.records import iter_batches

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


def _batch(head: Mapping[str, Any], recs: list[tuple], ctx: WalkContext) -> dict[str, Any]:
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
