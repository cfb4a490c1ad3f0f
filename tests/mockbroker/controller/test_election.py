"""Leader election (kip-rules E.20-E.25) through fences, unfences and ElectLeaders."""

from __future__ import annotations

import pytest
from controller_kit import (
    alter_partition,
    call,
    changes,
    heartbeat,
    replay_cluster,
    set_config,
    state_of,
)

from kipwire.codec import ApiKey, ElectionType, ErrorCode, LeaderRecoveryState
from kipwire.mockbroker.controller import Semantics


def elect(ctl, election_type: int, version: int = 2, partitions=(0,), desired=None):
    """ElectLeaders for t; returns the single partition's error code."""
    topic = {"topic": "t", "partitions": list(partitions)}
    if version >= 3:
        topic["desired_leaders"] = desired
    resp = call(
        ctl,
        ApiKey.ELECT_LEADERS,
        version,
        {"election_type": election_type, "topic_partitions": [topic]},
    )
    return resp.replica_election_results[0].partition_result[0].error_code


def test_e20_fenced_isr_member_is_not_a_valid_leader() -> None:
    ctl = replay_cluster(replicas=[1, 2, 3], isr=[1, 2, 3], fenced=(2,))
    ctl.fence(1)
    assert ctl.partition("t", 0).leader == 3


def test_e20_elr_member_valid_only_when_isr_is_empty() -> None:
    ctl = replay_cluster(isr=[1], elr=[2], min_isr=3, fenced=(3,))
    ctl.append("BrokerRegistrationChangeRecord", {"broker_id": 2, "broker_epoch": 102, "fenced": 1})
    ctl.fence(1)
    assert state_of(ctl) == ([], [1, 2], [1], -1)
    heartbeat(ctl, 2)  # ISR empty: the unfenced ELR member leads
    assert state_of(ctl)[0] == [2] and state_of(ctl)[3] == 2


def test_e21_step1_keeps_a_valid_current_leader() -> None:
    ctl = replay_cluster(replicas=[1, 2, 3], isr=[1, 2, 3], leader=3)
    ctl.fence(2)
    assert ctl.partition("t", 0).leader == 3
    assert ctl.partition("t", 0).leader_epoch == 100


def test_e21_step2_first_valid_in_assignment_order() -> None:
    ctl = replay_cluster(replicas=[3, 1, 2], isr=[1, 2, 3], leader=1)
    ctl.fence(1)
    assert ctl.partition("t", 0).leader == 3


@pytest.mark.parametrize(
    ("semantics", "elected"),
    [(Semantics.KAFKA_3_9, 1), (Semantics.KAFKA_4_0, 1), (Semantics.KAFKA_4_1, -1)],
)
def test_e21_step3_last_known_leader_liveness(semantics: Semantics, elected: int) -> None:
    # ISR and ELR empty, LastKnownElr [1]; 1 is fenced. 3.9/4.0 elect it anyway (KAFKA-19522).
    ctl = replay_cluster(
        semantics, isr=[], elr=[], last_known_elr=[1], leader=-1, min_isr=2, fenced=(1, 2)
    )
    start = ctl.end_offset
    heartbeat(ctl, 2)  # unfencing 2 runs the election for leaderless partitions
    if elected == -1:
        assert changes(ctl, start) == []
        assert ctl.partition("t", 0).leader == -1
    else:
        rec = changes(ctl, start)[0]
        assert (
            rec["leader"] == 1
            and rec["isr"] == [1]
            and rec["leader_recovery_state"] == LeaderRecoveryState.RECOVERING
        )


def test_e21_step3_live_last_known_leader_is_elected_in_4_1_ignoring_unclean_config() -> None:
    ctl = replay_cluster(isr=[], elr=[], last_known_elr=[1], leader=-1, min_isr=2, fenced=(2,))
    ctl.tick(1)  # no unclean config, no periodic election; the unfence path elects:
    heartbeat(ctl, 2)
    assert ctl.partition("t", 0).leader == 1
    assert ctl.partition("t", 0).leader_recovery_state == LeaderRecoveryState.RECOVERING


def test_e21_step4_unclean_only_with_the_topic_config() -> None:
    for unclean, leader in ((False, -1), (True, 2)):
        ctl = replay_cluster(isr=[1], elr=[], min_isr=1, unclean=unclean, elr_enabled=False)
        ctl.fence(1)
        assert ctl.partition("t", 0).leader == leader


def test_e21_step5_no_leader() -> None:
    ctl = replay_cluster(isr=[1], fenced=(2, 3), elr_enabled=False, unclean=True)
    ctl.fence(1)
    assert ctl.partition("t", 0).leader == -1


def test_e22_preferred_order() -> None:
    ctl = replay_cluster(replicas=[1, 2, 3], isr=[1, 2, 3], leader=2)
    assert elect(ctl, 0) == ErrorCode.NONE
    assert ctl.partition("t", 0).leader == 1
    assert elect(ctl, 0) == ErrorCode.ELECTION_NOT_NEEDED
    # replicas[0] invalid: keep the current leader (no record) -> not available.
    ctl = replay_cluster(replicas=[1, 2, 3], isr=[2, 3], leader=3)
    start = ctl.end_offset
    assert elect(ctl, 0) == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert ctl.end_offset == start


def test_e22_preferred_never_elects_uncleanly() -> None:
    ctl = replay_cluster(isr=[1], fenced=(1,), leader=-1, elr_enabled=False, unclean=True)
    assert elect(ctl, 0) == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert ctl.partition("t", 0).leader == -1


def test_e23_electing_an_elr_member_keeps_the_rest_of_the_elr() -> None:
    ctl = replay_cluster(
        brokers=(1, 2, 3, 4),
        isr=[],
        elr=[2, 3],
        last_known_elr=[1],
        leader=-1,
        min_isr=3,
        fenced=(1, 2, 3),
    )
    heartbeat(ctl, 3)
    p = ctl.partition("t", 0)
    assert (p.isr, p.elr, p.leader, p.leader_recovery_state) == ([3], [2], 3, 0)
    assert p.last_known_elr == []


def test_e24_unclean_election_sets_recovering_and_clears_elr() -> None:
    ctl = replay_cluster(isr=[1], elr=[2], min_isr=3, fenced=(2,), unclean=True)
    ctl.fence(1)
    p = ctl.partition("t", 0)
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ([3], [], [], 3)
    assert p.leader_recovery_state == LeaderRecoveryState.RECOVERING


def test_e24_no_recovering_below_mv_3_2() -> None:
    ctl = replay_cluster(isr=[1], elr_enabled=False, unclean=True, metadata_version=2)
    ctl.fence(1)
    rec = changes(ctl, 0)[-1]
    assert rec["leader"] == 2 and rec["leader_recovery_state"] == -1
    assert ctl.partition("t", 0).leader_recovery_state == LeaderRecoveryState.RECOVERED


def test_e25_elect_leaders_unclean_ignores_topic_config() -> None:
    ctl = replay_cluster(isr=[1], min_isr=1, elr_enabled=False)
    assert elect(ctl, 1) == ErrorCode.ELECTION_NOT_NEEDED
    ctl.fence(1)
    assert ctl.partition("t", 0).leader == -1
    assert elect(ctl, 1) == ErrorCode.NONE
    assert ctl.partition("t", 0).leader == 2


def test_e25_elect_leaders_unclean_with_nobody_alive() -> None:
    ctl = replay_cluster(isr=[1], fenced=(1, 2, 3), leader=-1, elr_enabled=False)
    assert elect(ctl, 1) == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_e25_periodic_unclean_election_in_tick() -> None:
    ctl = replay_cluster(isr=[1], min_isr=2, fenced=(2, 3))
    ctl.fence(1)
    heartbeat(ctl, 2)
    assert ctl.partition("t", 0).leader == -1
    ctl.tick(10)
    assert ctl.partition("t", 0).leader == -1  # unclean election off
    set_config(ctl, "unclean.leader.election.enable", "true")
    ctl.tick(20)
    assert ctl.partition("t", 0).leader == 2


def test_e25_elect_all_partitions_leaves_out_election_not_needed() -> None:
    ctl = replay_cluster(replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
    resp = call(
        ctl,
        ApiKey.ELECT_LEADERS,
        2,
        {"election_type": ElectionType.PREFERRED, "topic_partitions": None},
    )
    assert [(r.topic, r.partition_result) for r in resp.replica_election_results] == [("t", [])]


def test_elect_leaders_v3_designation_only_in_kip() -> None:
    ctl = replay_cluster(Semantics.KIP, isr=[1], fenced=(1,), leader=-1, min_isr=1)
    assert elect(ctl, 1, version=3, desired=[3]) == ErrorCode.NONE
    p = ctl.partition("t", 0)
    assert (p.leader, p.isr, p.leader_recovery_state) == (3, [3], 1)
    assert elect(ctl, 1, version=3, desired=[2]) == ErrorCode.ELECTION_NOT_NEEDED
    shipped = replay_cluster(isr=[1], fenced=(1,), leader=-1)
    resp = call(
        shipped,
        ApiKey.ELECT_LEADERS,
        3,
        {
            "election_type": ElectionType.UNCLEAN,
            "topic_partitions": [{"topic": "t", "partitions": [0], "desired_leaders": [3]}],
        },
    )
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_elect_leaders_designation_refuses_a_fenced_or_foreign_replica() -> None:
    ctl = replay_cluster(
        Semantics.KIP,
        brokers=(1, 2, 3, 4),
        replicas=[1, 2, 3],
        isr=[1],
        fenced=(1, 2),
        leader=-1,
        min_isr=1,
    )
    assert elect(ctl, 1, version=3, desired=[2]) == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert elect(ctl, 1, version=3, desired=[4]) == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert elect(ctl, 1, version=3, desired=[3, 1]) == ErrorCode.INVALID_REQUEST


def test_alter_partition_with_unclean_config_keeps_the_leader() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], unclean=True)
    alter_partition(ctl, [1])
    assert (
        state_of(ctl)[0] == [1]
        and ctl.partition("t", 0).leader_recovery_state == LeaderRecoveryState.RECOVERED
    )
