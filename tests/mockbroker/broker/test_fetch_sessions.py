"""Followers fetch in incremental fetch sessions (KIP-227): an idle follower sends one small fetch
per leader per replica.fetch.wait.max.ms whatever the partitions, names only partitions whose
offset moved, and the leader's long poll wakes on an append."""

from __future__ import annotations

import pytest
import trio
from trio_client import AcksAllProducer, call_broker

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker.broker.fetcher import REPLICA_FETCH_WAIT_MS
from kipwire.mockbroker.cluster import open_cluster

FETCH_VERSION = 17
OUTSIDER = 99  # a replica id no broker has: its sessions are the test's own


def _fetch(session_id: int, epoch: int, topic_id: object, parts: list[int], wait_ms: int) -> dict:
    return {
        "replica_state": {"replica_id": OUTSIDER, "replica_epoch": -1},
        "max_wait_ms": wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition": p,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": 0,
                        "partition_max_bytes": 1 << 20,
                    }
                    for p in parts
                ],
            }
        ]
        if parts
        else [],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


@pytest.mark.trio
async def test_an_idle_follower_fetches_once_per_wait_per_leader_whatever_the_partitions(
    autojump_clock,
):
    async with open_cluster(brokers=3) as cluster:
        await cluster.create_topic("t", partitions=60, replication_factor=3)
        await trio.sleep(2)
        sessions = [s for n in cluster.nodes.values() for s in n.fetch_sessions]
        assert len(sessions) == 6  # each broker's two followers
        assert sum(len(s.partitions) for s in sessions) == 120  # 60 partitions x 2 followers
        before = {id(s): s.epoch for s in sessions}
        idle = 5.0
        await trio.sleep(idle)
        fetches = [s.epoch - before[id(s)] for s in sessions]
        # one long poll per wait, not one per partition (60 partitions would be 600 fetches)
        assert all(n <= idle * 1000 / REPLICA_FETCH_WAIT_MS + 2 for n in fetches), fetches


@pytest.mark.trio
async def test_a_session_names_only_what_moved_and_wakes_on_an_append(autojump_clock):
    async with open_cluster(brokers=1) as cluster:
        await cluster.create_topic("t", partitions=3)
        topic_id = cluster.node(1).image.topics["t"].topic_id
        full = await call_broker(
            cluster, 1, ApiKey.FETCH, FETCH_VERSION, _fetch(0, 0, topic_id, [0, 1, 2], 0), 5.0
        )
        session = full["session_id"]
        assert session != 0 and len(full["responses"][0]["partitions"]) == 3
        wrong = await call_broker(
            cluster, 1, ApiKey.FETCH, FETCH_VERSION, _fetch(session, 5, topic_id, [], 0), 5.0
        )
        assert wrong["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        unknown = await call_broker(
            cluster, 1, ApiKey.FETCH, FETCH_VERSION, _fetch(session + 1, 1, topic_id, [], 0), 5.0
        )
        assert unknown["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

        answer: dict = {}

        async def long_poll() -> None:
            body = _fetch(session, 1, topic_id, [], 5000)
            answer.update(await call_broker(cluster, 1, ApiKey.FETCH, FETCH_VERSION, body, 10.0))

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(long_poll)
            await trio.sleep(1)
            producer = AcksAllProducer(cluster, "t", partition=1)
            await producer.init(1)
            assert await producer.send(b"v")
        # answered on the append, well before MaxWaitMs, with only the partition that moved
        assert trio.current_time() - start < 2
        assert answer["error_code"] == ErrorCode.NONE
        (topic,) = answer["responses"]
        assert [p["partition_index"] for p in topic["partitions"]] == [1]
        assert topic["partitions"][0]["records"]
