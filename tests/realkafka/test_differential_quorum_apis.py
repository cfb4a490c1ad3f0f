"""The quorum APIs against Kafka 4.4.0's static quorum (one combined node, kraft.version 0) and
the mock's: AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter and UnregisterController, on the
controller listener and (but UpdateRaftVoter, which brokers do not list) through a broker, with
the answers compared after masking the cluster id and the leader's id and port; then what
`kafka-metadata-quorum add-controller` and `remove-controller` and `kafka-cluster
unregister-controller` print on each. Kafka refuses to change a static quorum's voters with
UNSUPPORTED_VERSION; so does the mock, whose one controller is its only voter.

Not sent: an UpdateRaftVoter naming the leader itself, which makes Kafka 4.4.0's combined node
end on a fatal fault in its Raft thread ("Received a FETCH/FETCH_SNAPSHOT request from the
leader itself"), so nothing can be compared; the mock answers it with NONE and keeps its
endpoint.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_dist import KafkaDist
from kafka_harness import KafkaCluster
from realkafka_wire import call

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.controller.quorum import CONTROLLER_NODE_ID

QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"
TIMEOUT = 120
DIRECTORY = uuid.UUID("6f1d4a0e-93a2-4c3e-8a8e-6a2f0b4f7c11")


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as running:
        yield running


def _sides(kafka: KafkaCluster, mock: MockCluster) -> dict[str, dict[str, Any]]:
    """Each side's ports, cluster id and leader (its one controller)."""
    (node,) = kafka.nodes.values()
    return {
        "kafka": {
            "controller": node.controller_port,
            "broker": node.broker_port,
            "cluster": kafka.cluster_id,
            "leader": node.spec.node_id,
        },
        "mock": {
            "controller": mock.cluster.controller_node.port,
            "broker": int(mock.bootstrap_servers.rsplit(":", 1)[1]),
            "cluster": mock.cluster.controller.cluster_id,
            "leader": CONTROLLER_NODE_ID,
        },
    }


def _requests(side: dict[str, Any]) -> dict[str, tuple[int, int, dict]]:
    """Name -> (api key, version, body) of each request sent to both sides."""
    listener = {"name": "CONTROLLER", "host": "127.0.0.1", "port": 9099}
    voter = {"voter_id": side["leader"] + 7, "voter_directory_id": DIRECTORY}
    add = {"cluster_id": side["cluster"], "timeout_ms": 30_000, **voter, "listeners": [listener]}
    leader = {"voter_id": side["leader"], "voter_directory_id": DIRECTORY}
    kraft = {"min_supported_version": 0, "max_supported_version": 1}
    update = {"current_leader_epoch": 1, **voter, "listeners": [listener]}
    update["k_raft_version_feature"] = kraft
    return {
        "add v0": (ApiKey.ADD_RAFT_VOTER, 0, add),
        "add v1": (ApiKey.ADD_RAFT_VOTER, 1, add | {"ack_when_committed": False}),
        "add, no cluster named": (ApiKey.ADD_RAFT_VOTER, 1, add | {"cluster_id": None}),
        "add, another cluster": (ApiKey.ADD_RAFT_VOTER, 1, add | {"cluster_id": "nope"}),
        "add, no directory": (
            ApiKey.ADD_RAFT_VOTER,
            1,
            add | {"voter_directory_id": uuid.UUID(int=0)},
        ),
        "add, no voter id": (ApiKey.ADD_RAFT_VOTER, 1, add | {"voter_id": -1}),
        "add, no controller endpoint": (
            ApiKey.ADD_RAFT_VOTER,
            1,
            add | {"listeners": [listener | {"name": "OTHER"}]},
        ),
        "remove the leader": (ApiKey.REMOVE_RAFT_VOTER, 0, {"cluster_id": None, **leader}),
        "remove another": (ApiKey.REMOVE_RAFT_VOTER, 0, {"cluster_id": None, **voter}),
        "remove, another cluster": (ApiKey.REMOVE_RAFT_VOTER, 0, {"cluster_id": "x", **leader}),
        "remove, no directory": (
            ApiKey.REMOVE_RAFT_VOTER,
            0,
            {
                "cluster_id": None,
                "voter_id": side["leader"],
                "voter_directory_id": uuid.UUID(int=0),
            },
        ),
        "unregister the active controller": (
            ApiKey.UNREGISTER_CONTROLLER,
            0,
            {"controller_id": side["leader"]},
        ),
        "unregister another": (ApiKey.UNREGISTER_CONTROLLER, 0, {"controller_id": 5}),
        "update a non-voter": (ApiKey.UPDATE_RAFT_VOTER, 0, {"cluster_id": None, **update}),
        "update, another cluster": (ApiKey.UPDATE_RAFT_VOTER, 0, {"cluster_id": "x", **update}),
        "update, an old epoch": (
            ApiKey.UPDATE_RAFT_VOTER,
            0,
            {"cluster_id": None, **update, "current_leader_epoch": 0},
        ),
    }


def _masked(side: dict[str, Any], body: Any) -> dict:
    """A response as plain data, with the side's cluster id, leader id and port masked."""
    out: dict = {}
    for key, value in dict(body).items():
        if key.startswith("_"):
            continue
        if key == "current_leader":
            value = {**dict(value), "leader_id": "<leader>", "port": "<port>"}
        if isinstance(value, str):
            value = value.replace(side["cluster"], "<cluster>")
        out[key] = value
    return out


def _answers(side: dict[str, Any]) -> dict[str, dict]:
    answers = {}
    for name, (key, version, body) in _requests(side).items():
        listeners = ["controller"] if key == ApiKey.UPDATE_RAFT_VOTER else ["controller", "broker"]
        for listener in listeners:
            answers[f"{name} ({listener})"] = _masked(
                side, call(side[listener], key, version, body)
            )
    return answers


def test_the_quorum_apis_answer_as_kafkas_static_quorum(
    kafka_single: KafkaCluster, mock: MockCluster
) -> None:
    sides = _sides(kafka_single, mock)
    theirs, ours = _answers(sides["kafka"]), _answers(sides["mock"])
    assert ours == theirs
    # what each answer is, as Kafka 4.4.0 gave it
    for name, answer in theirs.items():
        assert answer["error_code"] == _CODES[name.rsplit(" (", 1)[0]], name
    assert theirs["add v1 (controller)"]["error_message"] == (
        "Cluster doesn't support adding voter because the kraft.version feature is 0"
    )


#: Kafka 4.4.0's answer to each request (on both listeners, but UpdateRaftVoter's).
_CODES = {
    "add v0": ErrorCode.UNSUPPORTED_VERSION,
    "add v1": ErrorCode.UNSUPPORTED_VERSION,
    "add, no cluster named": ErrorCode.UNSUPPORTED_VERSION,
    "add, another cluster": ErrorCode.INCONSISTENT_CLUSTER_ID,
    "add, no directory": ErrorCode.INVALID_REQUEST,
    "add, no voter id": ErrorCode.INVALID_REQUEST,
    "add, no controller endpoint": ErrorCode.INVALID_REQUEST,
    "remove the leader": ErrorCode.UNSUPPORTED_VERSION,
    "remove another": ErrorCode.UNSUPPORTED_VERSION,
    "remove, another cluster": ErrorCode.INCONSISTENT_CLUSTER_ID,
    "remove, no directory": ErrorCode.INVALID_REQUEST,
    "unregister the active controller": ErrorCode.INVALID_REQUEST,
    "unregister another": ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
    "update a non-voter": ErrorCode.VOTER_NOT_FOUND,
    "update, another cluster": ErrorCode.INCONSISTENT_CLUSTER_ID,
    "update, an old epoch": ErrorCode.FENCED_LEADER_EPOCH,
}


def _tool(dist: KafkaDist, main: str, *args: str) -> tuple[int, str]:
    """A tool's exit status and its first line of stderr."""
    run = dist.run_tool(main, *args, timeout=TIMEOUT)
    return run.returncode, run.stderr.splitlines()[0] if run.stderr else ""


def _new_controller(side: dict[str, Any], where: Path) -> Path:
    """The properties file of a controller to add, and its formatted metadata directory's
    meta.properties (where add-controller reads its directory id)."""
    node = side["leader"] + 7
    meta = where / "metadata"
    meta.mkdir(parents=True)
    (meta / "meta.properties").write_text(
        f"version=1\nnode.id={node}\ndirectory.id=b3Ak3zVzTwGWk6E_V4Yd7A\n"
        f"cluster.id={side['cluster']}\n"
    )
    config = where / "controller.properties"
    config.write_text(
        f"process.roles=controller\nnode.id={node}\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://127.0.0.1:9099\nmetadata.log.dir={meta}\n"
    )
    return config


def _tool_outputs(dist: KafkaDist, side: dict[str, Any], where: Path) -> dict[str, tuple[int, str]]:
    controller, broker = f"127.0.0.1:{side['controller']}", f"127.0.0.1:{side['broker']}"
    outputs = {
        "add-controller": _tool(
            dist,
            QUORUM,
            "--bootstrap-controller",
            controller,
            "--command-config",
            str(_new_controller(side, where)),
            "add-controller",
        )  # fmt: skip
    }
    for reach in (["--bootstrap-controller", controller], ["--bootstrap-server", broker]):
        outputs[f"remove-controller {reach[0]}"] = _tool(
            dist, QUORUM, *reach, "remove-controller", "--controller-id", str(side["leader"]),
            "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAQ",
        )  # fmt: skip
        outputs[f"unregister-controller {reach[0]}"] = _tool(
            dist, CLUSTER_TOOL, "unregister-controller", *reach, "--id", "5"
        )
    return outputs


def test_the_tools_print_what_they_print_against_kafka(
    kafka_dist: KafkaDist, kafka_single: KafkaCluster, mock: MockCluster, tmp_path: Path
) -> None:
    sides = _sides(kafka_single, mock)
    theirs = _tool_outputs(kafka_dist, sides["kafka"], tmp_path / "kafka")
    assert _tool_outputs(kafka_dist, sides["mock"], tmp_path / "mock") == theirs
    assert theirs["add-controller"] == (
        1,
        "org.apache.kafka.common.errors.UnsupportedVersionException: Cluster doesn't support "
        "adding voter because the kraft.version feature is 0",
    )
    refused = (
        1,
        "org.apache.kafka.common.errors.UnsupportedVersionException: Cluster doesn't support "
        "removing voter because the kraft.version feature is 0",
    )
    assert theirs["remove-controller --bootstrap-controller"] == refused
    assert theirs["unregister-controller --bootstrap-server"] == (
        1,
        "org.apache.kafka.common.errors.ControllerIdNotRegisteredException: Controller ID 5 is "
        "not currently registered.",
    )
