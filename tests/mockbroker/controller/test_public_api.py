"""The public API exactly as issue 9 writes it: tools outside the project call these names."""

from __future__ import annotations

import dataclasses
import uuid

from controller_kit import call

from kipwire.codec import ApiKey, ConfigResourceType, ErrorCode, LeaderRecoveryState
from kipwire.mockbroker.controller import Controller, Semantics


def test_the_issue_example_runs_as_written() -> None:
    topic_id = uuid.uuid4()
    ctl = Controller(semantics=Semantics.KAFKA_4_1, cluster_id="kipwire")
    assert ctl.cluster_id == "kipwire"
    ctl.replay(
        "FeatureLevelRecord", {"name": "eligible.leader.replicas.version", "feature_level": 1}
    )
    for b in (1, 2, 3):
        ctl.replay(
            "RegisterBrokerRecord", {"broker_id": b, "broker_epoch": 100 + b, "fenced": False}
        )
    ctl.replay("TopicRecord", {"name": "t", "topic_id": topic_id})
    ctl.replay(
        "PartitionRecord",
        {
            "partition_id": 0,
            "topic_id": topic_id,
            "replicas": [1, 2, 3],
            "isr": [1, 2, 3],
            "leader": 1,
            "leader_epoch": 100,
            "partition_epoch": 200,
            "eligible_leader_replicas": [],
            "last_known_elr": [],
            "leader_recovery_state": LeaderRecoveryState.RECOVERED,
        },
    )
    ctl.replay(
        "ConfigRecord",
        {
            "resource_type": ConfigResourceType.TOPIC,
            "resource_name": "t",
            "name": "min.insync.replicas",
            "value": "2",
        },
    )
    ctl.replay(
        "ConfigRecord",
        {
            "resource_type": ConfigResourceType.BROKER,
            "resource_name": "",
            "name": "unclean.leader.election.enable",
            "value": "false",
        },
    )
    # handle() takes the request as the node decodes it: `call` goes through the wire's codecs.
    resp = call(
        ctl,
        ApiKey.ALTER_PARTITION,
        3,
        {
            "broker_id": 1,
            "broker_epoch": 101,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": 100,
                            "partition_epoch": 200,
                            "new_isr_with_epochs": [{"broker_id": 1}, {"broker_id": 2}],
                        }
                    ],
                }
            ],
        },
    )
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NONE
    ctl.fence(2)
    ctl.tick(1000)
    entry = ctl.log[-1]
    assert (entry.offset, entry.name, entry.version) == (
        len(ctl.log) - 1,
        "BrokerRegistrationChangeRecord",
        0,
    )
    assert entry.record.broker_id == 2
    p = ctl.partition("t", 0)
    assert (p.replicas, p.isr, p.elr, p.last_known_elr, p.leader) == ([1, 2, 3], [1], [2], [], 1)
    assert (p.leader_epoch, p.partition_epoch, p.leader_recovery_state) == (100, 202, 0)
    assert p.topic_id == topic_id
    b = ctl.broker(2)
    assert (b.epoch, b.fenced, b.in_controlled_shutdown) == (102, True, False)
    assert b.incarnation_id == uuid.UUID(int=0)
    assert ctl.outbox() == []
    assert ctl.metrics()["electable_leaders"] == {"t-0": 2}


def test_semantics_flags_and_presets_have_the_issue_names() -> None:
    flags = {f.name for f in dataclasses.fields(Semantics)}
    assert {
        "last_known_leader_must_be_live",
        "clean_shutdown_detection",
        "clear_elr_on_min_isr_change",
        "last_known_elr",
        "unclean_recovery",
        "recovering_rejects_fetch",
    } <= flags
    variant = dataclasses.replace(Semantics.KAFKA_4_1, unclean_recovery=True)
    assert variant.unclean_recovery and not Semantics.KAFKA_4_1.unclean_recovery
    assert Semantics.KIP.last_known_elr == "set" and Semantics.KAFKA_3_9.last_known_elr == "leader"
    assert (
        Semantics.KIP.recovering_rejects_fetch and not Semantics.KAFKA_4_1.recovering_rejects_fetch
    )
    assert Controller().semantics is Semantics.KAFKA_4_4
    assert (Semantics.KAFKA_4_4.release, Semantics.KAFKA_4_1.release) == ("4.4", "4.1")
