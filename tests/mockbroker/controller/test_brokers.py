"""Broker lifecycle (kip-rules D.17, D.18): fence, unfence, controlled shutdown, unclean
shutdown, unregistration, registration and heartbeats."""

from __future__ import annotations

import uuid

import pytest
from controller_kit import (
    call,
    changes,
    heartbeat,
    names,
    register,
    replay_cluster,
    state_of,
)

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker.controller import Controller, Semantics


def test_d17_fence_removes_from_isr_and_keeps_a_fenced_elr_member() -> None:
    ctl = replay_cluster(isr=[1, 2], elr=[3], min_isr=3, fenced=(3,))
    start = ctl.end_offset
    ctl.fence(2)
    assert names(ctl, start) == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    assert state_of(ctl) == ([1], [2, 3], [], 1)
    start = ctl.end_offset
    ctl.append(
        "BrokerRegistrationChangeRecord", {"broker_id": 2, "broker_epoch": 102, "fenced": -1}
    )
    ctl.fence(3)  # 3 is only in the ELR: no partition change
    assert changes(ctl, start) == []
    assert ctl.partition("t", 0).elr == [2, 3]


def test_d17_fence_of_the_leader_elects_the_next_isr_member_in_assignment_order() -> None:
    ctl = replay_cluster(replicas=[1, 3, 2], isr=[1, 2, 3])
    ctl.fence(1)
    assert ctl.partition("t", 0).leader == 3


def test_d17_unfence_elects_for_leaderless_partitions_only() -> None:
    ctl = replay_cluster(isr=[1], min_isr=2, fenced=(2, 3))
    ctl.fence(1)
    assert state_of(ctl)[3] == -1
    start = ctl.end_offset
    heartbeat(ctl, 2)  # unfences 2, which is not in ISR or ELR: nothing to elect
    assert names(ctl, start) == ["BrokerRegistrationChangeRecord"]
    heartbeat(ctl, 1)
    assert state_of(ctl) == ([1], [], [], 1)


def test_d17_controlled_shutdown_leaves_isr_and_leadership() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    heartbeat(ctl, 1)
    start = ctl.end_offset
    resp = heartbeat(ctl, 1, want_shut_down=True)
    assert not resp.should_shut_down
    assert names(ctl, start) == ["BrokerRegistrationChangeRecord", "PartitionChangeRecord"]
    assert ctl.broker(1).in_controlled_shutdown
    assert state_of(ctl) == ([2, 3], [], [], 2)
    resp = heartbeat(ctl, 1, want_shut_down=True)
    assert resp.should_shut_down and resp.is_fenced


def test_d17_controlled_shutdown_of_a_broker_leading_nothing_stops_at_once() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    heartbeat(ctl, 3)
    resp = heartbeat(ctl, 3, want_shut_down=True)
    assert resp.should_shut_down and ctl.broker(3).fenced
    assert ctl.partition("t", 0).isr == [1, 2]


def test_d17_unclean_shutdown_handles_isr_then_elr_partitions() -> None:
    ctl = replay_cluster(isr=[1, 2], elr=[3], min_isr=3, fenced=(3,))
    ctl.append("TopicRecord", {"name": "u", "topic_id": uuid.UUID(int=77)})
    ctl.append(
        "PartitionRecord",
        {
            "partition_id": 0,
            "topic_id": uuid.UUID(int=77),
            "replicas": [3, 1],
            "isr": [3, 1],
            "leader": 1,
            "leader_epoch": 0,
            "partition_epoch": 0,
            "eligible_leader_replicas": [],
            "last_known_elr": [],
        },
    )
    start = ctl.end_offset
    register(ctl, 3, generation=1)
    recs = changes(ctl, start)
    # First the partition with 3 in its ISR (u-0), then the one with 3 in its ELR (t-0).
    assert [r["topic_id"].int for r in recs] == [77, ctl.partition("t", 0).topic_id.int]
    assert ctl.partition("u", 0).isr == [1] and ctl.partition("u", 0).elr == []
    assert ctl.partition("t", 0).elr == []
    assert names(ctl, start)[-1] == "RegisterBrokerRecord"


def test_d17_unregister_applies_to_isr_and_elr() -> None:
    ctl = replay_cluster(isr=[1, 2], elr=[3], min_isr=3)
    start = ctl.end_offset
    assert call(ctl, ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 2}).error_code == ErrorCode.NONE
    # The ISR pass drops 2 (into the ELR, the ISR being under min ISR); the record follows.
    assert names(ctl, start) == ["PartitionChangeRecord", "UnregisterBrokerRecord"]
    assert state_of(ctl)[:2] == ([1], [2, 3])
    start = ctl.end_offset
    assert call(ctl, ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 3}).error_code == ErrorCode.NONE
    # The ELR pass re-runs the election only: as in Kafka, nobody leaves an ELR for it.
    assert names(ctl, start) == ["UnregisterBrokerRecord"]
    assert ctl.partition("t", 0).elr == [2, 3]
    with pytest.raises(KeyError):
        ctl.broker(3)
    assert call(ctl, ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 3}).error_code == (
        ErrorCode.BROKER_ID_NOT_REGISTERED
    )


def test_d18_new_incarnation_cleanup_comes_before_registration_and_starts_fenced() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], elr_enabled=False)
    old = ctl.broker(2).epoch
    start = ctl.end_offset
    resp = register(ctl, 2, generation=1)
    assert resp.error_code == ErrorCode.NONE
    assert names(ctl, start) == [
        "PartitionChangeRecord",
        "BrokerRegistrationChangeRecord",
        "RegisterBrokerRecord",
    ]
    b = ctl.broker(2)
    assert b.fenced and b.epoch == resp.broker_epoch and b.epoch != old
    assert ctl.partition("t", 0).isr == [1, 3]


@pytest.mark.parametrize(
    ("semantics", "version", "previous", "clean"),
    [
        (Semantics.KAFKA_3_9, 4, "same", False),
        (Semantics.KAFKA_4_0, 4, "same", True),
        (Semantics.KAFKA_4_1, 3, "same", True),
        (Semantics.KAFKA_4_1, 2, "same", False),
        (Semantics.KAFKA_4_1, 4, "other", False),
        (Semantics.KAFKA_4_1, 4, "none", False),
    ],
)
def test_d18_clean_shutdown_detection(
    semantics: Semantics, version: int, previous: str, clean: bool
) -> None:
    ctl = replay_cluster(semantics, isr=[1, 2], elr=[3], min_isr=3, fenced=(3,))
    epoch = {"same": 103, "other": 99, "none": -1}[previous]
    register(ctl, 3, generation=1, previous_epoch=epoch, version=version)
    # Clean: the fence path over ISR partitions, so the ELR keeps 3; unclean: 3 leaves it.
    assert (3 in ctl.partition("t", 0).elr) is clean


def test_d18_duplicate_registration_with_a_live_session() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    # Known only from replay: no session, so a new incarnation may register.
    assert register(ctl, 3, generation=1).error_code == ErrorCode.NONE
    heartbeat(ctl, 3)
    assert not ctl.broker(3).fenced
    assert register(ctl, 3, generation=2).error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    # The same incarnation may retry.
    assert register(ctl, 3, generation=1).error_code == ErrorCode.NONE
    # After the session times out a new incarnation gets in.
    heartbeat(ctl, 3)
    ctl.tick(ctl.now_ms + ctl.session_timeout_ms + 1)
    assert ctl.broker(3).fenced
    assert register(ctl, 3, generation=2).error_code == ErrorCode.NONE


def test_d18_registration_errors() -> None:
    ctl = Controller()
    body = {
        "broker_id": 1,
        "cluster_id": "other",
        "incarnation_id": uuid.uuid4(),
        "listeners": [],
        "features": [],
        "rack": None,
    }
    assert (
        call(ctl, ApiKey.BROKER_REGISTRATION, 0, body).error_code
        == ErrorCode.INCONSISTENT_CLUSTER_ID
    )
    body["cluster_id"] = "kipwire"
    body["features"] = [
        {"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 20}
    ]
    assert (
        call(ctl, ApiKey.BROKER_REGISTRATION, 0, body).error_code == ErrorCode.UNSUPPORTED_VERSION
    )
    assert ctl.end_offset == 0


def test_heartbeat_unfences_only_once_caught_up_to_the_registration() -> None:
    ctl = Controller()
    epoch = register(ctl, 1).broker_epoch
    resp = heartbeat(ctl, 1, offset=epoch - 1)
    assert resp.is_fenced and not resp.is_caught_up
    resp = heartbeat(ctl, 1, want_fence=True)
    assert resp.is_fenced
    resp = heartbeat(ctl, 1, offset=epoch)
    assert not resp.is_fenced and resp.is_caught_up


def test_heartbeat_with_a_stale_epoch() -> None:
    ctl = replay_cluster()
    resp = call(
        ctl,
        63,
        1,
        {
            "broker_id": 1,
            "broker_epoch": 5,
            "current_metadata_offset": 0,
            "want_fence": False,
            "want_shut_down": False,
        },
    )
    assert resp.error_code == ErrorCode.STALE_BROKER_EPOCH


def test_session_timeout_fences_through_tick() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    for b in (1, 2, 3):
        heartbeat(ctl, b)
    ctl.tick(5000)
    heartbeat(ctl, 1)
    heartbeat(ctl, 2)
    fenced = ctl.tick(9500)
    assert [e.name for e in fenced] == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    assert ctl.broker(3).fenced and not ctl.broker(1).fenced
    assert ctl.partition("t", 0).isr == [1, 2]


def test_want_fence_fences_an_unfenced_broker() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    heartbeat(ctl, 2)
    resp = heartbeat(ctl, 2, want_fence=True)
    assert resp.is_fenced and not resp.should_shut_down
    assert ctl.partition("t", 0).isr == [1, 3]


def test_broker_change_record_versions_follow_kafka() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    heartbeat(ctl, 1)
    heartbeat(ctl, 1, want_shut_down=True)  # the leader: a controlled shutdown
    ctl.fence(3)
    got = [
        (e.version, dict(e.record)) for e in ctl.log if e.name == "BrokerRegistrationChangeRecord"
    ]
    assert [(v, r.get("in_controlled_shutdown", 0), r["fenced"]) for v, r in got] == [
        (1, 1, 0),
        (0, 0, 1),
    ]
    old = replay_cluster(isr=[1, 2, 3], metadata_version=5, elr_enabled=False)
    old.fence(3)
    assert old.log[-1].name == "FenceBrokerRecord"


@pytest.mark.parametrize(
    ("semantics", "served"), [(Semantics.KAFKA_4_4, True), (Semantics.KAFKA_4_1, False)]
)
def test_heartbeat_v2_cordoned_log_dirs_accepted_under_4_4(
    semantics: Semantics, served: bool
) -> None:
    ctl = replay_cluster(semantics)
    start = ctl.end_offset
    resp = ctl.handle(
        ApiKey.BROKER_HEARTBEAT,
        2,
        {
            "broker_id": 1,
            "broker_epoch": ctl.broker(1).epoch,
            "current_metadata_offset": ctl.end_offset,
            "want_fence": False,
            "want_shut_down": False,
            "cordoned_log_dirs": [uuid.UUID(int=7)],
        },
    )
    if not served:  # Kafka 4.1's controller stops at v1
        assert resp["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        return
    assert resp["error_code"] == ErrorCode.NONE and not resp["is_fenced"]
    # difference from Kafka 4.4, which records the cordoned dirs (KIP-1066): the mock's brokers
    # have no log dirs to keep new replicas off, so nothing is written
    assert ctl.end_offset == start
