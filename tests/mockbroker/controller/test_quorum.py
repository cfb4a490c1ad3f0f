"""DescribeQuorum's answer from the controller's view of the metadata log's fetchers, and the
voter APIs answered as Kafka 4.4.0's static quorum answers them."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from controller_kit import call

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker.controller import Controller, Semantics
from kipwire.mockbroker.controller.quorum import (
    CONTROLLER_NODE_ID,
    QuorumState,
    add_raft_voter,
    remove_raft_voter,
    unregister_controller,
    update_raft_voter,
)

REQUEST = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}


def test_the_controller_leads_and_brokers_observe():
    quorum = QuorumState(uuid.UUID(int=5))
    quorum.fetched(1, 10, 10, now_ms=1_000)  # caught up
    quorum.fetched(2, 4, 10, now_ms=1_500)  # behind, never caught up
    quorum.fetched(1, 8, 12, now_ms=2_000)  # behind now, caught up at 1000
    quorum.fetched(-1, 0, 12, now_ms=2_000)  # not a replica
    response = quorum.describe(2, REQUEST, 12, 3_000, ("127.0.0.1", 9093))
    part = response["topics"][0]["partitions"][0]
    assert (part["leader_id"], part["leader_epoch"], part["high_watermark"]) == (
        CONTROLLER_NODE_ID,
        1,
        12,
    )
    assert [(v["replica_id"], v["log_end_offset"]) for v in part["current_voters"]] == [
        (CONTROLLER_NODE_ID, 12)
    ]
    assert [
        (
            o["replica_id"],
            o["log_end_offset"],
            o["last_fetch_timestamp"],
            o["last_caught_up_timestamp"],
        )
        for o in part["observers"]
    ] == [(1, 8, 2_000, 1_000), (2, 4, 1_500, -1)]
    assert response["nodes"][0]["listeners"] == [
        {"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}
    ]
    assert "nodes" not in quorum.describe(1, REQUEST, 12, 3_000, ("127.0.0.1", 9093))


def test_only_the_metadata_partition_is_described():
    other = {"topics": [{"topic_name": "t", "partitions": [{"partition_index": 0}]}]}
    response = QuorumState().describe(2, other, 0, 0, ("127.0.0.1", 1))
    assert response["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_older_versions_leave_out_what_they_lack():
    quorum = QuorumState()
    quorum.fetched(1, 3, 3, now_ms=10)
    v0 = quorum.describe(0, REQUEST, 3, 20, ("127.0.0.1", 1))["topics"][0]["partitions"][0]
    assert v0["observers"] == [{"replica_id": 1, "log_end_offset": 3}]
    v1 = quorum.describe(1, REQUEST, 3, 20, ("127.0.0.1", 1))["topics"][0]["partitions"][0]
    assert v1["observers"][0]["last_fetch_timestamp"] == 10
    assert "replica_directory_id" not in v1["observers"][0]


CLUSTER = "kipwire-mock"
DIRECTORY = uuid.UUID(int=9)
LISTENER = {"name": "CONTROLLER", "host": "127.0.0.1", "port": 9099}
RECORDED = Path(__file__).parents[2] / "realkafka" / "data"


def _voter(**fields: object) -> dict:
    body = {"cluster_id": None, "voter_id": 3001, "voter_directory_id": DIRECTORY}
    return body | {"listeners": [LISTENER]} | fields


def test_adding_a_voter_is_checked_then_refused_as_a_static_quorum_refuses_it():
    # Kafka 4.4.0's answers, in its order of checks (recorded by
    # tests/realkafka/test_differential_quorum_apis.py against a real single-node quorum)
    assert add_raft_voter(CLUSTER, _voter(cluster_id="other")) == {
        "error_code": ErrorCode.INCONSISTENT_CLUSTER_ID,
        "error_message": 'The given id "other" doesn\'t match the cluster id "kipwire-mock"',
    }
    for bad in (_voter(voter_id=-1), _voter(voter_directory_id=uuid.UUID(int=0))):
        assert add_raft_voter(CLUSTER, bad) == {
            "error_code": ErrorCode.INVALID_REQUEST,
            "error_message": "Add voter request didn't include a valid voter",
        }
    elsewhere = _voter(listeners=[{"name": "OTHER", "host": "h", "port": 1}])
    assert add_raft_voter(CLUSTER, elsewhere)["error_message"] == (
        "Add voter request didn't include the endpoint (Endpoints(endpoints="
        "{ListenerName(OTHER)=h/<unresolved>:1})) for the default listener "
        "ListenerName(CONTROLLER)"
    )
    for named in (None, CLUSTER):
        assert add_raft_voter(CLUSTER, _voter(cluster_id=named)) == {
            "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "error_message": "Cluster doesn't support adding voter because the kraft.version "
            "feature is 0",
        }


def test_removing_a_voter_is_refused_likewise():
    body = _voter(voter_id=CONTROLLER_NODE_ID)
    del body["listeners"]
    assert remove_raft_voter(CLUSTER, body)["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert "removing voter" in remove_raft_voter(CLUSTER, body)["error_message"]
    wrong = remove_raft_voter(CLUSTER, body | {"cluster_id": "x"})
    assert wrong["error_code"] == ErrorCode.INCONSISTENT_CLUSTER_ID
    no_dir = remove_raft_voter(CLUSTER, body | {"voter_directory_id": uuid.UUID(int=0)})
    assert no_dir["error_message"] == "Remove voter request didn't include a valid voter"


def test_update_voter_answers_with_the_leader_endpoint():
    versions = {"min_supported_version": 0, "max_supported_version": 1}
    body = _voter(current_leader_epoch=1, k_raft_version_feature=versions)
    answer = update_raft_voter(CLUSTER, body, ("127.0.0.1", 9093))
    assert answer == {
        "error_code": ErrorCode.VOTER_NOT_FOUND,
        "current_leader": {
            "leader_id": CONTROLLER_NODE_ID,
            "leader_epoch": 1,
            "host": "127.0.0.1",
            "port": 9093,
        },
    }
    cases = {
        ErrorCode.NONE: {"voter_id": CONTROLLER_NODE_ID},
        ErrorCode.INCONSISTENT_CLUSTER_ID: {"cluster_id": "x"},
        ErrorCode.FENCED_LEADER_EPOCH: {"current_leader_epoch": 0},
        ErrorCode.UNKNOWN_LEADER_EPOCH: {"current_leader_epoch": 2},
        ErrorCode.INVALID_REQUEST: {
            "k_raft_version_feature": versions | {"min_supported_version": 1}
        },
    }
    for code, fields in cases.items():
        assert update_raft_voter(CLUSTER, body | fields, ("h", 1))["error_code"] == code, fields


def test_only_other_controllers_are_unregistered_and_none_is_registered():
    assert unregister_controller({"controller_id": CONTROLLER_NODE_ID}) == {
        "error_code": ErrorCode.INVALID_REQUEST,
        "error_message": "Controller cannot unregister itself while it is active.",
    }
    assert unregister_controller({"controller_id": 5}) == {
        "error_code": ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
        "error_message": "Controller ID 5 is not currently registered.",
    }


@pytest.mark.parametrize(
    ("semantics", "release"), [(Semantics.KAFKA_4_4, "4_4"), (Semantics.KAFKA_4_1, "4_1")]
)
def test_the_controller_lists_the_quorum_apis_as_kafkas_controller_listener(semantics, release):
    recorded = json.loads((RECORDED / f"api_versions_kafka_{release}.json").read_text())
    theirs = {int(k): tuple(v) for k, v in recorded["controller_listener"].items()}
    body = {"client_software_name": "x", "client_software_version": "1"}
    answer = call(Controller(semantics=semantics), ApiKey.API_VERSIONS, 3, body)
    ours = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    quorum_apis = (
        ApiKey.ADD_RAFT_VOTER,
        ApiKey.REMOVE_RAFT_VOTER,
        ApiKey.UPDATE_RAFT_VOTER,
        ApiKey.UNREGISTER_CONTROLLER,
    )
    assert {k: ours.get(k) for k in quorum_apis} == {k: theirs.get(k) for k in quorum_apis}
    # Kafka 4.1.2 has no UnregisterController: the 4.1 preset does not serve it either
    refused = call(
        Controller(semantics=semantics), ApiKey.UNREGISTER_CONTROLLER, 0, {"controller_id": 5}
    )
    assert (refused.error_code == ErrorCode.UNSUPPORTED_VERSION) == (release == "4_1")
