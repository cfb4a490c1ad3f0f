"""flush.ms: the periodic pass flushes the logs that have it once their records are that old;
the logs of topics without it are never visited (no per-partition work on a timer)."""

from __future__ import annotations

import pytest
import trio
from trio_client import AcksAllProducer

from kipwire.mockbroker.cluster import open_cluster


@pytest.mark.trio
async def test_flush_ms_flushes_only_the_logs_that_have_it(autojump_clock):
    async with open_cluster(brokers=1) as cluster:
        await cluster.create_topic("timed", config={"flush.ms": 500})
        await cluster.create_topic("untimed")
        for topic in ("timed", "untimed"):
            producer = AcksAllProducer(cluster, topic)
            await producer.init(1)
            assert await producer.send(b"v")
        node = cluster.node(1)
        assert node.replication.unflushed == {("timed", 0)}
        await trio.sleep(1)
        assert node.logs["timed", 0].flushed_offset == 1
        assert node.logs["untimed", 0].flushed_offset == 0
        assert node.replication.unflushed == set()
