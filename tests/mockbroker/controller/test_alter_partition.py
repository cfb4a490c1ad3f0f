"""AlterPartition (kip-rules C.9-C.11) and KIP-903's stale broker epoch race."""

from __future__ import annotations

import uuid

import pytest
from controller_kit import (
    alter_partition,
    call,
    changes,
    heartbeat,
    partition_error,
    register,
    replay_cluster,
)

from kipwire.codec import ApiKey, ErrorCode, LeaderRecoveryState


def test_c9_stale_broker_epoch_rejects_the_whole_request() -> None:
    ctl = replay_cluster()
    start = ctl.end_offset
    resp = alter_partition(ctl, [1, 2], broker_epoch=ctl.broker(1).epoch - 1)
    assert resp.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert resp.topics == []
    assert ctl.end_offset == start


def test_c9_unregistered_sender_is_a_stale_broker_epoch() -> None:
    ctl = replay_cluster()
    resp = alter_partition(ctl, [1, 2], sender=9, broker_epoch=5)
    assert resp.error_code == ErrorCode.STALE_BROKER_EPOCH


@pytest.mark.parametrize(
    ("version", "code"),
    [
        (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (2, ErrorCode.UNKNOWN_TOPIC_ID),
        (3, ErrorCode.UNKNOWN_TOPIC_ID),
    ],
)
def test_c9_unknown_topic_error_depends_on_version(version: int, code: int) -> None:
    ctl = replay_cluster()
    topic = {"topic_id": uuid.uuid4()} if version >= 2 else {"topic_name": "nope"}
    part = {"partition_index": 0, "leader_epoch": 100, "partition_epoch": 200}
    if version >= 3:
        part["new_isr_with_epochs"] = [{"broker_id": 1, "broker_epoch": -1}]
    else:
        part["new_isr"] = [1]
    topic["partitions"] = [part]
    resp = call(
        ctl,
        ApiKey.ALTER_PARTITION,
        version,
        {"broker_id": 1, "broker_epoch": ctl.broker(1).epoch, "topics": [topic]},
    )
    assert resp.error_code == ErrorCode.NONE
    assert partition_error(resp) == code


def _partition_check(ctl, **kwargs) -> int:
    start = ctl.end_offset
    code = partition_error(alter_partition(ctl, **kwargs))
    if code != ErrorCode.NONE:
        assert ctl.end_offset == start, "a refused AlterPartition wrote records"
    return code


def test_c10_1_unknown_partition() -> None:
    ctl = replay_cluster()
    p = ctl.partition("t", 0)
    resp = call(
        ctl,
        ApiKey.ALTER_PARTITION,
        3,
        {
            "broker_id": 1,
            "broker_epoch": ctl.broker(1).epoch,
            "topics": [
                {
                    "topic_id": p.topic_id,
                    "partitions": [
                        {
                            "partition_index": 7,
                            "leader_epoch": 100,
                            "partition_epoch": 200,
                            "new_isr_with_epochs": [{"broker_id": 1}],
                        }
                    ],
                }
            ],
        },
    )
    assert partition_error(resp) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_c10_2_newer_leader_epoch_is_not_controller() -> None:
    ctl = replay_cluster()
    assert _partition_check(ctl, isr=[1, 2], leader_epoch=101) == ErrorCode.NOT_CONTROLLER


def test_c10_3_newer_partition_epoch_is_not_controller() -> None:
    ctl = replay_cluster()
    assert _partition_check(ctl, isr=[1, 2], partition_epoch=201) == ErrorCode.NOT_CONTROLLER


def test_c10_4_older_leader_epoch_is_fenced() -> None:
    ctl = replay_cluster()
    assert _partition_check(ctl, isr=[1, 2], leader_epoch=99) == ErrorCode.FENCED_LEADER_EPOCH


def test_c10_2_before_c10_4_newer_leader_epoch_wins_over_older_partition_epoch() -> None:
    ctl = replay_cluster()
    code = _partition_check(ctl, isr=[1, 2], leader_epoch=101, partition_epoch=199)
    assert code == ErrorCode.NOT_CONTROLLER


def test_c10_5_sender_not_leader_is_invalid_request() -> None:
    ctl = replay_cluster()
    assert _partition_check(ctl, isr=[1, 2], sender=2) == ErrorCode.INVALID_REQUEST


def test_c10_6_older_partition_epoch_is_invalid_update_version() -> None:
    ctl = replay_cluster()
    code = _partition_check(ctl, isr=[1, 2], partition_epoch=199)
    assert code == ErrorCode.INVALID_UPDATE_VERSION


@pytest.mark.parametrize("isr", [[1, 1, 2], [1, 2, 9]])
def test_c10_7_duplicates_or_non_replicas_are_invalid(isr: list[int]) -> None:
    ctl = replay_cluster()
    assert _partition_check(ctl, isr=isr) == ErrorCode.INVALID_REQUEST


def test_c10_8_isr_without_the_leader_is_invalid() -> None:
    ctl = replay_cluster()
    assert _partition_check(ctl, isr=[2, 3]) == ErrorCode.INVALID_REQUEST


def test_c10_9_recovering_with_more_than_one_member_is_invalid() -> None:
    ctl = replay_cluster(isr=[1], leader_recovery_state=LeaderRecoveryState.RECOVERING)
    code = _partition_check(ctl, isr=[1, 2], leader_recovery_state=LeaderRecoveryState.RECOVERING)
    assert code == ErrorCode.INVALID_REQUEST


def test_c10_10_recovered_back_to_recovering_is_invalid() -> None:
    ctl = replay_cluster(isr=[1])
    code = _partition_check(ctl, isr=[1], leader_recovery_state=LeaderRecoveryState.RECOVERING)
    assert code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(
    ("version", "code"),
    [
        (0, ErrorCode.OPERATION_NOT_ATTEMPTED),
        (1, ErrorCode.OPERATION_NOT_ATTEMPTED),
        (2, ErrorCode.INELIGIBLE_REPLICA),
        (3, ErrorCode.INELIGIBLE_REPLICA),
    ],
)
def test_c10_11_fenced_member_is_ineligible_by_version(version: int, code: int) -> None:
    ctl = replay_cluster(isr=[1, 2], fenced=(3,))
    assert _partition_check(ctl, isr=[1, 2, 3], version=version) == code


def test_c10_11_controlled_shutdown_and_unregistered_members_are_ineligible() -> None:
    ctl = replay_cluster(brokers=(1, 2, 3), replicas=[1, 2, 3, 4], isr=[1, 2])
    ctl.append(
        "BrokerRegistrationChangeRecord",
        {"broker_id": 3, "broker_epoch": 103, "in_controlled_shutdown": 1},
    )
    assert _partition_check(ctl, isr=[1, 2, 3]) == ErrorCode.INELIGIBLE_REPLICA
    assert _partition_check(ctl, isr=[1, 2, 4]) == ErrorCode.INELIGIBLE_REPLICA


def test_c10_11_epoch_mismatch_only_checked_from_v3() -> None:
    ctl = replay_cluster(isr=[1, 2])
    stale = {3: ctl.broker(3).epoch - 1}
    assert _partition_check(ctl, isr=[1, 2, 3], epochs=stale) == ErrorCode.INELIGIBLE_REPLICA
    # v2 sends plain ids, converted with epoch -1: the same stale member gets in.
    assert _partition_check(ctl, isr=[1, 2, 3], version=2) == ErrorCode.NONE
    assert ctl.partition("t", 0).isr == [1, 2, 3]


def test_c10_11_matching_epoch_is_accepted() -> None:
    ctl = replay_cluster(isr=[1, 2])
    good = {b: ctl.broker(b).epoch for b in (1, 2, 3)}
    assert _partition_check(ctl, isr=[1, 2, 3], epochs=good) == ErrorCode.NONE


def test_c11_accepted_change_writes_one_record_and_returns_the_new_state() -> None:
    ctl = replay_cluster()
    start = ctl.end_offset
    resp = alter_partition(ctl, [1, 2])
    recs = changes(ctl, start)
    assert len(recs) == 1 and recs[0]["isr"] == [1, 2] and recs[0]["leader"] == -2
    part = resp.topics[0].partitions[0]
    assert part.error_code == ErrorCode.NONE
    assert (part.leader_id, part.isr, part.leader_epoch, part.partition_epoch) == (
        1,
        [1, 2],
        100,
        201,
    )


def test_c11_no_op_writes_nothing_and_returns_current_state() -> None:
    ctl = replay_cluster()
    start = ctl.end_offset
    part = alter_partition(ctl, [1, 2, 3]).topics[0].partitions[0]
    assert ctl.end_offset == start
    assert (part.error_code, part.isr, part.partition_epoch) == (ErrorCode.NONE, [1, 2, 3], 200)


def test_c11_recovered_report_clears_recovering() -> None:
    ctl = replay_cluster(isr=[1], leader_recovery_state=LeaderRecoveryState.RECOVERING)
    part = (
        alter_partition(ctl, [1, 2], leader_recovery_state=LeaderRecoveryState.RECOVERED)
        .topics[0]
        .partitions[0]
    )
    assert part.error_code == ErrorCode.NONE
    assert ctl.partition("t", 0).leader_recovery_state == LeaderRecoveryState.RECOVERED
    assert ctl.partition("t", 0).leader_epoch == 100


@pytest.mark.parametrize(
    ("version", "code"), [(1, ErrorCode.FENCED_LEADER_EPOCH), (2, ErrorCode.NEW_LEADER_ELECTED)]
)
def test_c11_completed_reassignment_moving_the_leader(version: int, code: int) -> None:
    # Moving t-0 from [1, 2] to [2, 3]: the leader 1 is being removed.
    ctl = replay_cluster(replicas=[1, 2], isr=[1, 2])
    call(
        ctl,
        45,
        0,
        {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [2, 3]}]}]},
    )
    p = ctl.partition("t", 0)
    assert (p.adding_replicas, p.removing_replicas) == ([3], [1])
    start = ctl.end_offset
    part = alter_partition(ctl, [1, 2, 3], version=version).topics[0].partitions[0]
    assert part.error_code == code
    rec = changes(ctl, start)[0]
    assert rec["leader"] == 2 and rec["replicas"] == [2, 3] and rec["isr"] == [2, 3]
    assert ctl.partition("t", 0).leader == 2


def test_kip903_stale_epoch_race() -> None:
    """KIP-903's race: B catches up, A asks to add B; B reboots with an empty disk and
    registers again; A's delayed AlterPartition (carrying B's old epoch) must be refused."""
    ctl = replay_cluster(brokers=(1, 2), replicas=[1, 2], isr=[1], elr_enabled=False)
    old_epoch_b = ctl.broker(2).epoch
    ctl.fence(2)  # B has a hard failure
    assert ctl.partition("t", 0).isr == [1]
    assert register(ctl, 2, generation=1).error_code == ErrorCode.NONE
    heartbeat(ctl, 2)
    assert not ctl.broker(2).fenced and ctl.broker(2).epoch != old_epoch_b
    start = ctl.end_offset
    code = partition_error(alter_partition(ctl, [1, 2], epochs={2: old_epoch_b}))
    assert code == ErrorCode.INELIGIBLE_REPLICA
    assert ctl.end_offset == start
    assert ctl.partition("t", 0).isr == [1]
    # With the epoch B now has (learned from its new fetches), the expansion is accepted.
    code = partition_error(alter_partition(ctl, [1, 2], epochs={2: ctl.broker(2).epoch}))
    assert code == ErrorCode.NONE and ctl.partition("t", 0).isr == [1, 2]
