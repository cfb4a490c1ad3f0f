"""ELR and LastKnownElr (kip-rules D.12-D.16, D.19) through the public API."""

from __future__ import annotations

import pytest
from controller_kit import (
    ELR,
    alter_partition,
    call,
    changes,
    heartbeat,
    names,
    register,
    replay_cluster,
    set_config,
    state_of,
)

from kipwire.codec import (
    AlterConfigOp,
    ApiKey,
    ConfigResourceType,
    ElectionType,
    ErrorCode,
    LeaderRecoveryState,
)
from kipwire.mockbroker.controller import Semantics


def test_d12_step_order_unclean_election_clears_the_elr_the_shrink_computed() -> None:
    # Step 2 puts 2 into the ELR, step 3 elects 3 uncleanly, step 5 then clears the ELR.
    ctl = replay_cluster(isr=[1, 2], min_isr=3, unclean=True, fenced=(1,), leader=2)
    ctl.append("BrokerRegistrationChangeRecord", {"broker_id": 2, "broker_epoch": 102, "fenced": 1})
    start = ctl.end_offset
    ctl.fence(2)
    rec = changes(ctl, start)[0]
    assert rec["leader"] == 3 and rec["isr"] == [3]
    assert rec["eligible_leader_replicas"] is None or rec["eligible_leader_replicas"] == []
    assert rec["leader_recovery_state"] == LeaderRecoveryState.RECOVERING
    assert state_of(ctl) == ([3], [], [], 3)


def test_d12_step_order_reassignment_completes_before_the_elr_is_computed() -> None:
    ctl = replay_cluster(replicas=[1, 2], isr=[1, 2], min_isr=2)
    call(
        ctl,
        45,
        0,
        {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1, 3]}]}]},
    )
    start = ctl.end_offset
    alter_partition(ctl, [1, 2, 3])
    rec = changes(ctl, start)[0]
    # Completion drops 2 (removing) first, so the ISR [1, 3] meets min ISR: no ELR.
    assert rec["isr"] == [1, 3] and rec["replicas"] == [1, 3]
    assert rec["eligible_leader_replicas"] is None
    assert ctl.partition("t", 0).elr == []


def test_d13_target_elr_at_or_above_min_isr_is_empty() -> None:
    ctl = replay_cluster(brokers=(1, 2, 3, 4), isr=[1, 2], elr=[3, 4], min_isr=3)
    alter_partition(ctl, [1, 2, 3])
    assert state_of(ctl)[:3] == ([1, 2, 3], [], [])


def test_d13_target_elr_below_min_isr_is_current_elr_and_isr_minus_target() -> None:
    ctl = replay_cluster(brokers=(1, 2, 3, 4), isr=[1, 2, 3], elr=[4], min_isr=4)
    start = ctl.end_offset
    alter_partition(ctl, [1])
    assert changes(ctl, start)[0]["eligible_leader_replicas"] == [2, 3, 4]
    assert ctl.partition("t", 0).elr == [2, 3, 4]


def test_d13_unclean_shutdown_replicas_are_left_out_of_the_elr() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], min_isr=3)

    register(ctl, 3, generation=1)  # a new incarnation: the unclean path under 4.1
    assert ctl.partition("t", 0).isr == [1, 2]
    assert ctl.partition("t", 0).elr == []


def test_d13_effective_min_isr_is_capped_by_the_replica_count() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], min_isr=5)
    alter_partition(ctl, [1, 2, 3])
    alter_partition(ctl, [1, 2])
    # min(5, RF 3) = 3: [1, 2] is below it, so 3 joins the ELR.
    assert ctl.partition("t", 0).elr == [3]


def test_d14_elr_disabled_never_writes_elr() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], min_isr=3, elr_enabled=False)
    start = ctl.end_offset
    alter_partition(ctl, [1])
    rec = changes(ctl, start)[0]
    assert rec["eligible_leader_replicas"] is None and rec["last_known_elr"] is None
    assert ctl.partition("t", 0).elr == []


def test_d14_unclean_election_forces_elr_and_last_known_elr_empty() -> None:
    ctl = replay_cluster(isr=[1], elr=[2], min_isr=3, fenced=(2,))
    start = ctl.end_offset
    ctl.fence(1)  # ISR [], ELR [1, 2], leaderless
    assert state_of(ctl) == ([], [1, 2], [1], -1)
    resp = call(
        ctl,
        ApiKey.ELECT_LEADERS,
        2,
        {
            "election_type": ElectionType.UNCLEAN,
            "topic_partitions": [{"topic": "t", "partitions": [0]}],
        },
    )
    assert resp.replica_election_results[0].partition_result[0].error_code == ErrorCode.NONE
    rec = changes(ctl, start)[-1]
    assert rec["leader"] == 3 and rec["isr"] == [3]
    assert rec["eligible_leader_replicas"] == [] and rec["last_known_elr"] == []


def test_d15_empty_isr_only_with_elr_enabled() -> None:
    on = replay_cluster(isr=[1], min_isr=2)
    on.fence(1)
    assert on.partition("t", 0).isr == [] and on.partition("t", 0).leader == -1
    off = replay_cluster(isr=[1], min_isr=2, elr_enabled=False)
    off.fence(1)
    assert off.partition("t", 0).isr == [1] and off.partition("t", 0).leader == -1


def test_d16_last_known_leader_written_when_isr_empties() -> None:
    ctl = replay_cluster(isr=[1], min_isr=2)
    start = ctl.end_offset
    ctl.fence(1)
    assert changes(ctl, start)[0]["last_known_elr"] == [1]
    assert ctl.partition("t", 0).last_known_elr == [1]


def test_d16_last_known_leader_kept_while_leaderless_then_cleared_on_a_leader() -> None:
    ctl = replay_cluster(isr=[1], min_isr=2, fenced=(2, 3))
    ctl.fence(1)
    assert state_of(ctl) == ([], [1], [1], -1)
    start = ctl.end_offset
    ctl.append(
        "BrokerRegistrationChangeRecord", {"broker_id": 2, "broker_epoch": 102, "fenced": -1}
    )
    assert ctl.partition("t", 0).last_known_elr == [1]

    heartbeat(ctl, 1)  # 1 comes back: ELR election, LastKnownElr is history
    assert changes(ctl, start)[-1]["last_known_elr"] == []
    assert state_of(ctl) == ([1], [], [], 1)


def test_d16_set_semantics_keeps_former_elr_members() -> None:
    ctl = replay_cluster(Semantics.KIP, isr=[1, 2], elr=[3], min_isr=3)

    register(ctl, 3, generation=1)  # 3 leaves the ELR uncleanly: KIP keeps it as last known
    p = ctl.partition("t", 0)
    assert p.elr == [] and p.last_known_elr == [3]


def test_d19_min_isr_change_writes_clear_elr_record_in_4x() -> None:
    ctl = replay_cluster(isr=[1], elr=[2, 3], last_known_elr=[], min_isr=3)
    start = ctl.end_offset
    assert set_config(ctl, "min.insync.replicas", "2").responses[0].error_code == ErrorCode.NONE
    assert names(ctl, start) == ["ConfigRecord", "ClearElrRecord"]
    assert ctl.log[-1].record.topic_name == "t"
    p = ctl.partition("t", 0)
    assert p.elr == [] and p.partition_epoch == 201 and p.leader_epoch == 100


def test_d19_cluster_level_change_clears_every_topic_with_empty_name() -> None:
    ctl = replay_cluster(isr=[1], elr=[2], min_isr=3)
    start = ctl.end_offset
    set_config(ctl, "min.insync.replicas", "2", topic=None)
    assert names(ctl, start) == ["ConfigRecord", "ClearElrRecord"]
    assert ctl.log[-1].record.topic_name == ""
    assert ctl.partition("t", 0).elr == []


def test_d19_kafka_3_9_applies_the_new_min_isr_lazily() -> None:
    ctl = replay_cluster(Semantics.KAFKA_3_9, isr=[1], elr=[2, 3], min_isr=3)
    start = ctl.end_offset
    set_config(ctl, "min.insync.replicas", "1")
    assert names(ctl, start) == ["ConfigRecord"]
    assert ctl.partition("t", 0).elr == [2, 3]
    alter_partition(ctl, [1])  # nothing to change: the ELR waits for the next real change
    alter_partition(ctl, [1, 2])
    assert ctl.partition("t", 0).elr == []


def test_d19_no_clear_elr_record_while_elr_is_off() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], elr_enabled=False)
    start = ctl.end_offset
    set_config(ctl, "min.insync.replicas", "2")
    assert names(ctl, start) == ["ConfigRecord"]


def test_d19_broker_level_min_isr_and_cluster_delete_refused_with_elr() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    resp = call(
        ctl,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": ConfigResourceType.BROKER,
                    "resource_name": "1",
                    "configs": [
                        {
                            "name": "min.insync.replicas",
                            "config_operation": AlterConfigOp.SET,
                            "value": "2",
                        }
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    assert resp.responses[0].error_code == ErrorCode.INVALID_CONFIG
    assert set_config(ctl, "min.insync.replicas", None, topic=None).responses[0].error_code == (
        ErrorCode.INVALID_CONFIG
    )


def test_d19_enabling_elr_pins_a_cluster_min_isr_config() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], elr_enabled=False)
    start = ctl.end_offset
    resp = call(
        ctl,
        57,
        1,
        {"feature_updates": [{"feature": ELR, "max_version_level": 1, "upgrade_type": 1}]},
    )
    assert resp.error_code == ErrorCode.NONE
    assert names(ctl, start) == ["FeatureLevelRecord", "ConfigRecord"]
    assert ctl.state.config(ConfigResourceType.BROKER, "", "min.insync.replicas") == "1"
    assert ctl.state.elr_enabled


@pytest.mark.parametrize("semantics", [Semantics.KAFKA_4_0, Semantics.KAFKA_4_1])
def test_d19_same_topic_value_writes_nothing(semantics: Semantics) -> None:
    # real Kafka 4.1 (tests/realkafka kip966 story, "same min isr"): an unchanged topic config
    # writes no ConfigRecord, so no ClearElrRecord follows and the ELR stays
    ctl = replay_cluster(semantics, isr=[1], elr=[2], min_isr=3)
    start = ctl.end_offset
    set_config(ctl, "min.insync.replicas", "3")
    assert names(ctl, start) == []
    assert ctl.partition("t", 0).elr == [2]


@pytest.mark.parametrize("semantics", [Semantics.KAFKA_4_0, Semantics.KAFKA_4_1])
def test_d19_same_cluster_value_still_clears(semantics: Semantics) -> None:
    # cluster and broker configs are always written (KAFKA-14136), so the same value clears
    ctl = replay_cluster(semantics, isr=[1], elr=[2])
    cluster_min_isr = {
        "resource_type": ConfigResourceType.BROKER,
        "resource_name": "",
        "name": "min.insync.replicas",
    }
    ctl.append("ConfigRecord", {**cluster_min_isr, "value": "3"})
    set_config(ctl, "min.insync.replicas", "3", topic=None)
    assert ctl.log[-1].name == "ClearElrRecord"
    assert ctl.partition("t", 0).elr == []


@pytest.mark.parametrize(
    ("semantics", "records"),
    [
        (
            Semantics.KAFKA_4_1,
            ["TopicRecord", "ConfigRecord", "ClearElrRecord", "PartitionRecord", "PartitionRecord"],
        ),
        (
            Semantics.KAFKA_3_9,
            ["TopicRecord", "ConfigRecord", "PartitionRecord", "PartitionRecord"],
        ),
    ],
)
def test_d19_a_topic_created_with_min_isr_gets_a_clear_elr_record_as_kafka_4_1_writes(
    semantics: Semantics, records: list[str]
) -> None:
    # tests/realkafka/data/kip966_kafka_4_1.json: Kafka 4.1 wrote exactly this order.
    ctl = replay_cluster(semantics)
    start = ctl.end_offset
    topic = {"name": "created", "num_partitions": 2, "replication_factor": 3}
    topic["configs"] = [{"name": "min.insync.replicas", "value": "2"}]
    assert (
        call(ctl, ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 0})
        .topics[0]
        .error_code
        == ErrorCode.NONE
    )
    assert names(ctl, start) == records
