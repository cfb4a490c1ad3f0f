"""Real Kafka's `__cluster_metadata` log, after the KIP-966 story, read by kipwire.codec and by
Kafka's DumpLogSegments --cluster-metadata-decoder: every record decodes, and agrees."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from kafka_harness import KafkaCluster
from kafka_metadata_log import (
    MetadataEntry,
    copy_segments,
    differences,
    read_with_codec,
    read_with_kafka,
    story_records,
)
from kip966_story import TOPIC

RECORDED = Path(__file__).parent / "data" / "kip966_kafka_4_4.json"


@pytest.fixture(scope="module")
def readings(
    kafka_elr: KafkaCluster, kip966_story: list, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[dict[int, MetadataEntry], dict[int, MetadataEntry]]]:
    """(Kafka's reading, the codec's reading) of each segment of the controller's metadata log."""
    del kip966_story  # only its records are wanted here
    dest = tmp_path_factory.mktemp("metadata-copy") / "__cluster_metadata-0"
    segments = copy_segments(kafka_elr.nodes[0].metadata_log_dir, dest)
    assert segments, "the controller has no metadata log segment"
    return [(read_with_kafka(kafka_elr, s), read_with_codec(s)) for s in segments]


def test_every_record_decodes_and_matches_dump_log_segments(readings: list) -> None:
    total = 0
    for kafka, ours in readings:
        # DumpLogSegments stops at a batch cut by the copy as the codec does
        assert set(ours) == set(kafka)
        problems = {off: differences(kafka[off], ours[off]) for off in kafka}
        assert {off: p for off, p in problems.items() if p} == {}
        total += len(ours)
    assert total > 50  # bootstrap, registrations, heartbeats' no-ops, the story's records


def test_story_records_are_the_recorded_ones(readings: list) -> None:
    ours: dict[int, MetadataEntry] = {}
    for _kafka, codec in readings:
        ours.update(codec)
    assert story_records(ours, TOPIC) == json.loads(RECORDED.read_text())["records"]


def test_elr_fields_written_during_the_story(readings: list) -> None:
    ours: dict[int, MetadataEntry] = {}
    for _kafka, codec in readings:
        ours.update(codec)
    changes = [
        r["data"] for r in story_records(ours, TOPIC) if r["type"] == "PARTITION_CHANGE_RECORD"
    ]
    elr_writes = [
        (c["isr"], c["leader"], c["eligible_leader_replicas"], c["last_known_elr"])
        for c in changes
        if c["eligible_leader_replicas"] is not None
    ]
    assert elr_writes == [
        ([1], -2, [2], None),  # stop 2: ISR below min ISR, 2 enters the ELR
        ([], -1, [1, 2], [1]),  # kill 1: ISR empty, no leader, last known leader 1
        ([2], 2, [1], []),  # restart 2: elected from the ELR
        (None, -2, [], None),  # restart 1: the unclean path drops it from the ELR
        ([1], 1, [2], None),  # stop 2 again: the leader leaves, 1 leads, 2 enters the ELR
    ]


def test_min_isr_change_clears_the_elr_only_when_the_value_changes(readings: list) -> None:
    ours: dict[int, MetadataEntry] = {}
    for _kafka, codec in readings:
        ours.update(codec)
    configs = [
        (r["type"], r["data"].get("value"))
        for r in story_records(ours, TOPIC)
        if r["type"] in ("CONFIG_RECORD", "CLEAR_ELR_RECORD")
    ]
    # at creation, then the change to 1; setting 2 while it was 2 wrote nothing (kip-rules D.19)
    assert configs == [
        ("CONFIG_RECORD", "2"),
        ("CLEAR_ELR_RECORD", None),
        ("CONFIG_RECORD", "1"),
        ("CLEAR_ELR_RECORD", None),
    ]


def test_unclean_broker_leaves_the_elr_before_it_registers(readings: list) -> None:
    # kip-rules D.18: cleanup records come before the RegisterBrokerRecord of the new incarnation
    ours: dict[int, MetadataEntry] = {}
    for _kafka, codec in readings:
        ours.update(codec)
    ordered = [ours[o] for o in sorted(ours)]
    register_1 = [
        i
        for i, e in enumerate(ordered)
        if e.type == "REGISTER_BROKER_RECORD" and e.data["broker_id"] == 1
    ][-1]
    before = [e for e in ordered[:register_1] if e.type == "PARTITION_CHANGE_RECORD"][-1]
    assert before.data["eligible_leader_replicas"] == []


def test_a_wrong_field_is_caught(readings: list) -> None:
    # the comparison itself must fail on a mismatch: spoil the codec's ELR of a real record
    kafka, ours = readings[0]
    offset = next(
        o
        for o, e in sorted(kafka.items())
        if e.type == "PARTITION_CHANGE_RECORD" and "eligibleLeaderReplicas" in e.data
    )
    spoiled = dataclasses.replace(
        ours[offset], data={**ours[offset].data, "eligible_leader_replicas": [9]}
    )
    assert differences(kafka[offset], spoiled) != []
    silent = dataclasses.replace(ours[offset], data={**ours[offset].data, "replicas": [7]})
    assert differences(kafka[offset], silent) != []
