"""What a kipwire broker spends on a Produce and on a Fetch, with no client's batching in the way.

mock_bench.py's rates follow confluent-kafka, whose batching varies with its own speed, so its
broker CPU per record moves with the client. Here kipwire's own blocking client sends a fixed
stream to a `kipwire-broker serve` subprocess (3 brokers): per stage, a one-partition topic of
its own, `--requests` Produce requests of `--records` x 100 B each (v11, one at a time), then
Fetch requests of 1 MB (v16, by topic id) until every record is read. The stages set the topic's
replication factor and the produce's acks: `rf3-all` (replication factor 3, acks=all: the
leader's request, two followers' fetches and appends, the high watermark's move and the waiting
produce's wake-up, all in the one process) against `rf3-1`, `rf1-all` and `rf1-1`, so that
what replication adds is seen apart from the leader's own path. The serve process's CPU time
(its threads' schedstat) is measured around each phase, less what it spends idle (heartbeats and
the metadata log's long polls, measured for a second before), and printed per request and per
record. `--in-process` times the broker's `serve.answer_request` alone instead, on a cluster in
this process (no sockets, no trio scheduling): one Produce v9 frame of 4 partitions x 100
records and one Fetch v13 of 4 partitions x 1 MB, answered again and again (CPU time, the
fastest of five runs).
Usage: ``python benchmarks/mock_request_cost.py [--requests N] [--records R] [--size B]
[--stages rf3-all,rf3-1,rf1-all,rf1-1] [--in-process]``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import trio
from mock_bench import create_topic, kipwire_process, thread_cpu

from kipwire.client import Connection
from kipwire.codec import ApiKey, ErrorCode, encode_request
from kipwire.codec.records import build_batch, iter_batches
from kipwire.mockbroker.cluster import open_cluster
from kipwire.mockbroker.serve import answer_request

TOPIC = "cost"
FETCH_BYTES = 1 << 20
#: stage name -> (replication factor, acks)
STAGES = {"rf3-all": (3, -1), "rf3-1": (3, 1), "rf1-all": (1, -1), "rf1-1": (1, 1)}


def main() -> None:
    """Start a cluster, run both phases of every stage and print the broker's CPU per request."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--records", type=int, default=700)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument(
        "--stages", default=",".join(STAGES), help="comma-separated, of " + ", ".join(STAGES)
    )
    parser.add_argument("--in-process", action="store_true", help="time answer_request alone")
    args = parser.parse_args()
    if args.in_process:
        trio.run(_in_process, args.size)
        return
    stages = args.stages.split(",")
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        parser.error(f"unknown stages {unknown}; known: {', '.join(STAGES)}")
    batch = build_batch([{"value": b"x" * args.size} for _ in range(args.records)])
    records = args.requests * args.records
    with kipwire_process() as (bootstrap, pid):
        tasks = Path(f"/proc/{pid}/task")

        def cpu() -> float:
            return sum(thread_cpu(tasks).values())

        for stage in stages:
            create_topic(bootstrap, f"{TOPIC}-{stage}", STAGES[stage][0], partitions=1)
        start, before = time.perf_counter(), cpu()
        time.sleep(1.0)
        idle = (cpu() - before) / (time.perf_counter() - start)
        print(f"load average {os.getloadavg()[0]:.1f}; idle serve process {idle * 1e3:.1f} ms/s")
        for stage in stages:
            produce, fetch = _stage(bootstrap, stage, batch, args.requests, records, cpu, idle)
            for name, (seconds, used, count), what in (
                ("produce", produce, f"requests of {args.records} x {args.size} B"),
                ("fetch", fetch, "responses of up to 1 MB"),
            ):
                print(
                    f"{stage} {name}: {count} {what} in {seconds:.2f} s:"
                    f" {used / count * 1e6:.0f} us CPU each, {used / records * 1e6:.2f} us/record"
                )
        print(f"load average {os.getloadavg()[0]:.1f} at the end")


def _stage(
    bootstrap: str,
    stage: str,
    batch: bytes,
    requests: int,
    records: int,
    cpu: Callable[[], float],
    idle: float,
) -> tuple[tuple[float, float, int], tuple[float, float, int]]:
    """One stage's produce phase, then its fetch phase, on the stage's topic's leader."""
    topic, address = _leader(bootstrap, f"{TOPIC}-{stage}")
    acks = STAGES[stage][1]
    with Connection(address) as conn:
        produce = _phase(cpu, idle, lambda: _produce(conn, topic["name"], batch, acks, requests))
        fetch = _phase(cpu, idle, lambda: _fetch(conn, topic["topic_id"], records))
    return produce, fetch


def _leader(bootstrap: str, name: str) -> tuple[dict, str]:
    """The topic's metadata and its one partition's leader's address."""
    with Connection(bootstrap.split(",")[0]) as any_broker:
        metadata = any_broker.call(ApiKey.METADATA, 12, {"topics": [{"name": name}]})
    (topic,) = metadata["topics"]
    leader = topic["partitions"][0]["leader_id"]
    address = next(
        f"{b['host']}:{b['port']}" for b in metadata["brokers"] if b["node_id"] == leader
    )
    return topic, address


async def _in_process(size: int) -> None:
    """CPU per `answer_request` of a Produce and of a Fetch, on a one-broker cluster in process."""
    async with open_cluster(brokers=1) as cluster:
        await cluster.create_topic(TOPIC, partitions=4)
        (node,) = cluster.nodes.values()
        with trio.fail_after(10):
            while node.image.partition(TOPIC, 3) is None:
                await trio.sleep(0.01)
        batch = build_batch([{"value": b"x" * size} for _ in range(100)])
        parts = [{"index": i, "records": batch} for i in range(4)]
        body = {
            "acks": -1,
            "timeout_ms": 30000,
            "topic_data": [{"name": TOPIC, "partition_data": parts}],
        }
        produce = encode_request(ApiKey.PRODUCE, 9, body, correlation_id=1, client_id="bench")
        us = await _fastest(node, produce, 600)
        print(f"in process: Produce v9 of 4 partitions x 100 records: {us:.0f} us CPU each")
        topic_id = node.image.topics[TOPIC].topic_id
        wanted = [
            {"partition": i, "fetch_offset": 0, "partition_max_bytes": FETCH_BYTES}
            for i in range(4)
        ]
        body = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": 4 * FETCH_BYTES,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic_id": topic_id, "partitions": wanted}],
        }
        fetch = encode_request(ApiKey.FETCH, 13, body, correlation_id=2, client_id="bench")
        us = await _fastest(node, fetch, 40)
        print(f"in process: Fetch v13 of 4 partitions x 1 MB: {us:.0f} us CPU each")


async def _fastest(node: object, request: bytes, count: int) -> float:
    """The fastest of five runs of `count` answers to one request frame, in us CPU each."""
    frame = memoryview(bytearray(request))
    runs = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(count):
            await answer_request(node, frame)  # type: ignore[arg-type]
        runs.append((time.process_time() - start) / count * 1e6)
    return min(runs)


def _phase(
    cpu: Callable[[], float], idle: float, work: Callable[[], int]
) -> tuple[float, float, int]:
    """(seconds, broker CPU seconds less idle, count) of one phase."""
    start, before = time.perf_counter(), cpu()
    count = work()
    seconds = time.perf_counter() - start
    return seconds, cpu() - before - idle * seconds, count


def _produce(conn: Connection, topic: str, batch: bytes, acks: int, requests: int) -> int:
    body = {
        "acks": acks,
        "timeout_ms": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    for _ in range(requests):
        (part,) = conn.call(ApiKey.PRODUCE, 11, body)["responses"][0]["partition_responses"]
        if part["error_code"] != ErrorCode.NONE:
            raise RuntimeError(f"produce failed: {part['error_code']}")
    return requests


def _fetch(conn: Connection, topic_id: object, records: int) -> int:
    offset, responses = 0, 0
    while offset < records:
        body = {
            "max_wait_ms": 500,
            "min_bytes": 1,
            "max_bytes": FETCH_BYTES,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {"partition": 0, "fetch_offset": offset, "partition_max_bytes": FETCH_BYTES}
                    ],
                }
            ],
        }
        (part,) = conn.call(ApiKey.FETCH, 16, body)["responses"][0]["partitions"]
        if part["error_code"] != ErrorCode.NONE:
            raise RuntimeError(f"fetch failed: {part['error_code']}")
        offset = _next_offset(part["records"])
        responses += 1
    return responses


def _next_offset(records: bytes) -> int:
    """The offset after the last batch of a fetched partition's records."""
    *_, last = iter_batches(records, verify_crc=False)
    return last.last_offset + 1


if __name__ == "__main__":
    main()
