"""The KIP texts' walkthroughs, step by step: KIP-966's "last replica standing" (T0-T4) and
its 4-broker min ISR 3 table (T0-T7). KIP-903's race is in test_alter_partition."""

from __future__ import annotations

import pytest
from controller_kit import (
    alter_partition,
    heartbeat,
    register,
    replay_cluster,
    state_of,
)


@pytest.mark.parametrize("elr", [True, False])
def test_kip966_last_replica_standing(elr: bool) -> None:
    ctl = replay_cluster(brokers=(0, 1, 2), isr=[0, 1, 2], min_isr=2, elr_enabled=elr)
    # T0: a network partition takes broker 0 out of the ISR.
    ctl.fence(0)
    assert state_of(ctl)[0] == [1, 2]
    # T1: broker 1 leaves too; broker 2 leads alone.
    ctl.fence(1)
    assert state_of(ctl) == (([2], [1], [], 2) if elr else ([2], [], [], 2))
    # T2: broker 2 shuts down uncleanly (its session times out first).
    ctl.fence(2)
    if elr:
        assert state_of(ctl) == ([], [1, 2], [2], -1)
    else:
        assert state_of(ctl) == ([2], [], [], -1)
    # T3: the partitioning ends; brokers 0 and 1 come back.
    heartbeat(ctl, 0)
    heartbeat(ctl, 1)
    if elr:
        # Broker 1 has every committed record: it leads, and leaves the ELR.
        assert state_of(ctl) == ([1], [2], [], 1)
    else:
        assert ctl.partition("t", 0).leader == -1
    # T4: broker 2 restarts, having lost its unflushed log.
    register(ctl, 2, generation=1)
    heartbeat(ctl, 2)
    if elr:
        assert state_of(ctl) == ([1], [], [], 1)  # not in the ELR any more, never elected
    else:
        assert ctl.partition("t", 0).leader == 2  # the data-losing replica leads: global loss


def test_kip966_four_brokers_min_isr_three() -> None:
    ctl = replay_cluster(brokers=(1, 2, 3, 4), isr=[1, 2, 3, 4], min_isr=3)
    # T0: everyone online.
    assert state_of(ctl) == ([1, 2, 3, 4], [], [], 1)
    # T1: b3, b4 lag; b1 proposes ISR {1, 2}: ELR {3, 4}.
    alter_partition(ctl, [1, 2])
    assert state_of(ctl)[:2] == ([1, 2], [3, 4])
    # T2: b3 catches up: ISR {1, 2, 3}, the ELR is cleaned.
    alter_partition(ctl, [1, 2, 3])
    assert state_of(ctl)[:2] == ([1, 2, 3], [])
    # T3: b2, b3 go offline: removed from the ISR, added to the ELR.
    ctl.fence(2)
    ctl.fence(3)
    assert state_of(ctl)[:2] == ([1], [2, 3])
    # T4: b4 catches up: b1 proposes ISR {1, 4}.
    alter_partition(ctl, [1, 4])
    assert state_of(ctl)[:2] == ([1, 4], [2, 3])
    # T5: b1, b4 go offline; b3 comes back after an unclean shutdown and leaves the ELR.
    ctl.fence(1)
    ctl.fence(4)
    assert state_of(ctl) == ([], [1, 2, 3, 4], [4], -1)
    register(ctl, 3, generation=1)
    assert state_of(ctl)[:2] == ([], [1, 2, 4])
    # T6: b1 comes back uncleanly (leaves the ELR); b2 comes back cleanly and is elected.
    register(ctl, 1, generation=1)
    assert state_of(ctl)[:2] == ([], [2, 4])
    heartbeat(ctl, 2)
    assert state_of(ctl) == ([2], [4], [], 2)
    # T7: b1 and b3 catch up; b2 proposes ISR {2, 1, 3}: the ELR is cleaned.
    heartbeat(ctl, 1)
    heartbeat(ctl, 3)
    alter_partition(ctl, [2, 1, 3])
    assert state_of(ctl) == ([2, 1, 3], [], [], 2)
