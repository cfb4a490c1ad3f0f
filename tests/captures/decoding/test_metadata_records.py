"""captures.decoding.metadata_records: the controller's partition records in metadata fetches."""

from __future__ import annotations

import base64
import uuid

from kipwire.captures.decoding.metadata_records import (
    METADATA_TOPIC_ID,
    metadata_differences,
    partition_records,
)
from kipwire.codec import encode_record

TOPIC = uuid.UUID("5f8a3c1e-2b4d-4e6f-9a0b-1c2d3e4f5a6b")


def _value(name: str, version: int, body: dict) -> str:
    return base64.b64encode(encode_record(name, version, body)).decode()


def _fetch(records: list[tuple[int, str]], topic: dict) -> dict:
    """A decoded Fetch response body holding `records` of `topic`."""
    batch = {"records": [{"offset": o, "key": None, "value": v} for o, v in records]}
    return {"responses": [{**topic, "partitions": [{"records": [batch]}]}]}


def _capture(*fetches: dict) -> list[dict]:
    """The Fetch response bodies of a capture, in capture order."""
    return list(fetches)


def _change(offset: int, **fields) -> tuple[int, str]:
    body = {"partition_id": 0, "topic_id": TOPIC, **fields}
    return offset, _value("PartitionChangeRecord", 2, body)


def test_metadata_topic_id_is_kafkas_fixed_one_as_json_writes_it():
    assert METADATA_TOPIC_ID == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_partition_records_once_per_offset_in_order_with_elr_fields():
    meta = {"topic_id": METADATA_TOPIC_ID}
    later = [_change(7, isr=[], leader=-1, eligible_leader_replicas=[1, 3], last_known_elr=[1])]
    earlier = [
        (5, _value("FeatureLevelRecord", 0, {"name": "x", "feature_level": 1})),
        _change(6, isr=[1], eligible_leader_replicas=[3]),
    ]
    # two brokers fetched the same offsets; the later fetch came first on the wire
    cap = _capture(_fetch(later, meta), _fetch(earlier + later, meta))
    rows = partition_records(cap)
    assert [r["offset"] for r in rows] == [6, 7]
    assert rows[0] == {
        "offset": 6,
        "record": "PartitionChangeRecord",
        "partition": 0,
        "leader": None,  # -2: the leader did not change
        "isr": [1],
        "eligible_leader_replicas": [3],
        "last_known_elr": None,
    }
    assert rows[1]["leader"] == -1 and rows[1]["last_known_elr"] == [1]


def test_fetches_of_other_topics_are_not_metadata():
    other = {"topic": "orders", "topic_id": base64.b64encode(TOPIC.bytes).decode()}
    assert partition_records(_capture(_fetch([_change(1, isr=[1])], other))) == []
    named = {"topic": "__cluster_metadata"}
    assert len(partition_records(_capture(_fetch([_change(1, isr=[1])], named)))) == 1


def test_differences_name_the_field_whose_history_differs():
    meta = {"topic_id": METADATA_TOPIC_ID}
    elr_on = partition_records(
        _capture(_fetch([_change(1, isr=[1], eligible_leader_replicas=[3])], meta))
    )
    elr_off = partition_records(_capture(_fetch([_change(1, isr=[1])], meta)))
    assert metadata_differences(elr_on, elr_off) == [
        ("PartitionChangeRecord.eligible_leader_replicas", [[3]], [])
    ]
    assert metadata_differences(elr_on, elr_on) == []
