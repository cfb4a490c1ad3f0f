"""Where the presets differ: the same input gives different records (kip-rules divergence table)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest
from controller_kit import (
    PRESETS,
    call,
    heartbeat,
    names,
    register,
    replay_cluster,
    set_config,
)

from kipwire.codec import ApiKey, ElectionType, ErrorCode
from kipwire.mockbroker.controller import Semantics


def outcome(scenario, semantics: Semantics):
    """The records a scenario appends under a preset, as comparable values."""
    ctl, start = scenario(semantics)
    return [(e.name, sorted((k, repr(v)) for k, v in e.record.items())) for e in ctl.log[start:]]


def min_isr_change(semantics: Semantics):
    ctl = replay_cluster(semantics, isr=[1], elr=[2, 3], min_isr=3)
    start = ctl.end_offset
    set_config(ctl, "min.insync.replicas", "2")
    return ctl, start


def fenced_last_known_leader(semantics: Semantics):
    ctl = replay_cluster(semantics, isr=[], last_known_elr=[1], leader=-1, min_isr=2, fenced=(1, 2))
    start = ctl.end_offset
    heartbeat(ctl, 2)
    return ctl, start


def clean_restart(semantics: Semantics):
    ctl = replay_cluster(semantics, isr=[1, 2], elr=[3], min_isr=3, fenced=(3,))
    start = ctl.end_offset
    register(ctl, 3, generation=1, previous_epoch=103)
    return ctl, start


def test_presets_are_frozen_and_named() -> None:
    assert [s.name for s in PRESETS] == ["KAFKA_3_9", "KAFKA_4_0", "KAFKA_4_1", "KAFKA_4_4", "KIP"]
    # The defaults are the shipped 4.4 behaviour; 4.1 differs in its wire surface alone.
    assert replace(Semantics.KAFKA_4_4, name="custom") == Semantics()
    assert replace(Semantics.KAFKA_4_1, name="custom", release="4.4") == Semantics()
    assert [s.release for s in PRESETS] == ["4.1", "4.1", "4.1", "4.4", "4.4"]
    with pytest.raises(ValueError, match="release"):
        Semantics(release="4.2")  # type: ignore[arg-type]
    assert len({replace(s, name="") for s in PRESETS}) == len(PRESETS)
    with pytest.raises(FrozenInstanceError):
        Semantics.KAFKA_4_1.unclean_recovery = True  # type: ignore[misc]


def test_min_isr_change_clear_elr_from_4_0() -> None:
    got = {s.name: names(*min_isr_change(s)) for s in PRESETS}
    assert got["KAFKA_3_9"] == ["ConfigRecord"]
    assert got["KAFKA_4_0"] == got["KAFKA_4_1"] == got["KIP"] == ["ConfigRecord", "ClearElrRecord"]


def test_fenced_last_known_leader_elected_only_before_4_1() -> None:
    got = {s.name: outcome(fenced_last_known_leader, s) for s in PRESETS}
    assert got["KAFKA_3_9"] == got["KAFKA_4_0"]
    assert got["KAFKA_4_0"] != got["KAFKA_4_1"]
    assert [n for n, _ in got["KAFKA_3_9"]] == [
        "BrokerRegistrationChangeRecord",
        "PartitionChangeRecord",
    ]
    assert [n for n, _ in got["KAFKA_4_1"]] == ["BrokerRegistrationChangeRecord"]


def test_clean_restart_honoured_from_4_0() -> None:
    got = {s.name: outcome(clean_restart, s) for s in PRESETS}
    assert got["KAFKA_3_9"] != got["KAFKA_4_0"]
    assert got["KAFKA_4_0"] == got["KAFKA_4_1"]
    # 3.9 takes the unclean path: a PartitionChangeRecord drops 3 from the ELR.
    assert [n for n, _ in got["KAFKA_3_9"]] == ["PartitionChangeRecord", "RegisterBrokerRecord"]


def test_last_known_elr_leader_versus_set() -> None:
    recs = {}
    for s in (Semantics.KAFKA_4_1, Semantics.KIP):
        ctl = replay_cluster(s, isr=[1, 2], elr=[3], min_isr=3)
        register(ctl, 3, generation=1)
        ctl.fence(2)
        ctl.fence(1)
        recs[s.name] = ctl.partition("t", 0).last_known_elr
    assert recs == {"KAFKA_4_1": [1], "KIP": [3]}


def test_designation_only_in_kip() -> None:
    for s in PRESETS:
        ctl = replay_cluster(s, isr=[1], fenced=(1,), leader=-1)
        resp = call(
            ctl,
            ApiKey.ELECT_LEADERS,
            3,
            {
                "election_type": ElectionType.UNCLEAN,
                "topic_partitions": [{"topic": "t", "partitions": [0], "desired_leaders": [2]}],
            },
        )
        expected = ErrorCode.NONE if s.elect_leaders_designation else ErrorCode.UNSUPPORTED_VERSION
        assert resp.error_code == expected, s.name
