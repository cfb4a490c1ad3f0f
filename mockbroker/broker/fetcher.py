"""The follower side of replication: one fetcher per followed partition, dialing its leader
through the cluster's link layer (so a network cut stops it).

A fetcher first truncates its log by OffsetForLeaderEpoch (the end of the last epoch both logs
share), then long-polls Fetch v17 with ReplicaState (its id and broker epoch, KIP-903), appends
the leader's batches as they are and keeps min(leader HWM, its log end) as its HWM.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from kipwire.codec import ApiKey, ErrorCode, IsolationLevel

from .controller_channel import ControllerConnection

if TYPE_CHECKING:
    from .state import BrokerState

FETCH_VERSION, OFFSET_FOR_LEADER_EPOCH_VERSION = 17, 4
REPLICA_FETCH_WAIT_MS = 500
REPLICA_FETCH_BYTES = 8 << 20
#: replica.fetch.backoff.ms: the pause after a failed fetch or a refused connection.
FETCH_BACKOFF = 0.05
_DISCONNECTED = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)
log = logging.getLogger("kipwire.mockbroker.fetcher")


class _Refetch(Exception):
    """The leader refused; truncate again and start over after a backoff."""


async def follow_leaders(node: BrokerState) -> None:
    """Keep one fetcher per followed partition, restarted when its leader or epoch changes."""
    running: dict[tuple[str, int], tuple[tuple[int, int], trio.CancelScope]] = {}
    async with trio.open_nursery() as nursery:
        while True:
            wanted = node.replication.followed()
            for key, (leader, scope) in list(running.items()):
                if wanted.get(key) != leader:
                    scope.cancel()
                    del running[key]
            for key, leader in wanted.items():
                if key not in running:
                    scope = trio.CancelScope()
                    running[key] = (leader, scope)
                    nursery.start_soon(_follow, node, key, leader, scope)
            await node.replication.wait_changed()


async def _follow(
    node: BrokerState, key: tuple[str, int], leader: tuple[int, int], scope: trio.CancelScope
) -> None:
    leader_id, epoch = leader
    with scope:
        while True:
            try:
                stream = await node.network.connect(node.node_id, leader_id)
            except _DISCONNECTED:
                await trio.sleep(FETCH_BACKOFF)
                continue
            connection = ControllerConnection(stream, f"replica-{node.node_id}")
            try:
                await truncate(node, connection, key, epoch)
                while True:
                    await fetch_once(node, connection, key, epoch)
            except (_Refetch, *_DISCONNECTED) as exc:
                log.debug("broker %d fetching %s: %s", node.node_id, key, exc)
                await trio.sleep(FETCH_BACKOFF)
            finally:
                with trio.CancelScope(shield=True):
                    await connection.aclose()


async def truncate(
    node: BrokerState, connection: ControllerConnection, key: tuple[str, int], epoch: int
) -> None:
    """Cut the log back to where it stops agreeing with the leader's (OffsetForLeaderEpoch)."""
    partition_log = node.replica_log(*key)
    if not partition_log.batches:
        return
    last_epoch = partition_log.batches[-1].leader_epoch
    body = {
        "replica_id": node.node_id,
        "topics": [
            {
                "topic": key[0],
                "partitions": [
                    {"partition": key[1], "current_leader_epoch": epoch, "leader_epoch": last_epoch}
                ],
            }
        ],
    }
    response = await connection.call(
        ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, body
    )
    part = response["topics"][0]["partitions"][0]
    if part["error_code"]:
        raise _Refetch(ErrorCode(part["error_code"]).name)
    their_epoch, their_end = part["leader_epoch"], part["end_offset"]
    if their_epoch < 0 or their_end < 0:
        target = partition_log.log_start_offset  # the leader holds nothing of these epochs
    elif their_epoch == last_epoch:
        target = their_end
    else:
        mine_epoch, mine_end = partition_log.end_offset_for_epoch(their_epoch)
        target = min(their_end, mine_end) if mine_epoch == their_epoch else their_end
    partition_log.truncate_to(min(target, partition_log.end_offset))


async def fetch_once(
    node: BrokerState, connection: ControllerConnection, key: tuple[str, int], epoch: int
) -> None:
    """One replica Fetch from the leader: append what it sends, take its high watermark."""
    partition_log = node.replica_log(*key)
    topic = node.image.topics.get(key[0])
    if topic is None:
        raise _Refetch(f"topic {key[0]} is gone")
    body: dict[str, Any] = {
        "replica_state": {"replica_id": node.node_id, "replica_epoch": node.epoch},
        "max_wait_ms": REPLICA_FETCH_WAIT_MS,
        "min_bytes": 1,
        "max_bytes": REPLICA_FETCH_BYTES,
        "isolation_level": IsolationLevel.READ_UNCOMMITTED,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic_id": topic.topic_id,
                "partitions": [
                    {
                        "partition": key[1],
                        "current_leader_epoch": epoch,
                        "fetch_offset": partition_log.end_offset,
                        "last_fetched_epoch": partition_log.batches[-1].leader_epoch
                        if partition_log.batches
                        else -1,
                        "log_start_offset": partition_log.log_start_offset,
                        "partition_max_bytes": REPLICA_FETCH_BYTES,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    response = await connection.call(ApiKey.FETCH, FETCH_VERSION, body)
    if response["error_code"]:
        raise _Refetch(ErrorCode(response["error_code"]).name)
    part = response["responses"][0]["partitions"][0]
    if part["error_code"]:
        raise _Refetch(ErrorCode(part["error_code"]).name)
    if part["records"]:
        partition_log.append_replicated(part["records"])
        node.replication.flush_by_count(key)
    if partition_log.advance_high_watermark(part["high_watermark"]):
        node.data_arrived()
    start = part["log_start_offset"]
    if partition_log.log_start_offset < start <= partition_log.high_watermark:
        partition_log.delete_before(start)
