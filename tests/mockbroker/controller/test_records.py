"""Epochs and record fields (kip-rules F.27-F.30) and the log's byte-level contract."""

from __future__ import annotations

import pytest
from controller_kit import (
    alter_partition,
    call,
    changes,
    heartbeat,
    reencodes,
    register,
    replay_cluster,
    replayed,
)

from kipwire.codec import ApiKey, ErrorCode, decode_record
from kipwire.mockbroker.controller import Controller, Semantics


def reassign(ctl, replicas):
    """AlterPartitionReassignments for t-0; returns the partition's error code."""
    resp = call(
        ctl,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        0,
        {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": replicas}]}]},
    )
    return resp.responses[0].partitions[0].error_code


def test_f27_every_change_bumps_partition_epoch_leader_field_bumps_leader_epoch() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    alter_partition(ctl, [1, 2])
    p = ctl.partition("t", 0)
    assert (p.leader_epoch, p.partition_epoch) == (100, 201)
    ctl.append("PartitionChangeRecord", {"partition_id": 0, "topic_id": p.topic_id, "leader": 1})
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (1, 101, 202)


def test_f28_replica_removal_bumps_leader_epoch_with_the_same_leader() -> None:
    ctl = replay_cluster(replicas=[1, 2, 3], isr=[1, 2, 3])
    start = ctl.end_offset
    assert reassign(ctl, [1, 2]) == ErrorCode.NONE
    rec = changes(ctl, start)[0]
    assert rec["leader"] == 1 and rec["replicas"] == [1, 2]
    assert ctl.partition("t", 0).leader_epoch == 101


@pytest.mark.parametrize(("mv", "bump"), [(11, True), (12, False), (27, False)])
def test_f28_isr_shrink_bumps_leader_epoch_only_before_3_6(mv: int, bump: bool) -> None:
    ctl = replay_cluster(isr=[1, 2, 3], metadata_version=mv, elr_enabled=mv >= 23)
    start = ctl.end_offset
    alter_partition(ctl, [1, 2])
    rec = changes(ctl, start)[0]
    assert (rec["leader"] == 1) is bump
    assert ctl.partition("t", 0).leader_epoch == (101 if bump else 100)


def test_f28_expansion_and_elr_only_changes_bump_partition_epoch_only() -> None:
    ctl = replay_cluster(isr=[1, 2], metadata_version=11, elr_enabled=False)
    alter_partition(ctl, [1, 2, 3])
    assert ctl.partition("t", 0).leader_epoch == 100
    ctl = replay_cluster(isr=[1, 2], elr=[3], min_isr=3, fenced=(3,))
    register(ctl, 3, generation=1)  # unclean restart: an ELR-only change
    assert ctl.partition("t", 0).elr == []
    assert (ctl.partition("t", 0).leader_epoch, ctl.partition("t", 0).partition_epoch) == (100, 201)


def test_f29_null_fields_mean_unchanged_and_no_op_records_are_dropped() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    start = ctl.end_offset
    alter_partition(ctl, [1, 2])
    rec = changes(ctl, start)[0]
    assert rec["leader"] == -2 and rec["replicas"] is None and rec["leader_recovery_state"] == -1
    assert rec["eligible_leader_replicas"] is None and rec["last_known_elr"] is None


@pytest.mark.parametrize(("mv", "version"), [(16, 0), (17, 1), (22, 1), (23, 2), (27, 2)])
def test_f29_record_versions_follow_the_metadata_version(mv: int, version: int) -> None:
    ctl = replay_cluster(isr=[1, 2, 3], metadata_version=mv, elr_enabled=False)
    start = ctl.end_offset
    alter_partition(ctl, [1, 2])
    assert ctl.log[start].name == "PartitionChangeRecord" and ctl.log[start].version == version


def test_f29_partition_record_v2_carries_empty_elr_fields_with_elr_off() -> None:
    ctl = Controller()
    register(ctl, 1)
    heartbeat(ctl, 1)
    call(
        ctl,
        ApiKey.CREATE_TOPICS,
        7,
        {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1}]},
    )
    entry = [e for e in ctl.log if e.name == "PartitionRecord"][0]
    assert entry.version == 2
    assert entry.record.eligible_leader_replicas == [] and entry.record.last_known_elr == []


def test_f30_reassignment_completes_once_every_target_is_in_the_isr() -> None:
    ctl = replay_cluster(brokers=(1, 2, 3, 4), replicas=[1, 2, 3], isr=[1, 2, 3], min_isr=2)
    assert reassign(ctl, [1, 2, 4]) == ErrorCode.NONE
    p = ctl.partition("t", 0)
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ([1, 2, 4, 3], [4], [3])
    listed = call(ctl, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None})
    assert listed.topics[0].partitions[0].adding_replicas == [4]
    alter_partition(ctl, [1, 2, 3])  # 4 not yet in: still in progress
    assert ctl.partition("t", 0).adding_replicas == [4]
    alter_partition(ctl, [1, 2, 3, 4])
    p = ctl.partition("t", 0)
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == (
        [1, 2, 4],
        [1, 2, 4],
        [],
        [],
    )
    assert p.elr == []
    assert call(ctl, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None}).topics == []


def test_f30_cancel_without_original_replica_in_isr_needs_unclean() -> None:
    for unclean, code in ((False, ErrorCode.INVALID_REPLICA_ASSIGNMENT), (True, ErrorCode.NONE)):
        ctl = replay_cluster(brokers=(1, 2, 3, 4), replicas=[1], isr=[1], unclean=unclean)
        assert reassign(ctl, [4]) == ErrorCode.NONE
        ctl.fence(1)
        ctl.append(
            "PartitionChangeRecord",
            {
                "partition_id": 0,
                "topic_id": ctl.partition("t", 0).topic_id,
                "isr": [4],
                "leader": 4,
            },
        )
        assert reassign(ctl, None) == code
        if unclean:
            assert ctl.partition("t", 0).replicas == [1]


def test_f30_cancel_and_errors() -> None:
    ctl = replay_cluster(brokers=(1, 2, 3, 4), replicas=[1, 2], isr=[1, 2])
    assert reassign(ctl, None) == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert reassign(ctl, [1, 9]) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reassign(ctl, [1, 1]) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reassign(ctl, [1, 3]) == ErrorCode.NONE
    assert reassign(ctl, None) == ErrorCode.NONE
    p = ctl.partition("t", 0)
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ([1, 2], [], [])


def test_log_records_reencode_byte_identically_and_replay_to_the_same_state() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], min_isr=2)
    alter_partition(ctl, [1, 2])
    ctl.fence(2)
    ctl.fence(1)
    assert reencodes(ctl)
    assert replayed(ctl).state.snapshot() == ctl.state.snapshot()
    assert [decode_record(e.data)[0] for e in ctl.records_since(3)] == [e.name for e in ctl.log[3:]]


@pytest.mark.parametrize(
    ("semantics", "version"), [(Semantics.KAFKA_4_4, 4), (Semantics.KAFKA_4_1, 3)]
)
def test_register_broker_record_version_follows_the_release(
    semantics: Semantics, version: int
) -> None:
    # MetadataVersion#registerBrokerRecordVersion: v4 (CordonedLogDirs) from 4.3-IV0 (level 30)
    ctl = Controller(semantics=semantics)
    register(ctl, 1)
    (entry,) = [e for e in ctl.log if e.name == "RegisterBrokerRecord"]
    assert entry.version == version
    # null until the broker's heartbeats report any (the mock's never do)
    assert entry.record.get("cordoned_log_dirs") is None
