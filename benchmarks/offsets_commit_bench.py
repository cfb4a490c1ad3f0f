"""What replicating committed offsets costs a commit in process mode: a synchronous OffsetCommit
against an OffsetFetch on the same coordinator (which replicates nothing), alternated in one run,
in process mode and in-process.

    python benchmarks/offsets_commit_bench.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from confluent_kafka import Consumer, TopicPartition

from kipwire.mockbroker import MockCluster

TIMEOUT = 20.0


def _measure(processes: bool, rounds: int) -> tuple[float, float]:
    """Median milliseconds of a synchronous commit and of a committed-offsets fetch."""
    with MockCluster(brokers=3, processes=processes) as cluster:
        cluster.create_topic("bench", partitions=1, replication_factor=3)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "bench"})
        part = TopicPartition("bench", 0)
        commits: list[float] = []
        fetches: list[float] = []
        for i in range(rounds):
            started = time.perf_counter()
            consumer.commit(offsets=[TopicPartition("bench", 0, i)], asynchronous=False)
            commits.append(time.perf_counter() - started)
            started = time.perf_counter()
            consumer.committed([part], TIMEOUT)
            fetches.append(time.perf_counter() - started)
        consumer.close()
    return statistics.median(commits) * 1000, statistics.median(fetches) * 1000


def main() -> None:
    """Print both modes side by side with the load average."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=300)
    rounds = parser.parse_args().rounds
    print(f"load average {os.getloadavg()[0]:.2f}, {rounds} rounds")
    for processes in (True, False):
        commit, fetch = _measure(processes, rounds)
        mode = "processes " if processes else "in-process"
        print(f"{mode}: commit {commit:.2f} ms, fetch {fetch:.2f} ms, ratio {commit / fetch:.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
