"""Controller metrics (kip-rules I.34 and KIP-966's list)."""

from __future__ import annotations

import pytest
from controller_kit import (
    alter_partition,
    heartbeat,
    replay_cluster,
    set_config,
)

from kipwire.mockbroker.controller import Semantics


@pytest.mark.parametrize(
    ("semantics", "unclean", "from_elr"),
    [(Semantics.KAFKA_3_9, 1, 0), (Semantics.KAFKA_4_0, 1, 0), (Semantics.KAFKA_4_1, 0, 1)],
)
def test_i34_elr_election_counted_as_unclean_before_4_1(
    semantics: Semantics, unclean: int, from_elr: int
) -> None:
    ctl = replay_cluster(semantics, isr=[1], elr=[2], min_isr=3, fenced=(2, 3))
    ctl.fence(1)
    heartbeat(ctl, 2)
    assert ctl.partition("t", 0).leader == 2
    m = ctl.metrics()
    assert m["unclean_leader_elections"] == unclean
    assert m["election_from_eligible_leader_replicas"] == from_elr


def test_i34_no_leader_is_clean_and_unclean_election_counts() -> None:
    ctl = replay_cluster(isr=[1], min_isr=1, elr_enabled=False, fenced=(2, 3))
    ctl.fence(1)
    assert ctl.metrics()["unclean_leader_elections"] == 0
    set_config(ctl, "unclean.leader.election.enable", "true")
    heartbeat(ctl, 3)
    assert ctl.partition("t", 0).leader == 3
    assert ctl.metrics()["unclean_leader_elections"] == 1


def test_gauges_electable_leaders_and_under_min_isr() -> None:
    ctl = replay_cluster(brokers=(1, 2, 3, 4), isr=[1, 2, 3, 4], min_isr=3)
    m = ctl.metrics()
    assert m["electable_leaders"] == {"t-0": 4}
    assert m["global_under_min_isr_partition_count"] == 0
    alter_partition(ctl, [1, 2])
    m = ctl.metrics()
    assert m["electable_leaders"] == {"t-0": 4}
    assert m["global_under_min_isr_partition_count"] == 1
    alter_partition(ctl, [1, 2, 3])
    m = ctl.metrics()
    assert m["at_min_isr_partition_count"] == 1 and m["electable_leaders"] == {"t-0": 3}


def test_recovery_gauges_only_in_the_kip_preset() -> None:
    got = {}
    for semantics in (Semantics.KAFKA_4_1, Semantics.KIP):
        ctl = replay_cluster(semantics, isr=[1], min_isr=2)
        ctl.fence(1)  # leaderless; the fenced ELR member makes Balanced recovery wait
        got[semantics.name] = ctl.metrics()["unclean_recovery_partitions_count"]
    assert got == {"KAFKA_4_1": 0, "KIP": 1}
