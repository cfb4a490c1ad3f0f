"""The broker's log cleaner on a running cluster: time retention on a MockClock moves ListOffsets
EARLIEST on the leader and the follower alike, DeleteRecords agrees, and a compacted topic read
with real clients holds the latest value per key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import trio

from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.cluster import Cluster, open_cluster
from tests.mockbroker.trio_client import call_broker

PRODUCE_VERSION, LIST_OFFSETS_VERSION, DELETE_RECORDS_VERSION = 9, 7, 2
RETENTION_MS, SEGMENT_MS = 30_000, 5_000
EARLIEST = -2


async def _produce(cluster: Cluster, values: list[bytes], timestamp: int) -> int:
    batch = build_batch([{"key": b"k", "value": v, "timestamp": timestamp} for v in values])
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
    }
    response = await call_broker(cluster, 1, ApiKey.PRODUCE, PRODUCE_VERSION, body, 5.0)
    (part,) = response["responses"][0]["partition_responses"]
    assert part["error_code"] == ErrorCode.NONE
    return part["base_offset"]


async def _earliest(cluster: Cluster) -> int:
    asked = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": EARLIEST}]}],
    }
    body = await call_broker(cluster, 1, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, asked, 5.0)
    (part,) = body["topics"][0]["partitions"]
    assert part["error_code"] == ErrorCode.NONE
    return part["offset"]


async def _delete_records(cluster: Cluster, offset: int) -> int:
    asked = {
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": offset}]}],
        "timeout_ms": 5000,
    }
    body = await call_broker(cluster, 1, ApiKey.DELETE_RECORDS, DELETE_RECORDS_VERSION, asked, 5)
    (part,) = body["topics"][0]["partitions"]
    assert part["error_code"] == ErrorCode.NONE
    return part["low_watermark"]


@pytest.mark.trio
async def test_time_retention_deletes_a_segment_on_leader_and_follower(autojump_clock):
    async with open_cluster(brokers=2) as cluster:
        config = {"retention.ms": RETENTION_MS, "segment.ms": SEGMENT_MS}
        await cluster.create_topic("t", replication_factor=2, config=config)
        start = cluster.node(1).cleaner.now_ms()
        assert await _produce(cluster, [b"a", b"b"], start) == 0
        await trio.sleep(6)
        # past segment.ms of record time after the first batch: the next one rolls a segment
        assert await _produce(cluster, [b"c"], start + 6_000) == 2
        await cluster.wait_until(lambda: cluster.node(2).logs["t", 0].high_watermark == 3)
        assert [len(cluster.node(b).logs["t", 0].segments) for b in (1, 2)] == [2, 2]
        await trio.sleep(RETENTION_MS / 1000 - 6 - 3)
        assert await _earliest(cluster) == 0  # the first segment's records are not 30 s old
        await trio.sleep(5)
        assert await _earliest(cluster) == 2
        # the follower, on its own copy and its own clock, deletes the same segment
        assert cluster.node(2).logs["t", 0].log_start_offset == 2
        assert await _delete_records(cluster, 1) == 2  # below the log start: nothing moves
        metrics = cluster.metrics()
        assert (metrics["log_start_offset"]["t-0"], metrics["log_segments"]["t-0"]) == (2, 1)
        assert metrics["log_size_bytes"]["t-0"] == cluster.node(1).logs["t", 0].size > 0
        # the active segment holds the last record; the cleaner no longer visits the log
        assert ("t", 0) not in cluster.node(1).cleaner.watched


@pytest.mark.trio
async def test_an_idle_cluster_cleaner_visits_no_log(autojump_clock):
    """A known difference: Kafka deletes an expired active segment (rolling an empty one); the
    mock leaves a one-segment log until its next append rolls it, as its cleaner visits only
    logs with several segments, so that an idle cluster's pass costs nothing."""
    async with open_cluster(brokers=1) as cluster:
        await cluster.create_topic("t", config={"retention.ms": 1})
        await _produce(cluster, [b"a"], 0)
        await trio.sleep(10)
        node = cluster.node(1)
        assert node.cleaner.watched == set()
        assert node.logs["t", 0].log_start_offset == 0  # one segment: left until it rolls


def test_a_compacted_topic_read_by_real_clients_holds_the_latest_value_per_key():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    config = {
        "cleanup.policy": "compact",
        "segment.bytes": 1024 * 1024,
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": 0,
    }
    with MockCluster(brokers=1, config={"log.retention.check.interval.ms": 100}) as cluster:
        cluster.create_topic("t", config=config)
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5}
        )
        value = b"x" * 10_000
        for i in range(300):  # about 3 MB over 50 keys: three segments or more
            producer.produce("t", key=b"key-%d" % (i % 50), value=value + b"%d" % i)
        producer.produce("t", key=b"key-0", value=None)  # a tombstone for key-0
        assert producer.flush(30) == 0
        log = cluster._in_trio(lambda: cluster.cluster.node(1).logs["t", 0])
        assert cluster.wait_until(lambda: log.cleaned_offset > 0, timeout=20)
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "compacted",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["t"])
        seen: dict[bytes, tuple[int, bytes | None]] = {}
        offsets = []
        end = cluster._in_trio(lambda: log.high_watermark)
        for _ in range(400):
            message = consumer.poll(1.0)
            if message is None or message.error():
                if offsets and offsets[-1] == end - 1:
                    break
                continue
            offsets.append(message.offset())
            seen[message.key()] = (message.offset(), message.value())
            if message.offset() == end - 1:
                break
        consumer.close()
    assert len(offsets) < 301  # older values of the cleaned segments are gone
    assert offsets == sorted(offsets) and offsets[-1] == end - 1
    assert seen[b"key-0"] == (300, None)  # the tombstone, in the active segment, is kept
    # every other key's last value is there, at the offset it was written at
    for k in range(1, 50):
        last = max(i for i in range(300) if i % 50 == k)
        assert seen[b"key-%d" % k] == (last, value + b"%d" % last)


def _rss_mb(pid: int) -> float:
    """A process's resident set in MB (Linux's /proc)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads RSS from /proc")
def test_size_retention_bounds_a_serving_broker_memory():
    """Issue 22: `KIPWIRE_RSS_MB` MB (30 by default, 100 in `make test-deep`) through a topic
    with retention.bytes=1 MB leaves the broker's RSS under 200 MB and its log start moved."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    total_mb = int(os.environ.get("KIPWIRE_RSS_MB", "30"))
    command = [sys.executable, "-m", "kipwire.mockbroker", "serve", "--brokers", "1", "--quiet"]
    for setting in ("log.retention.bytes=1048576", "log.segment.bytes=1048576"):
        command += ["--config", setting]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        bootstrap = proc.stdout.readline().strip()
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        value = os.urandom(100_000)
        for _ in range(total_mb * 10):
            while True:
                try:
                    producer.produce("retained", value=value)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
        assert producer.flush(60) == 0
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "rss"})
        partition = confluent_kafka.TopicPartition("retained", 0)
        low = high = 0
        deadline = time.monotonic() + 30
        for _ in range(300):  # the cleaner runs every second (the mock's check interval)
            low, high = consumer.get_watermark_offsets(partition, timeout=10)
            if high - low <= 30 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        consumer.close()
        assert high == total_mb * 10
        assert 10 <= high - low <= 30  # about 1 MB to 2 MB of 100 KB records are kept
        assert _rss_mb(proc.pid) < 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        finally:
            proc.kill()
