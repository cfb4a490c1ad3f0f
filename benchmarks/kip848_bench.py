"""A KIP-848 rebalance, timed: three confluent-kafka consumers with `group.protocol=consumer` in
a group on a 6-partition topic. Two join and settle (untimed); then the third joins: from its
subscribe until the three hold two partitions each; then one leaves: from its close until the
other two hold all six.

Sides: kipwire's mock (one broker, in a subprocess: `python -m kipwire.mockbroker serve`) and
real Apache Kafka 4.4.0 (tests/realkafka's harness: one combined controller+broker node, full JIT),
each with its own defaults and each with the other's heartbeat interval. A member learns of a
rebalance at its next heartbeat, so `group.consumer.heartbeat.interval.ms` sets the pace: the
mock's default is 500 ms, Kafka's 5 s, and Kafka refuses an interval below
`group.consumer.min.heartbeat.interval.ms` (5 s too), so its 500 ms side lowers both. Each round
uses a new group; the median of the rounds is reported, with every side's ratio to Kafka's.
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
HEARTBEAT = "group.consumer.heartbeat.interval.ms"
#: The mock's default heartbeat interval, on Kafka (whose minimum must come down with it).
FAST_HEARTBEAT = {HEARTBEAT: "500", "group.consumer.min.heartbeat.interval.ms": "500"}
#: Kafka's default heartbeat interval, on the mock.
KAFKA_HEARTBEAT = {HEARTBEAT: "5000"}


@contextmanager
def real_kafka_cluster(config: dict[str, str] | None = None) -> Iterator[str]:
    """Real Kafka (the harness's reference release), one combined node with broker `config`;
    yields its bootstrap."""
    with tempfile.TemporaryDirectory(prefix="kipwire-kip848-bench-") as tmp:
        cluster = KafkaCluster.start(
            ensure_kafka(), Path(tmp), single(), extra_props=config, jvm_opts=BENCH_JVM_OPTS
        )
        try:
            yield cluster.bootstrap()
        finally:
            cluster.stop()


REAL = f"real Kafka {KAFKA_VERSION}"
REAL_FAST = f"{REAL}, heartbeat 500 ms"
MOCK = "kipwire"
MOCK_SLOW = "kipwire, heartbeat 5 s"
SIDES: dict[str, Callable[[], AbstractContextManager[str]]] = {
    REAL: real_kafka_cluster,
    REAL_FAST: functools.partial(real_kafka_cluster, FAST_HEARTBEAT),
    MOCK: functools.partial(kipwire_cluster, brokers=1),
    MOCK_SLOW: functools.partial(kipwire_cluster, brokers=1, config=KAFKA_HEARTBEAT),
}
#: side -> the side with the same heartbeat interval on the other broker.
SAME_SETTINGS = {MOCK: REAL_FAST, MOCK_SLOW: REAL}


def _poll_until(consumers: list[Consumer], done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("the group did not settle")
        for consumer in consumers:
            consumer.poll(0.01)


def _holding(consumers: list[Consumer], each: int) -> Callable[[], bool]:
    """True once every consumer holds `each` partitions, all of them distinct."""

    def done() -> bool:
        held = [tp.partition for c in consumers for tp in c.assignment()]
        counts = {len(c.assignment()) for c in consumers}
        return counts == {each} and len(set(held)) == len(held) == PARTITIONS

    return done


def one_round(bootstrap: str, group: str) -> tuple[float, float]:
    """(seconds for a third member's join to settle, seconds for a leaver's partitions to move)."""
    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"}
    consumers = [Consumer(config) for _ in range(MEMBERS)]
    try:
        first = consumers[: MEMBERS - 1]
        for consumer in first:
            consumer.subscribe([TOPIC])
        _poll_until(first, _holding(first, PARTITIONS // len(first)))
        started = time.monotonic()
        consumers[-1].subscribe([TOPIC])
        _poll_until(consumers, _holding(consumers, PARTITIONS // MEMBERS))
        joined = time.monotonic() - started
        leaving = consumers.pop()
        started = time.monotonic()
        leaving.close()
        _poll_until(consumers, _holding(consumers, PARTITIONS // len(consumers)))
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
    """Run every side (or those named) and print the medians and the ratios."""
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
        print(f"{name}: a third member settles in {join:.2f} s; a leaver's in {leave:.2f} s")
    for name, (join, leave) in results.items():
        for base in dict.fromkeys((REAL, SAME_SETTINGS.get(name))):
            if base in results and base != name and not name.startswith(REAL):
                ratio = (
                    f"join {results[base][0] / join:.1f}x, leave {results[base][1] / leave:.1f}x"
                )
                print(f"{name} vs {base}: {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
