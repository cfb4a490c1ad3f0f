"""Replay throughput: requests replayed per second at `--pace max` against the mock cluster.

A one-broker mock records a capture of `--connections` client connections, each sending
`--requests` requests (a Produce of ten records with acks=1, then a Fetch of what it wrote,
alternating) through `kipwire.client`. The capture is then replayed against a fresh one-broker
mock with `kipwire.captures.replay(pace="max")`, `--runs` times; each run prints the requests
sent, the sending time (rate = requests / sending seconds: extraction, rewriting, encoding,
causality and the target's answers) and the whole call's wall time (reading the capture, sending,
decoding both sides and comparing). The best run's rate is the figure in benchmarks/README.md.

    .venv/bin/python benchmarks/replay_bench.py [--connections 4] [--requests 500] [--runs 3]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from kipwire.captures import replay
from kipwire.client import Connection
from kipwire.codec import ApiKey, records
from kipwire.mockbroker import MockCluster

TOPIC = "bench"


def _client(bootstrap: str, n: int, requests: int) -> None:
    """One client connection: Produce and Fetch alternating on partition `n`."""
    with Connection(bootstrap, client_id=f"bench-{n}") as conn:
        conn.negotiate_versions()
        offset = 0
        for i in range(requests // 2):
            batch = records.build_batch(
                [{"key": b"k%d" % i, "value": b"v" * 100, "timestamp": 1_700_000_000_000}] * 10
            )
            data = [{"index": n, "records": batch}]
            conn.call(
                ApiKey.PRODUCE,
                9,
                {
                    "acks": 1,
                    "timeout_ms": 5000,
                    "topic_data": [{"name": TOPIC, "partition_data": data}],
                },
            )
            part = {"partition": n, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
            conn.call(
                ApiKey.FETCH,
                12,
                {"max_wait_ms": 0, "topics": [{"topic": TOPIC, "partitions": [part]}]},
            )
            offset += 10


def record(path: Path, connections: int, requests: int) -> None:
    """The capture: `connections` clients at once against a recording one-broker mock."""
    with MockCluster(brokers=1, record=str(path)) as cluster:
        cluster.create_topic(TOPIC, connections, 1)
        threads = [
            threading.Thread(target=_client, args=(cluster.bootstrap_servers, n, requests))
            for n in range(connections)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)


def main() -> int:
    """Record once, replay `--runs` times, print each run and the best rate."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--requests", type=int, default=500, help="per connection")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        capture = Path(tmp) / "bench.pcapng"
        record(capture, args.connections, args.requests)
        best = 0.0
        for run in range(args.runs):
            with MockCluster(brokers=1) as target:
                target.create_topic(TOPIC, args.connections, 1)
                began = time.perf_counter()
                result = replay(
                    [capture], bootstrap=target.bootstrap_servers, out=Path(tmp) / f"r{run}"
                )
                wall = time.perf_counter() - began
            rate = result.requests_per_second
            best = max(best, rate)
            print(
                f"run {run + 1}: {result.requests_sent} requests on {result.connections} "
                f"connections, sent in {result.seconds:.2f} s ({rate:,.0f} requests/s), "
                f"whole replay {wall:.2f} s, {len(result.semantic_differences)} semantic "
                "differences"
            )
        print(f"best: {best:,.0f} requests replayed per second at --pace max")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
