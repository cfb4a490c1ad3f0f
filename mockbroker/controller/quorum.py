"""DescribeQuorum (55): the KRaft quorum of `__cluster_metadata`, as its leader reports it
(Kafka's LeaderState#describeQuorum).

The mock's quorum is its one controller: the only voter, always the leader, at epoch 1, so the
high watermark is the log's end. The brokers are observers: each metadata Fetch records the
broker's fetch offset and time, and the last time it had fetched up to the log's end (its
LastCaughtUpTimestamp). Timestamps are wall-clock milliseconds, as Kafka's are, so tools can
compute lags against their own clock. The controller's node id is `CONTROLLER_NODE_ID` (a
real KRaft controller has a number; the mock's brokers are 1..N). Sans-I/O: the controller node
calls `fetched` from its Fetch handler and `describe` for the request.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kipwire.codec import ErrorCode

from .metadata_log import METADATA_TOPIC

#: The controller's node id in the quorum (above any broker id the mock hands out).
CONTROLLER_NODE_ID = 3000
#: The mock's controller leads the quorum from its first epoch and never loses it.
LEADER_EPOCH = 1
CONTROLLER_LISTENER = "CONTROLLER"
#: DescribeQuorum v1 adds the replicas' fetch and caught-up times.
TIMESTAMPS_FROM = 1
#: DescribeQuorum v2 adds directory ids, error messages and the voters' endpoints (KIP-853).
NODES_FROM = 2


@dataclass(slots=True)
class ReplicaFetch:
    """What the leader knows of a replica from its fetches."""

    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


class QuorumState:
    """The leader's view of the replicas fetching the metadata log."""

    def __init__(self, directory_id: uuid.UUID | None = None) -> None:
        self.directory_id = directory_id or uuid.uuid4()
        self.observers: dict[int, ReplicaFetch] = {}

    def fetched(self, replica_id: int, offset: int, end_offset: int, now_ms: int) -> None:
        """A replica fetched from `offset` while the log ended at `end_offset`."""
        if replica_id < 0:
            return  # a consumer of the log, not a replica
        known = self.observers.get(replica_id)
        caught_up = now_ms if offset >= end_offset else (known.last_caught_up_ms if known else -1)
        self.observers[replica_id] = ReplicaFetch(offset, now_ms, caught_up)

    def describe(
        self,
        version: int,
        body: Mapping[str, Any],
        end_offset: int,
        now_ms: int,
        endpoint: tuple[str, int],
    ) -> dict:
        """The DescribeQuorum response; UNKNOWN_TOPIC_OR_PARTITION unless the request names
        `__cluster_metadata` partition 0 alone (KafkaRaftClient's check)."""
        topics = body["topics"]
        if (
            len(topics) != 1
            or topics[0]["topic_name"] != METADATA_TOPIC
            or [p["partition_index"] for p in topics[0]["partitions"]] != [0]
        ):
            return {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "topics": []}
        leader = _replica(
            version, CONTROLLER_NODE_ID, self.directory_id, ReplicaFetch(end_offset, now_ms, now_ms)
        )
        observers = [
            _replica(version, replica_id, uuid.UUID(int=0), fetch)
            for replica_id, fetch in sorted(self.observers.items())
        ]
        response: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "topics": [
                {
                    "topic_name": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": ErrorCode.NONE,
                            "leader_id": CONTROLLER_NODE_ID,
                            "leader_epoch": LEADER_EPOCH,
                            "high_watermark": end_offset,
                            "current_voters": [leader],
                            "observers": observers,
                        }
                    ],
                }
            ],
        }
        if version >= NODES_FROM:
            host, port = endpoint
            response["nodes"] = [
                {
                    "node_id": CONTROLLER_NODE_ID,
                    "listeners": [{"name": CONTROLLER_LISTENER, "host": host, "port": port}],
                }
            ]
        return response


def _replica(version: int, replica_id: int, directory: uuid.UUID, fetch: ReplicaFetch) -> dict:
    """A ReplicaState at a version: timestamps from v1, the directory id from v2."""
    state: dict[str, Any] = {"replica_id": replica_id, "log_end_offset": fetch.log_end_offset}
    if version >= TIMESTAMPS_FROM:
        state["last_fetch_timestamp"] = fetch.last_fetch_ms
        state["last_caught_up_timestamp"] = fetch.last_caught_up_ms
    if version >= NODES_FROM:
        state["replica_directory_id"] = directory
    return state


#: The quorum's kraft.version: 0, a static voter set (`controller.quorum.voters`), as a Kafka
#: cluster formatted without `--standalone` or `--initial-controllers` has; changing the
#: voters needs 1 (KIP-853), so Kafka refuses AddRaftVoter and RemoveRaftVoter.
KRAFT_VERSION = 0


def add_raft_voter(cluster_id: str, body: Mapping[str, Any]) -> dict:
    """AddRaftVoter (80) as Kafka 4.4.0's leader answers it (KafkaRaftClient's checks in its
    order): another cluster's id, a voter without an id or directory, no endpoint on the
    controller listener, and then UNSUPPORTED_VERSION, as the quorum is static."""
    mismatch = _cluster_mismatch(body["cluster_id"], cluster_id)
    if mismatch is not None:
        return _error(ErrorCode.INCONSISTENT_CLUSTER_ID, mismatch)
    if not _valid_voter(body):
        return _error(ErrorCode.INVALID_REQUEST, "Add voter request didn't include a valid voter")
    if not _on_controller_listener(body["listeners"]):
        return _error(
            ErrorCode.INVALID_REQUEST,
            f"Add voter request didn't include the endpoint ({_endpoints(body['listeners'])}) "
            f"for the default listener ListenerName({CONTROLLER_LISTENER})",
        )
    return _error(
        ErrorCode.UNSUPPORTED_VERSION,
        f"Cluster doesn't support adding voter because the kraft.version feature is "
        f"{KRAFT_VERSION}",
    )


def remove_raft_voter(cluster_id: str, body: Mapping[str, Any]) -> dict:
    """RemoveRaftVoter (81) as Kafka 4.4.0's leader of a static quorum answers it."""
    mismatch = _cluster_mismatch(body["cluster_id"], cluster_id)
    if mismatch is not None:
        return _error(ErrorCode.INCONSISTENT_CLUSTER_ID, mismatch)
    if not _valid_voter(body):
        return _error(
            ErrorCode.INVALID_REQUEST, "Remove voter request didn't include a valid voter"
        )
    return _error(
        ErrorCode.UNSUPPORTED_VERSION,
        f"Cluster doesn't support removing voter because the kraft.version feature is "
        f"{KRAFT_VERSION}",
    )


def update_raft_voter(cluster_id: str, body: Mapping[str, Any], endpoint: tuple[str, int]) -> dict:
    """UpdateRaftVoter (82), which a controller sends its leader with its endpoints: Kafka
    4.4.0's checks in its order; the one voter, this controller, keeps the endpoint it has."""
    code = ErrorCode.NONE
    epoch = body["current_leader_epoch"]
    supported = body["k_raft_version_feature"]
    low, high = supported["min_supported_version"], supported["max_supported_version"]
    if _cluster_mismatch(body["cluster_id"], cluster_id) is not None:
        code = ErrorCode.INCONSISTENT_CLUSTER_ID
    elif epoch < LEADER_EPOCH:
        code = ErrorCode.FENCED_LEADER_EPOCH
    elif epoch > LEADER_EPOCH:
        code = ErrorCode.UNKNOWN_LEADER_EPOCH
    elif (
        not _valid_voter(body)
        or not _on_controller_listener(body["listeners"])
        or not 0 <= low <= high
        or not low <= KRAFT_VERSION <= high
    ):
        code = ErrorCode.INVALID_REQUEST
    elif body["voter_id"] != CONTROLLER_NODE_ID:
        code = ErrorCode.VOTER_NOT_FOUND
    host, port = endpoint
    leader = {"leader_id": CONTROLLER_NODE_ID, "leader_epoch": LEADER_EPOCH, "host": host}
    return {"error_code": code, "current_leader": {**leader, "port": port}}


def unregister_controller(body: Mapping[str, Any]) -> dict:
    """UnregisterController (94, Kafka 4.4): the mock's one controller is the active one, and
    no other is registered."""
    controller_id = body["controller_id"]
    if controller_id == CONTROLLER_NODE_ID:
        return _error(
            ErrorCode.INVALID_REQUEST, "Controller cannot unregister itself while it is active."
        )
    return _error(
        ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
        f"Controller ID {controller_id} is not currently registered.",
    )


def _error(code: int, message: str) -> dict:
    return {"error_code": code, "error_message": message}


def _cluster_mismatch(given: str | None, ours: str) -> str | None:
    """Kafka's message for a request naming another cluster (no name matches any)."""
    if given is None or given == ours:
        return None
    return f'The given id "{given}" doesn\'t match the cluster id "{ours}"'


def _valid_voter(body: Mapping[str, Any]) -> bool:
    # a replica key needs an id and a directory (ReplicaKey with no directory is refused)
    return body["voter_id"] >= 0 and body["voter_directory_id"] != uuid.UUID(int=0)


def _on_controller_listener(listeners: list[Mapping[str, Any]]) -> bool:
    return any(listener["name"] == CONTROLLER_LISTENER for listener in listeners)


def _endpoints(listeners: list[Mapping[str, Any]]) -> str:
    """A request's listeners as Kafka's Endpoints#toString prints them in its messages."""
    shown = ", ".join(
        f"ListenerName({e['name']})={e['host']}/<unresolved>:{e['port']}" for e in listeners
    )
    return f"Endpoints(endpoints={{{shown}}})"
