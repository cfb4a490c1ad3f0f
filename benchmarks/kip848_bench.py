"""A KIP-848 rebalance, timed: three confluent-kafka consumers with `group.protocol=consumer` join
a group on a 6-partition topic (from their subscribe until each holds two partitions), then one
leaves (from its close until the other two hold all six).

Sides: kipwire's mock (one broker, in a subprocess: `python -m kipwire.mockbroker serve`) and
real Apache Kafka 4.4.0 (tests/realkafka's harness: one combined controller+broker node, full JIT),
each with its own defaults: the mock's members heartbeat every 500 ms, Kafka's every 5 s
(`group.consumer.heartbeat.interval.ms`), and a member learns of a rebalance at its next
heartbeat. Each round uses a new group; the median of the rounds is reported.
Usage: ``python benchmarks/kip848_bench.py [--rounds N] [--side S]``.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "realkafka"))

from kafka_dist import KAFKA_VERSION, KafkaUnavailable, ensure_kafka  # noqa: E402
from kafka_harness import BENCH_JVM_OPTS, KafkaCluster, single  # noqa: E402
from mock_bench import kipwire_cluster  # noqa: E402  (this script's folder is on sys.path)

TOPIC = "rebalance"
PARTITIONS = 6
MEMBERS = 3
TIMEOUT = 60.0


@contextmanager
def real_kafka_cluster() -> Iterator[str]:
    """Real Kafka (the harness's reference release), one combined node; yields its bootstrap."""
    with tempfile.TemporaryDirectory(prefix="kipwire-kip848-bench-") as tmp:
        cluster = KafkaCluster.start(ensure_kafka(), Path(tmp), single(), jvm_opts=BENCH_JVM_OPTS)
        try:
            yield cluster.bootstrap()
        finally:
            cluster.stop()


REAL = f"real Kafka {KAFKA_VERSION}"
SIDES: dict[str, Callable[[], AbstractContextManager[str]]] = {
    REAL: real_kafka_cluster,
    "kipwire": functools.partial(kipwire_cluster, brokers=1),
}


def _poll_until(consumers: list[Consumer], done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("the group did not settle")
        for consumer in consumers:
            consumer.poll(0.01)


def one_round(bootstrap: str, group: str) -> tuple[float, float]:
    """(seconds for three members to settle, seconds for a leaver's partitions to move)."""
    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"}
    consumers = [Consumer(config) for _ in range(MEMBERS)]
    try:
        started = time.monotonic()
        for consumer in consumers:
            consumer.subscribe([TOPIC])
        _poll_until(consumers, lambda: all(len(c.assignment()) == 2 for c in consumers))
        joined = time.monotonic() - started
        leaving = consumers.pop()
        started = time.monotonic()
        leaving.close()
        _poll_until(consumers, lambda: sum(len(c.assignment()) for c in consumers) == PARTITIONS)
        return joined, time.monotonic() - started
    finally:
        for consumer in consumers:
            consumer.close()


def run_side(name: str, rounds: int) -> tuple[float, float]:
    """Median (join, leave) seconds of one side over `rounds` groups."""
    with SIDES[name]() as bootstrap:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
            future.result(timeout=30)
        times = [one_round(bootstrap, f"bench-{i}") for i in range(rounds)]
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


def main() -> int:
    """Run every side (or one) and print the medians and the ratios to real Kafka."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--side", choices=sorted(SIDES), action="append")
    args = parser.parse_args()
    results = {}
    for name in args.side or list(SIDES):
        try:
            results[name] = run_side(name, args.rounds)
        except KafkaUnavailable as e:
            print(f"{name}: skipped ({e})")
            continue
        join, leave = results[name]
        print(
            f"{name}: 3 members settle in {join:.2f} s; a leaver's partitions move in {leave:.2f} s"
        )
    real = results.get(REAL)
    mock = results.get("kipwire")
    if real and mock:
        print(
            f"kipwire vs real Kafka: join {real[0] / mock[0]:.1f}x, leave {real[1] / mock[1]:.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
