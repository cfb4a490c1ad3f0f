"""AssignReplicasToDirs (73): a broker tells the controller which log directory holds each of its
replicas (after placing a new one, or moving one with AlterReplicaLogDirs), recorded as a
PartitionChangeRecord's Directories (KIP-858; `directories.py`)."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ErrorCode

from .draft import Draft, change_partition
from .features import MV_3_7_IV2
from .partition_change import Target
from .result import ControllerResult, ControllerView


def assign_replicas_to_dirs(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """AssignReplicasToDirs v0 (ReplicationControlManager#handleAssignReplicasToDirs): record the
    directory a broker placed each replica in; per-partition errors for unknown topics and
    partitions and for replicas the broker does not hold."""
    draft = Draft(view)
    if draft.state.metadata_version < MV_3_7_IV2:
        return draft.result({"error_code": ErrorCode.UNSUPPORTED_VERSION, "directories": []})
    broker_id = body["broker_id"]
    broker = draft.state.brokers.get(broker_id)
    if broker is None or broker.epoch != body["broker_epoch"]:
        # Kafka's checkBrokerEpoch: no registration is a stale epoch too
        return draft.result({"error_code": ErrorCode.STALE_BROKER_EPOCH, "directories": []})
    directories = []
    for d in body["directories"]:
        topics = []
        for t in d["topics"]:
            parts = []
            for entry in t["partitions"]:
                index = entry["partition_index"]
                # looked up per partition: each change replays into a new draft of the state
                topic = draft.state.topics.get(t["topic_id"])
                p = topic.partitions.get(index) if topic is not None else None
                if topic is None:
                    code = ErrorCode.UNKNOWN_TOPIC_ID
                elif p is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif broker_id not in p.replicas:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    code = ErrorCode.NONE
                    change_partition(draft, p, Target(directories={broker_id: d["id"]}))
                parts.append({"partition_index": index, "error_code": code})
            topics.append({"topic_id": t["topic_id"], "partitions": parts})
        directories.append({"id": d["id"], "topics": topics})
    return draft.result({"error_code": ErrorCode.NONE, "directories": directories})
