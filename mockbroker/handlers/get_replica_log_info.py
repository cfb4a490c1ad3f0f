"""GetReplicaLogInfo (an extension key): a replica's log facts for KIP-966's unclean recovery.

The controller asks every live replica of a leaderless partition and elects the one with the
highest (LastWrittenLeaderEpoch, LogEndOffset). Kafka ships only the schema; the response has
`Truncated` set when more than 1000 partitions were asked, and those past it are not answered.
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .registry import BrokerView, RequestContext, handles

MAX_PARTITIONS = 1000


@handles(ApiKey.GET_REPLICA_LOG_INFO)
async def get_replica_log_info(ctx: RequestContext, body: Any) -> dict:
    """Each asked partition's last written leader epoch, current leader epoch and log end."""
    return replica_log_info(ctx.broker, body)


def replica_log_info(broker: BrokerView, body: Any) -> dict:
    """The response body for one GetReplicaLogInfo request to `broker`."""
    image = broker.image
    budget = MAX_PARTITIONS
    truncated = False
    out = []
    for topic in body["topic_partitions"]:
        info = image.topics_by_id.get(topic["topic_id"])
        parts = []
        for index in topic["partitions"]:
            if budget == 0:
                truncated = True
                break
            budget -= 1
            part = info.partitions.get(index) if info is not None else None
            log = broker.logs.get((info.name, index)) if part is not None else None
            if part is None or broker.node_id not in part.replicas:
                code = (
                    ErrorCode.UNKNOWN_TOPIC_ID if info is None else ErrorCode.NOT_LEADER_OR_FOLLOWER
                )
                parts.append({"partition": index, "error_code": code})
                continue
            parts.append(
                {
                    "partition": index,
                    "last_written_leader_epoch": log.batches[-1].leader_epoch
                    if log is not None and log.batches
                    else -1,
                    "current_leader_epoch": part.leader_epoch,
                    "log_end_offset": log.end_offset if log is not None else 0,
                    "error_code": ErrorCode.NONE,
                }
            )
        if parts:
            out.append({"topic_id": topic["topic_id"], "partition_log_info": parts})
    return {
        "broker_epoch": broker.epoch,
        "truncated": truncated,
        "topic_partition_log_info_list": out,
    }
