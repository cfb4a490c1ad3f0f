"""Log directories on the controller (KIP-858): the Directories a partition starts with, kept and
defaulted through changes, and AssignReplicasToDirs, as Kafka's ClusterControlManager#defaultDir,
PartitionChangeBuilder and ReplicationControlManager#handleAssignReplicasToDirs do."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from controller_kit import call, changes, heartbeat, incarnation
from test_apis import create

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker.controller import Controller, Semantics
from kipwire.mockbroker.controller.directories import MIGRATING, UNASSIGNED, default_dir
from kipwire.mockbroker.controller.features import LATEST_METADATA_VERSION

ONE = {b: [uuid.UUID(int=1000 + b)] for b in (1, 2, 3)}
TWO = {b: [uuid.UUID(int=2000 + b), uuid.UUID(int=3000 + b)] for b in (1, 2, 3)}


def register_with_dirs(ctl: Controller, broker_id: int, dirs: list[uuid.UUID]) -> None:
    """BrokerRegistration v4 listing the broker's log directories, then an unfencing heartbeat."""
    body = {
        "broker_id": broker_id,
        "cluster_id": ctl.cluster_id,
        "incarnation_id": incarnation(broker_id),
        "listeners": [
            {"name": "PLAINTEXT", "host": "h", "port": 9000 + broker_id, "security_protocol": 0}
        ],
        "features": [
            {
                "name": "metadata.version",
                "min_supported_version": 1,
                "max_supported_version": LATEST_METADATA_VERSION[ctl.semantics.release],
            }
        ],
        "rack": None,
        "log_dirs": dirs,
        "previous_broker_epoch": -1,
    }
    assert call(ctl, ApiKey.BROKER_REGISTRATION, 4, body).error_code == ErrorCode.NONE
    heartbeat(ctl, broker_id)


def cluster(dirs: dict[int, list[uuid.UUID]]) -> Controller:
    ctl = Controller(semantics=Semantics.KAFKA_4_4)
    for broker_id, its_dirs in dirs.items():
        register_with_dirs(ctl, broker_id, its_dirs)
    return ctl


def assign(ctl: Controller, broker_id: int, dir_id: uuid.UUID, *parts: tuple[Any, int]) -> Any:
    """AssignReplicasToDirs from a broker at its registered epoch: (topic id, index) pairs."""
    return call(
        ctl,
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        0,
        {
            "broker_id": broker_id,
            "broker_epoch": ctl.broker(broker_id).epoch,
            "directories": [
                {
                    "id": dir_id,
                    "topics": [
                        {"topic_id": topic_id, "partitions": [{"partition_index": index}]}
                        for topic_id, index in parts
                    ],
                }
            ],
        },
    )


def test_a_new_partition_names_the_only_dir_of_each_replica() -> None:
    ctl = cluster(ONE)
    create(ctl, partitions=1)
    p = ctl.partition("t", 0)
    assert p.directories == [ONE[b][0] for b in p.replicas]


def test_a_broker_with_two_dirs_gets_unassigned_and_one_with_none_migrating() -> None:
    ctl = cluster({1: TWO[1], 2: []})
    create(ctl, partitions=1, rf=2)
    p = ctl.partition("t", 0)
    assert dict(zip(p.replicas, p.directories, strict=True)) == {1: UNASSIGNED, 2: MIGRATING}
    assert default_dir(ctl.state, 99) == UNASSIGNED  # not registered


def test_assign_replicas_to_dirs_records_the_brokers_choice() -> None:
    ctl = cluster(TWO)
    topic_id = create(ctl, partitions=2).topic_id
    start = ctl.end_offset
    answer = assign(ctl, 2, TWO[2][1], (topic_id, 0), (topic_id, 1))
    assert answer.error_code == ErrorCode.NONE
    codes = [t.partitions[0].error_code for t in answer.directories[0].topics]
    assert codes == [ErrorCode.NONE, ErrorCode.NONE]
    recorded = changes(ctl, start)
    assert [r["partition_id"] for r in recorded] == [0, 1]
    for index in (0, 1):
        p = ctl.partition("t", index)
        mine = dict(zip(p.replicas, p.directories, strict=True))
        assert mine == {1: UNASSIGNED, 2: TWO[2][1], 3: UNASSIGNED}
    # the same assignment again changes nothing: no record
    again = ctl.end_offset
    assign(ctl, 2, TWO[2][1], (topic_id, 0))
    assert ctl.end_offset == again


def test_assign_replicas_to_dirs_errors_per_partition_and_for_a_stale_epoch() -> None:
    ctl = cluster({1: TWO[1], 2: TWO[2]})
    topic_id = create(ctl, partitions=1, rf=1).topic_id
    holder = ctl.partition("t", 0).replicas[0]
    other = 3 - holder
    start = ctl.end_offset
    unknown = assign(ctl, holder, TWO[holder][0], (uuid.uuid4(), 0), (topic_id, 5))
    codes = [t.partitions[0].error_code for t in unknown.directories[0].topics]
    assert codes == [ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    not_mine = assign(ctl, other, TWO[other][0], (topic_id, 0))
    assert not_mine.directories[0].topics[0].partitions[0].error_code == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    stale = call(
        ctl,
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        0,
        {"broker_id": holder, "broker_epoch": 1, "directories": []},
    )
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert ctl.end_offset == start


def test_a_reassignment_keeps_kept_replicas_dirs_and_defaults_the_new_ones() -> None:
    ctl = cluster({1: ONE[1], 2: ONE[2], 3: TWO[3]})
    placed = [{"partition_index": 0, "broker_ids": [1, 2]}]
    assert create(ctl, partitions=-1, rf=-1, assignments=placed).error_code == ErrorCode.NONE
    start = ctl.end_offset
    body = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1, 3]}]}]}
    answer = call(ctl, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, body)
    assert answer.responses[0].partitions[0].error_code == ErrorCode.NONE
    first = changes(ctl, start)[0]
    # the adding replica 3 (two dirs) waits for its broker's choice; 1 and 2 keep theirs
    assert first["replicas"] == [1, 3, 2]
    assert first["directories"] == [ONE[1][0], UNASSIGNED, ONE[2][0]]


@pytest.mark.parametrize("mv", [16, 17])
def test_directories_start_at_metadata_version_3_7_iv2(mv: int) -> None:
    ctl = cluster(ONE)
    ctl.replay("FeatureLevelRecord", {"name": "metadata.version", "feature_level": mv})
    create(ctl, partitions=1)
    p = ctl.partition("t", 0)
    assert p.directories == ([ONE[b][0] for b in p.replicas] if mv >= 17 else [])
    answer = assign(ctl, 1, ONE[1][0], (p.topic_id, 0))
    assert answer.error_code == (ErrorCode.NONE if mv >= 17 else ErrorCode.UNSUPPORTED_VERSION)
