"""Helpers for the controller tests: build a cluster by replay, or through the APIs.

`call` sends a request the way the wire would: the body is encoded and decoded as the node
decodes it, and the response the Controller answers is encoded and decoded as a client reads
it, so a test sees what crosses the wire and a body or answer that does not encode fails.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from kipwire.codec import (
    AlterConfigOp,
    ApiKey,
    ConfigResourceType,
    LeaderRecoveryState,
    decode_record,
    decode_request,
    decode_response,
    encode_record,
    encode_request,
    encode_response,
    message,
)
from kipwire.mockbroker.controller import Controller, Semantics
from kipwire.mockbroker.controller.features import LATEST_METADATA_VERSION

TOPIC_ID = uuid.UUID("00000000-0000-4000-8000-000000000001")
ELR = "eligible.leader.replicas.version"
PRESETS = [
    Semantics.KAFKA_3_9,
    Semantics.KAFKA_4_0,
    Semantics.KAFKA_4_1,
    Semantics.KAFKA_4_4,
    Semantics.KIP,
]


def call(ctl: Controller, api_key: int, version: int, body: dict) -> Any:
    """One request through the wire's encodings: decoded as the node decodes it, answered,
    and the answer decoded as a client reads it."""
    request = decode_request(encode_request(api_key, version, body)).body
    response = ctl.handle(api_key, version, request)
    return decode_response(
        encode_response(api_key, version, response, correlation_id=0), api_key, version
    ).body


def wire_response(name: str, version: int, body: dict) -> Any:
    """A response a broker sends the controller, as the controller's channel decodes it."""
    codec = message(name, version)
    return codec.parse(codec.build(body))


def incarnation(broker_id: int, generation: int = 0) -> uuid.UUID:
    """A stable incarnation id per (broker, restart generation)."""
    return uuid.UUID(int=(broker_id << 32) | (generation + 1))


def replay_cluster(
    semantics: Semantics = Semantics.KAFKA_4_1,
    *,
    brokers: tuple[int, ...] = (1, 2, 3),
    fenced: tuple[int, ...] = (),
    replicas: list[int] | None = None,
    isr: list[int] | None = None,
    elr: list[int] | None = None,
    last_known_elr: list[int] | None = None,
    leader: int | None = None,
    min_isr: int | None = None,
    elr_enabled: bool = True,
    unclean: bool = False,
    leader_epoch: int = 100,
    partition_epoch: int = 200,
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED,
    metadata_version: int | None = None,
    **overrides: Any,
) -> Controller:
    """A controller loaded by replay, with one topic "t" of one partition."""
    if overrides:
        semantics = replace(semantics, **overrides)
    ctl = Controller(semantics=semantics, cluster_id="kipwire")
    if metadata_version is not None:
        ctl.replay(
            "FeatureLevelRecord", {"name": "metadata.version", "feature_level": metadata_version}
        )
    if elr_enabled:
        ctl.replay("FeatureLevelRecord", {"name": ELR, "feature_level": 1})
    for b in brokers:
        ctl.replay(
            "RegisterBrokerRecord",
            {
                "broker_id": b,
                "broker_epoch": 100 + b,
                "incarnation_id": incarnation(b),
                "fenced": b in fenced,
            },
        )
    replicas = list(brokers) if replicas is None else replicas
    isr = list(replicas) if isr is None else isr
    leader = (isr[0] if isr else -1) if leader is None else leader
    ctl.replay("TopicRecord", {"name": "t", "topic_id": TOPIC_ID})
    record = {
        "partition_id": 0,
        "topic_id": TOPIC_ID,
        "replicas": replicas,
        "isr": isr,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "partition_epoch": partition_epoch,
        "leader_recovery_state": leader_recovery_state,
    }
    if ctl.state.metadata_version >= 23:
        record["eligible_leader_replicas"] = elr or []
        record["last_known_elr"] = last_known_elr or []
    ctl.replay("PartitionRecord", record)
    if min_isr is not None:
        ctl.replay(
            "ConfigRecord",
            {
                "resource_type": ConfigResourceType.TOPIC,
                "resource_name": "t",
                "name": "min.insync.replicas",
                "value": str(min_isr),
            },
        )
    if unclean:
        ctl.replay(
            "ConfigRecord",
            {
                "resource_type": ConfigResourceType.TOPIC,
                "resource_name": "t",
                "name": "unclean.leader.election.enable",
                "value": "true",
            },
        )
    return ctl


def new_records(ctl: Controller, start: int) -> list[tuple[str, dict]]:
    """The records appended since `start`, as (name, plain dict) pairs."""
    return [(e.name, dict(e.record)) for e in ctl.log[start:]]


def names(ctl: Controller, start: int) -> list[str]:
    """The names of the records appended since `start`."""
    return [e.name for e in ctl.log[start:]]


def changes(ctl: Controller, start: int) -> list[dict]:
    """The PartitionChangeRecords appended since `start`."""
    return [dict(e.record) for e in ctl.log[start:] if e.name == "PartitionChangeRecord"]


def register(
    ctl: Controller,
    broker_id: int,
    generation: int = 0,
    previous_epoch: int = -1,
    version: int = 4,
) -> Any:
    """BrokerRegistration for a broker; returns the response."""
    body = {
        "broker_id": broker_id,
        "cluster_id": ctl.cluster_id,
        "incarnation_id": incarnation(broker_id, generation),
        "listeners": [
            {
                "name": "PLAINTEXT",
                "host": "127.0.0.1",
                "port": 9000 + broker_id,
                "security_protocol": 0,
            }
        ],
        "features": [
            {
                "name": "metadata.version",
                "min_supported_version": 1,
                # a broker of the controller's release: it supports that release's latest level
                "max_supported_version": LATEST_METADATA_VERSION[ctl.semantics.release],
            }
        ],
        "rack": None,
    }
    if version >= 3:
        body["previous_broker_epoch"] = previous_epoch
    return call(ctl, ApiKey.BROKER_REGISTRATION, version, body)


def heartbeat(
    ctl: Controller,
    broker_id: int,
    *,
    want_fence: bool = False,
    want_shut_down: bool = False,
    offset: int | None = None,
) -> Any:
    """BrokerHeartbeat with the broker's registered epoch, caught up to the log by default."""
    return call(
        ctl,
        ApiKey.BROKER_HEARTBEAT,
        1,
        {
            "broker_id": broker_id,
            "broker_epoch": ctl.broker(broker_id).epoch,
            "current_metadata_offset": ctl.end_offset if offset is None else offset,
            "want_fence": want_fence,
            "want_shut_down": want_shut_down,
        },
    )


def alter_partition(
    ctl: Controller,
    isr: list[int],
    *,
    version: int = 3,
    sender: int | None = None,
    leader_epoch: int | None = None,
    partition_epoch: int | None = None,
    epochs: dict[int, int] | None = None,
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED,
    broker_epoch: int | None = None,
    topic: str = "t",
    index: int = 0,
) -> Any:
    """AlterPartition for a partition (t-0 by default) from its leader, with its current
    epochs unless told otherwise."""
    p = ctl.partition(topic, index)
    sender = p.leader if sender is None else sender
    part: dict[str, Any] = {
        "partition_index": index,
        "leader_epoch": p.leader_epoch if leader_epoch is None else leader_epoch,
        "partition_epoch": p.partition_epoch if partition_epoch is None else partition_epoch,
    }
    if version >= 1:
        part["leader_recovery_state"] = leader_recovery_state
    if version >= 3:
        epochs = epochs or {}
        part["new_isr_with_epochs"] = [
            {"broker_id": b, "broker_epoch": epochs.get(b, -1)} for b in isr
        ]
    else:
        part["new_isr"] = isr
    data: dict[str, Any] = {"topic_id": p.topic_id} if version >= 2 else {"topic_name": topic}
    data["partitions"] = [part]
    if broker_epoch is None:
        broker_epoch = ctl.broker(sender).epoch if sender in ctl.state.brokers else -1
    return call(
        ctl,
        ApiKey.ALTER_PARTITION,
        version,
        {"broker_id": sender, "broker_epoch": broker_epoch, "topics": [data]},
    )


def partition_error(response: Any) -> int:
    """The error code of the single partition of an AlterPartition response."""
    return response.topics[0].partitions[0].error_code


def set_config(ctl: Controller, name: str, value: str | None, topic: str | None = "t") -> Any:
    """IncrementalAlterConfigs SET (or DELETE when value is None) on a topic or the cluster."""
    return call(
        ctl,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": (
                        ConfigResourceType.TOPIC if topic is not None else ConfigResourceType.BROKER
                    ),
                    "resource_name": topic if topic is not None else "",
                    "configs": [
                        {
                            "name": name,
                            "config_operation": (
                                AlterConfigOp.SET if value is not None else AlterConfigOp.DELETE
                            ),
                            "value": value,
                        }
                    ],
                }
            ],
            "validate_only": False,
        },
    )


def state_of(ctl: Controller) -> tuple:
    """The partition's (isr, elr, last_known_elr, leader) for compact assertions."""
    p = ctl.partition("t", 0)
    return p.isr, p.elr, p.last_known_elr, p.leader


def replayed(ctl: Controller) -> Controller:
    """A fresh controller fed the framed bytes of `ctl`'s whole log."""
    other = Controller(semantics=ctl.semantics, cluster_id=ctl.cluster_id)
    for entry in ctl.log:
        other.append_bytes(entry.data)
    return other


def reencodes(ctl: Controller) -> bool:
    """Every record in the log decodes and encodes back to the same bytes."""
    for entry in ctl.log:
        name, version, record = decode_record(entry.data)
        if encode_record(name, version, record) != entry.data:
            return False
    return True
