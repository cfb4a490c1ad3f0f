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
