"""The controller's partition records as brokers fetched them from `__cluster_metadata`.

KRaft brokers replicate the metadata log with Fetch; a capture of a cluster's internal
connections therefore holds every PartitionRecord, PartitionChangeRecord and ClearElrRecord the
controller wrote, with KIP-966's ELR fields. `partition_records` lists them once per offset from
the decoded Fetch response bodies (as the `pdus` table's `body_json` holds them), and
`metadata_differences` says where two captures' controllers decided differently.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["FIELDS", "metadata_differences", "partition_records"]

METADATA_TOPIC = "__cluster_metadata"
# Kafka's fixed id of the metadata topic (Uuid.METADATA_TOPIC_ID), as codec.to_json writes uuids
METADATA_TOPIC_ID = base64.urlsafe_b64encode((1).to_bytes(16, "big")).decode().rstrip("=")
RECORDS = ("PartitionRecord", "PartitionChangeRecord", "ClearElrRecord")
#: The fields of a partition record the report shows, in its column order.
FIELDS = ("leader", "isr", "eligible_leader_replicas", "last_known_elr")
_NO_CHANGE = -2  # PartitionChangeRecord's leader default: the leader did not change


def _is_metadata(topic: Mapping[str, Any]) -> bool:
    return topic.get("topic") == METADATA_TOPIC or topic.get("topic_id") == METADATA_TOPIC_ID


def _fetched(fetch_responses: Iterable[Any]) -> Iterable[tuple[int, bytes]]:
    """(offset, value) of every record of the metadata topic in decoded Fetch responses."""
    for response in fetch_responses:
        if not isinstance(response, Mapping):
            continue
        for topic in response.get("responses") or ():
            if not isinstance(topic, Mapping) or not _is_metadata(topic):
                continue
            for part in topic.get("partitions") or ():
                for batch in part.get("records") or ():
                    if not isinstance(batch, Mapping):
                        continue
                    for r in batch.get("records") or ():
                        try:
                            value = base64.b64decode(r.get("value") or "", validate=True)
                        except (binascii.Error, ValueError):
                            continue
                        yield r.get("offset"), value


def partition_records(fetch_responses: Iterable[Any]) -> list[dict[str, Any]]:
    """The partition records in Fetch response bodies, in offset order, each once, with FIELDS."""
    from kipwire.codec import DecodeError, decode_record

    seen: dict[int, dict[str, Any]] = {}
    for offset, value in _fetched(fetch_responses):
        if offset is None or offset in seen:
            continue
        try:
            name, _version, body = decode_record(value)
        except DecodeError:
            continue
        if name not in RECORDS:
            continue
        row = {"offset": offset, "record": name, "partition": body.get("partition_id")}
        for f in FIELDS:
            v = body.get(f)
            row[f] = list(v) if isinstance(v, list) else v
        if name == "PartitionChangeRecord" and row["leader"] == _NO_CHANGE:
            row["leader"] = None
        seen[offset] = row
    return [seen[k] for k in sorted(seen)]


def _history(rows: list[dict[str, Any]], name: str, f: str) -> list[Any]:
    """The values a record type set for a field, in log order (unset fields left out)."""
    return [r[f] for r in rows if r["record"] == name and r[f] is not None]


def metadata_differences(
    baseline: list[dict[str, Any]], candidate: list[dict[str, Any]]
) -> list[tuple[str, Any, Any]]:
    """(path, baseline, candidate) for each field whose history differs between the captures."""
    out = []
    for name in RECORDS:
        for f in FIELDS:
            a, b = _history(baseline, name, f), _history(candidate, name, f)
            if a != b:
                out.append((f"{name}.{f}", a, b))
    return out
