"""Bad requests get the protocol's error codes, never an exception, and write nothing.

Garbage bodies go to `Controller.handle` directly, past the wire: the boundary that decodes a
body a caller did not decode (`apis.decode_at_node_boundary`) must refuse them cleanly."""

from __future__ import annotations

import uuid

import pytest
from construct import Container
from controller_kit import (
    alter_partition,
    call,
    partition_error,
    replay_cluster,
)

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker.controller import Controller, ReplayError, Semantics
from kipwire.mockbroker.controller.apis import SERVED

GARBAGE = [
    None,
    {},
    {"no_such_field": 1},
    {"topics": "not a list"},
    {"broker_id": "x"},
    {"resources": [{"resource_type": "y"}]},
    {"topics": [{"partitions": [None]}]},
]


@pytest.mark.parametrize("api_key", sorted(SERVED))
def test_garbage_bodies_get_error_codes_not_exceptions(api_key: int) -> None:
    ctl = replay_cluster()
    for body in GARBAGE:
        for version in (0, SERVED[api_key].max_version):
            start = ctl.end_offset
            resp = ctl.handle(api_key, version, body)
            assert resp is not None
            if body:
                assert ctl.end_offset == start or api_key == ApiKey.API_VERSIONS


@pytest.mark.parametrize("api_key", sorted(SERVED))
def test_partial_containers_are_completed_not_trusted(api_key: int) -> None:
    ctl = replay_cluster()
    resp = ctl.handle(api_key, SERVED[api_key].max_version, Container(throttle_time_ms=0))
    assert resp is not None


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (ApiKey.ALTER_PARTITION, 4),
        (ApiKey.ALTER_PARTITION, -1),
        (ApiKey.BROKER_REGISTRATION, 9),
        (999, 0),
        (ApiKey.PRODUCE, 0),
    ],
)
def test_versions_and_keys_the_controller_lacks(api_key: int, version: int) -> None:
    resp = Controller().handle(api_key, version, {})
    assert resp["error_code"] == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.parametrize(
    ("semantics", "newest"), [(Semantics.KAFKA_4_4, 5), (Semantics.KAFKA_4_1, 4)]
)
def test_api_versions_too_new_answers_in_v0_with_its_own_range(
    semantics: Semantics, newest: int
) -> None:
    resp = Controller(semantics=semantics).handle(ApiKey.API_VERSIONS, 99, {})
    assert resp["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    # the preset's release: Kafka 4.4 added ApiVersions v5 (KIP-1242)
    assert resp["api_keys"] == [
        {"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": newest}
    ]


def test_alter_partition_bad_requests_table() -> None:
    ctl = replay_cluster(isr=[1, 2])
    start = ctl.end_offset
    cases = {
        "duplicate ISR": (dict(isr=[1, 2, 2]), ErrorCode.INVALID_REQUEST),
        "unknown broker": (dict(isr=[1, 2, 7]), ErrorCode.INVALID_REQUEST),
        "old leader epoch": (dict(isr=[1], leader_epoch=1), ErrorCode.FENCED_LEADER_EPOCH),
        "old partition epoch": (dict(isr=[1], partition_epoch=1), ErrorCode.INVALID_UPDATE_VERSION),
        "not the leader": (dict(isr=[1], sender=2), ErrorCode.INVALID_REQUEST),
    }
    for name, (kwargs, code) in cases.items():
        assert partition_error(alter_partition(ctl, **kwargs)) == code, name
    resp = call(
        ctl,
        ApiKey.ALTER_PARTITION,
        3,
        {
            "broker_id": 1,
            "broker_epoch": ctl.broker(1).epoch,
            "topics": [
                {
                    "topic_id": uuid.uuid4(),
                    "partitions": [{"partition_index": 0, "leader_epoch": 0, "partition_epoch": 0}],
                }
            ],
        },
    )
    assert partition_error(resp) == ErrorCode.UNKNOWN_TOPIC_ID
    assert ctl.end_offset == start


def test_replay_of_an_impossible_record_is_a_clear_error() -> None:

    ctl = Controller()
    with pytest.raises(ReplayError, match="no topic"):
        ctl.append("PartitionChangeRecord", {"partition_id": 0, "topic_id": uuid.uuid4()})
    with pytest.raises(ValueError, match="not a metadata record"):
        ctl.append("AlterPartitionRequest", {})
    assert ctl.end_offset == 0


@pytest.mark.parametrize(
    ("cluster_id", "node_id", "error"),
    [
        (None, -1, ErrorCode.NONE),
        ("other", 7, ErrorCode.NONE),  # Kafka 4.4's controller does not compare them
        ("other", -1, ErrorCode.INVALID_REQUEST),
        (None, 7, ErrorCode.INVALID_REQUEST),
    ],
)
def test_api_versions_v5_identity_must_be_whole_on_the_controller(
    cluster_id: str | None, node_id: int, error: int
) -> None:
    body = {"client_software_name": "x", "client_software_version": "1"}
    resp = Controller().handle(
        ApiKey.API_VERSIONS, 5, {**body, "cluster_id": cluster_id, "node_id": node_id}
    )
    assert resp["error_code"] == error
