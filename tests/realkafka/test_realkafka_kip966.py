"""KIP-966 on a real Kafka 4.1 cluster: ISR, ELR, LastKnownElr and leader after each step of
`kip966_story` (clean shutdowns, a hard kill, restarts), as kip-rules.md predicts them.

data/kip966_kafka_4_1.json records what real Kafka showed, for the controller's tests to cite;
these tests keep that file true.
"""

from __future__ import annotations

import json
from pathlib import Path

from kip966_story import EXPECTED, PartitionView

RECORDED = Path(__file__).parent / "data" / "kip966_kafka_4_1.json"


def test_story_follows_kip_rules(kip966_story: list[tuple[str, PartitionView | None]]) -> None:
    assert kip966_story == [(name, want) for name, _what, want in EXPECTED]


def test_recorded_steps_are_the_expected_story() -> None:
    recorded = json.loads(RECORDED.read_text())["steps"]
    assert recorded == [
        {"step": name, "action": what, "after": want.as_json()} for name, what, want in EXPECTED
    ]


def test_elr_holds_only_replicas_out_of_the_isr() -> None:
    # KIP-966's invariant, on every state of the story: ELR and ISR never share a replica, and a
    # leader, when there is one, is in the ISR
    for _name, _what, state in EXPECTED:
        assert not state.isr & state.elr
        assert state.leader == -1 or state.leader in state.isr
