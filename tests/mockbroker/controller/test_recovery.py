"""The KIP's unclean recovery (kip-rules E.26; Semantics.KIP): GetReplicaLogInfo through
outbox()/deliver(), strategies Aggressive / Balanced / None, and the RECOVERING leader."""

from __future__ import annotations

from typing import Any

from controller_kit import (
    alter_partition,
    call,
    heartbeat,
    register,
    replay_cluster,
    set_config,
    wire_response,
)

from kipwire.codec import ApiKey, ElectionType, ErrorCode, LeaderRecoveryState
from kipwire.mockbroker.controller import Semantics
from kipwire.mockbroker.controller.recovery import retry_delay_ms


def log_info(
    ctl,
    broker_id: int,
    last_epoch: int,
    end_offset: int,
    *,
    leader_epoch=None,
    broker_epoch=None,
    error: int = ErrorCode.NONE,
) -> Any:
    """A GetReplicaLogInfo response from a broker about t-0, as the controller's channel
    decodes it."""
    p = ctl.partition("t", 0)
    body = {
        "broker_epoch": ctl.broker(broker_id).epoch if broker_epoch is None else broker_epoch,
        "topic_partition_log_info_list": [
            {
                "topic_id": p.topic_id,
                "partition_log_info": [
                    {
                        "partition": 0,
                        "last_written_leader_epoch": last_epoch,
                        "current_leader_epoch": p.leader_epoch
                        if leader_epoch is None
                        else leader_epoch,
                        "log_end_offset": end_offset,
                        "error_code": error,
                    }
                ],
            }
        ],
    }
    return wire_response("GetReplicaLogInfoResponse", 0, body)


def aggressive_leaderless():
    """KIP preset, t-0 on [1, 2, 3] with its only ISR member 1 fenced, strategy Aggressive."""
    ctl = replay_cluster(Semantics.KIP, isr=[1], min_isr=1)
    set_config(ctl, "unclean.recovery.strategy", "Aggressive")
    ctl.fence(1)
    return ctl


def test_e26_recovery_asks_live_replicas_through_the_outbox() -> None:
    ctl = aggressive_leaderless()
    p = ctl.partition("t", 0)
    assert (p.isr, p.elr, p.leader) == ([], [1], -1)
    out = ctl.outbox()
    assert sorted(b for b, *_ in out) == [2, 3]
    broker, api_key, version, body = out[0]
    assert (api_key, version) == (ApiKey.GET_REPLICA_LOG_INFO, 0)
    assert body["topic_partitions"][0]["partitions"] == [0]
    assert ctl.outbox() == []  # drained
    assert ctl.metrics()["unclean_recovery_partitions_count"] == 1


def test_e26_longest_log_wins_and_starts_recovering() -> None:
    ctl = aggressive_leaderless()
    ctl.outbox()
    ctl.deliver(2, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 2, 7, 500))
    assert ctl.partition("t", 0).leader == -1  # waits for every replica or the deadline
    ctl.deliver(3, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 3, 7, 450))
    p = ctl.partition("t", 0)
    assert (p.leader, p.isr, p.elr, p.leader_recovery_state) == (2, [2], [], 1)
    assert ctl.metrics()["unclean_recovery_finished_count"] == 1
    # KIP-704: the leader reports RECOVERED, then it may grow its ISR.
    alter_partition(ctl, [2], leader_recovery_state=LeaderRecoveryState.RECOVERED)
    assert ctl.partition("t", 0).leader_recovery_state == LeaderRecoveryState.RECOVERED


def test_e26_leader_epoch_ranks_before_log_end_offset() -> None:
    ctl = aggressive_leaderless()
    ctl.deliver(2, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 2, 6, 900))
    ctl.deliver(3, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 3, 7, 10))
    assert ctl.partition("t", 0).leader == 3


def test_e26_stale_answers_are_fenced() -> None:
    ctl = aggressive_leaderless()
    ctl.deliver(2, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 2, 9, 900, leader_epoch=3))
    ctl.deliver(2, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 2, 9, 900, broker_epoch=1))
    ctl.deliver(
        2,
        ApiKey.GET_REPLICA_LOG_INFO,
        0,
        log_info(ctl, 2, 9, 900, error=ErrorCode.NOT_LEADER_OR_FOLLOWER),
    )
    ctl.deliver(3, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 3, 1, 1))
    assert ctl.partition("t", 0).leader == -1
    ctl.tick(ctl.now_ms + 300_001)  # the deadline: elect among valid answers
    assert ctl.partition("t", 0).leader == 3


def test_e26_balanced_waits_for_last_known_elr_members() -> None:
    ctl = replay_cluster(Semantics.KIP, isr=[1], min_isr=1)
    set_config(ctl, "unclean.recovery.timeout.ms", "1000")
    ctl.fence(1)
    register(ctl, 1, generation=1)  # unclean restart: out of the ELR, into LastKnownElr
    p = ctl.partition("t", 0)
    assert (p.isr, p.elr, p.last_known_elr) == ([], [], [1])
    assert ctl.outbox() == []
    assert ctl.metrics()["unclean_recovery_partitions_count"] == 1  # waiting counts
    heartbeat(ctl, 1)
    assert sorted(b for b, *_ in ctl.outbox()) == [1, 2, 3]
    ctl.deliver(2, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 2, 4, 40))
    ctl.deliver(3, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 3, 4, 30))
    ctl.tick(ctl.now_ms + 1001)
    assert ctl.partition("t", 0).leader == -1  # Balanced needs the LastKnownElr answer
    ctl.deliver(1, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 1, 4, 20))
    assert ctl.partition("t", 0).leader == 2


def test_e26_strategy_none_waits_for_the_operator() -> None:
    ctl = replay_cluster(Semantics.KIP, isr=[1], min_isr=1)
    set_config(ctl, "unclean.recovery.strategy", "None")
    ctl.fence(1)
    ctl.tick(1_000_000)
    assert ctl.outbox() == [] and ctl.partition("t", 0).leader == -1
    assert ctl.metrics()["manual_leader_election_required_partition_count"] == 1
    resp = call(
        ctl,
        ApiKey.ELECT_LEADERS,
        3,
        {
            "election_type": ElectionType.UNCLEAN,
            "topic_partitions": [{"topic": "t", "partitions": [0], "desired_leaders": [3]}],
        },
    )
    assert resp.replica_election_results[0].partition_result[0].error_code == ErrorCode.NONE
    assert ctl.partition("t", 0).leader == 3


def test_e26_longest_log_election_on_request() -> None:
    ctl = replay_cluster(Semantics.KIP, isr=[1], min_isr=1)
    set_config(ctl, "unclean.recovery.strategy", "None")
    ctl.fence(1)
    resp = call(
        ctl,
        ApiKey.ELECT_LEADERS,
        3,
        {
            "election_type": ElectionType.LONGEST_LOG_AGGRESSIVE,
            "topic_partitions": [{"topic": "t", "partitions": [0], "desired_leaders": None}],
        },
    )
    assert resp.replica_election_results[0].partition_result[0].error_code == ErrorCode.NONE
    assert sorted(b for b, *_ in ctl.outbox()) == [2, 3]
    ctl.deliver(2, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 2, 1, 1))
    ctl.deliver(3, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 3, 1, 2))
    assert ctl.partition("t", 0).leader == 3


def test_e26_shipped_presets_never_send_get_replica_log_info() -> None:
    ctl = replay_cluster(isr=[1], min_isr=1, unclean=True, fenced=(2, 3))
    ctl.fence(1)
    ctl.tick(1_000_000)
    assert ctl.outbox() == []
    m = ctl.metrics()
    assert m["offline_partition_count"] == 1
    assert m["unclean_recovery_partitions_count"] == 0


def test_e26_a_replica_answering_with_an_error_is_asked_again_with_backoff() -> None:
    ctl = aggressive_leaderless()
    ctl.outbox()
    ctl.deliver(
        2,
        ApiKey.GET_REPLICA_LOG_INFO,
        0,
        log_info(ctl, 2, 1, 1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER),
    )
    assert [b for b, *_ in ctl.outbox()] == [2]  # the first retry goes at once
    ctl.deliver(
        2,
        ApiKey.GET_REPLICA_LOG_INFO,
        0,
        log_info(ctl, 2, 1, 1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER),
    )
    assert ctl.outbox() == []
    ctl.tick(ctl.now_ms + 49)
    assert ctl.outbox() == []
    ctl.tick(ctl.now_ms + 1)
    assert [b for b, *_ in ctl.outbox()] == [2]  # then after 50 ms, doubling
    assert [retry_delay_ms(n) for n in (1, 2, 3, 4, 8, 20)] == [0, 50, 100, 200, 3000, 3000]
    ctl.deliver(2, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 2, 3, 9))
    ctl.deliver(3, ApiKey.GET_REPLICA_LOG_INFO, 0, log_info(ctl, 3, 3, 8))
    assert ctl.partition("t", 0).leader == 2
