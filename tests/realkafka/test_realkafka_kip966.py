"""KIP-966 on a real Kafka 4.4.0 cluster: ISR, ELR, LastKnownElr and leader after each step of
`kip966_story` (clean shutdowns, a hard kill, restarts), as kip-rules.md predicts them.

data/kip966_kafka_4_4.json records what real Kafka 4.4.0 showed, and kip966_kafka_4_1.json what
Kafka 4.1.2 showed (the mock's KAFKA_4_1 preset), for the controller's tests to cite; these tests
and test_realkafka_metadata_log keep the 4.4.0 file true, and hold the 4.1.2 file to it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kip966_story import EXPECTED, PartitionView

DATA = Path(__file__).parent / "data"
RECORDED = {"4.4.0": DATA / "kip966_kafka_4_4.json", "4.1.2": DATA / "kip966_kafka_4_1.json"}


def test_story_follows_kip_rules(kip966_story: list[tuple[str, PartitionView | None]]) -> None:
    assert kip966_story == [(name, want) for name, _what, want in EXPECTED]


@pytest.mark.parametrize("release", sorted(RECORDED))
def test_recorded_steps_are_the_expected_story(release: str) -> None:
    recorded = json.loads(RECORDED[release].read_text())
    assert recorded["kafka_version"] == release
    assert recorded["steps"] == [
        {"step": name, "action": what, "after": want.as_json()} for name, what, want in EXPECTED
    ]


def test_kafka_4_4_writes_the_records_4_1_wrote_with_the_isr_in_broker_order() -> None:
    # ELR did not change from 4.1 to 4.4: the same records, versions and fields. One thing did:
    # a replica that rejoins the ISR was appended to it by Kafka 4.1's leader ([2, 1]), while
    # Kafka 4.4's leader asks for the ISR in ascending broker id order ([1, 2]) in AlterPartition
    old, new = (json.loads(RECORDED[r].read_text())["records"] for r in ("4.1.2", "4.4.0"))
    assert len(old) == len(new)
    isr_order = []
    for was, now in zip(old, new, strict=True):
        if was != now:
            isr_order.append((was["data"].pop("isr"), now["data"].pop("isr")))
            assert was == now
    assert isr_order == [([2, 1], [1, 2]), ([2, 1, 3], [1, 2, 3]), ([2, 1], [1, 2])]
    assert all(now == sorted(now) for _was, now in isr_order)


def test_elr_holds_only_replicas_out_of_the_isr() -> None:
    # KIP-966's invariant, on every state of the story: ELR and ISR never share a replica, and a
    # leader, when there is one, is in the ISR
    for _name, _what, state in EXPECTED:
        assert not state.isr & state.elr
        assert state.leader == -1 or state.leader in state.isr
