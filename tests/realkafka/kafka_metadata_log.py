"""Real Kafka's `__cluster_metadata` log read twice: by kipwire.codec and by Kafka's own
`DumpLogSegments --cluster-metadata-decoder`, each into {offset: MetadataEntry}.

The segment files of a running node are copied first, so both readers see the same bytes.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_dist import KAFKA_4_1
from kafka_harness import KafkaCluster

from kipwire.codec import RECORDS, decode_record, encode_record, to_json
from kipwire.codec.records import decode_control, iter_batches


@dataclass(frozen=True)
class MetadataEntry:
    """One record of the metadata log: its type name (Kafka's spelling), version and fields."""

    type: str
    version: int | None
    data: dict[str, Any]


_LINE = re.compile(r"^\| offset: (\d+) .*?(?:payload: |(\w+): )(\{.*\})$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def upper_snake(name: str) -> str:
    """PartitionChangeRecord -> PARTITION_CHANGE_RECORD (how DumpLogSegments names types)."""
    return _CAMEL.sub("_", name).upper()


def snake_keys(value: Any) -> Any:
    """Kafka's camelCase JSON keys as the codec's snake_case, all the way down."""
    if isinstance(value, dict):
        return {_CAMEL.sub("_", k).lower(): snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


def copy_segments(node_log_dir: Path, dest: Path) -> list[Path]:
    """Copy the .log segment files of a metadata log folder; the copies, oldest first."""
    dest.mkdir(parents=True, exist_ok=True)
    copies = []
    for seg in sorted(node_log_dir.glob("*.log")):
        copies.append(Path(shutil.copyfile(seg, dest / seg.name)))
    return copies


def read_with_codec(segment: Path) -> dict[int, MetadataEntry]:
    """Every record of the segment's whole batches, decoded by kipwire.codec."""
    out: dict[int, MetadataEntry] = {}
    for batch in iter_batches(segment.read_bytes()):
        if batch.truncated:  # a batch still being written when the file was copied
            break
        for record in batch.records:
            if batch.is_control:
                control = decode_control(record)
                name = getattr(control.type, "name", str(control.type))
                out[record.offset] = MetadataEntry(name, None, to_json(control.value))
            else:
                out[record.offset] = decode_entry(record.value)
    return out


def decode_entry(value: bytes) -> MetadataEntry:
    """One framed metadata record (a record's value, or a mock controller's LogEntry.data)."""
    name, version, body = decode_record(value)
    return MetadataEntry(upper_snake(name), version, to_json(body))


_CONTROL_NAMES = {
    "LeaderChange": "LEADER_CHANGE",
    "SnapshotHeader": "SNAPSHOT_HEADER",
    "SnapshotFooter": "SNAPSHOT_FOOTER",
    "KRaftVersion": "KRAFT_VERSION",
    "KRaftVoters": "KRAFT_VOTERS",
}


# the tool's class where it is not org.apache.kafka.tools' (the tools module's Java, since 4.2):
# Kafka 4.1 still had it in core's Scala
_DUMP_LOG_SEGMENTS = {KAFKA_4_1: "kafka.tools.DumpLogSegments"}


def read_with_kafka(cluster: KafkaCluster, segment: Path) -> dict[int, MetadataEntry]:
    """Every record DumpLogSegments --cluster-metadata-decoder prints for the segment."""
    main = _DUMP_LOG_SEGMENTS.get(cluster.dist.version, "org.apache.kafka.tools.DumpLogSegments")
    text = cluster.run_tool(
        main,
        "--cluster-metadata-decoder",
        "--files",
        str(segment),
    )
    out: dict[int, MetadataEntry] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            if line.startswith("|"):
                raise ValueError(f"DumpLogSegments line not understood: {line[:200]}")
            continue
        offset, control, payload = int(m.group(1)), m.group(2), json.loads(m.group(3))
        if control is None:
            out[offset] = MetadataEntry(payload["type"], payload["version"], payload["data"])
        else:
            payload.pop("version", None)
            out[offset] = MetadataEntry(_CONTROL_NAMES.get(control, control), None, payload)
    return out


def differences(kafka: MetadataEntry, ours: MetadataEntry) -> list[str]:
    """Where the codec's reading of a record disagrees with Kafka's (every field Kafka prints)."""
    if (kafka.type, kafka.version) != (ours.type, ours.version):
        return [f"type {kafka.type} v{kafka.version} read as {ours.type} v{ours.version}"]
    problems = []
    printed = snake_keys(kafka.data)
    for key, value in printed.items():
        if key not in ours.data:
            problems.append(f"{key}: missing from the codec's record")
        elif not _same(value, ours.data[key]):
            problems.append(f"{key}: Kafka {value!r}, codec {ours.data[key]!r}")
    if ours.version is not None:
        # Kafka leaves out tagged fields at their default: the codec must read those as default
        defaults = record_defaults(ours.type, ours.version)
        for key, value in ours.data.items():
            if key not in printed and value != defaults.get(key, value):
                problems.append(f"{key}: codec {value!r} where Kafka prints nothing (default)")
    return problems


@functools.cache
def record_defaults(kafka_type: str, version: int) -> dict[str, Any]:
    """Every field of a metadata record type at its schema default, as the codec builds it."""
    name = next(n for n in RECORDS.values() if upper_snake(n) == kafka_type)
    return to_json(decode_record(encode_record(name, version, {}))[2])


def _same(kafka: Any, ours: Any) -> bool:
    # Kafka prints nested structs in full; the codec's dicts may hold more (defaults, tags)
    if isinstance(kafka, dict) and isinstance(ours, dict):
        return all(k in ours and _same(v, ours[k]) for k, v in kafka.items())
    if isinstance(kafka, list) and isinstance(ours, list):
        return len(kafka) == len(ours) and all(map(_same, kafka, ours))
    return kafka == ours


# the records of a partition's story; broker (un)fencing records are left out, because when a
# session times out after a clean shutdown depends on timing, not on the story
_STORY_TYPES = {
    "TOPIC_RECORD",
    "CONFIG_RECORD",
    "CLEAR_ELR_RECORD",
    "PARTITION_RECORD",
    "PARTITION_CHANGE_RECORD",
}
_RANDOM = {"topic_id", "directories", "_unknown_tags"}


def story_records(entries: dict[int, MetadataEntry], topic: str) -> list[dict[str, Any]]:
    """`topic`'s own records from its TopicRecord on, in log order, without random ids."""
    events: list[dict[str, Any]] = []
    for _offset, entry in sorted(entries.items()):
        if not events and not (entry.type == "TOPIC_RECORD" and entry.data["name"] == topic):
            continue
        if entry.type in _STORY_TYPES:
            data = {k: v for k, v in entry.data.items() if k not in _RANDOM}
            events.append({"type": entry.type, "version": entry.version, "data": data})
    return events
