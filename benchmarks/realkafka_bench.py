"""Real Apache Kafka 4.1 as a peer: confluent-kafka producing, then consuming, 100,000 x 100 B
records on a real 3-broker KRaft cluster, on librdkafka's mock cluster (`test.mock.num.brokers=3`)
and on kipwire's mock cluster, in one run, with the ratios. Each side first moves --warmup records
each way untimed (a cold JVM would otherwise be timed while it compiles).

The workload is mock_bench.py's own (`produce`, `consume`, a 4-partition topic), imported so the
sides cannot drift apart. Real Kafka comes from tests/realkafka's harness: jars fetched once from
Maven Central into ~/.cache/kipwire, a combined controller+broker node plus two brokers, each JVM
with the full JIT and a 512 MiB heap, all stopped by pid at the end.
Usage: ``python benchmarks/realkafka_bench.py [--records N] [--size B] [--warmup N] [--side S]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "realkafka"))

from kafka_dist import KafkaUnavailable, ensure_kafka  # noqa: E402
from kafka_harness import BENCH_JVM_OPTS, KafkaCluster, three_brokers  # noqa: E402
from mock_bench import (  # noqa: E402
    PARTITIONS,
    consume,
    create_topic,
    kipwire_cluster,
    librdkafka_cluster,
    produce,
)


@contextmanager
def real_kafka_cluster() -> Iterator[str]:
    """Real Kafka 4.1: node 0 (controller + broker) and brokers 1, 2; yields bootstrap servers."""
    with tempfile.TemporaryDirectory(prefix="kipwire-realkafka-bench-") as tmp:
        cluster = KafkaCluster.start(
            ensure_kafka(), Path(tmp), three_brokers(), jvm_opts=BENCH_JVM_OPTS
        )
        try:
            yield cluster.bootstrap()
        finally:
            cluster.stop()


SIDES = {
    "real Kafka 4.1": (real_kafka_cluster, True),
    "librdkafka mock": (librdkafka_cluster, False),
    "kipwire": (kipwire_cluster, True),
}


def run_side(name: str, records: int, value: bytes, warmup: int) -> tuple[float, float]:
    """(produce msg/s, consume msg/s) of one side, after `warmup` records each way untimed."""
    cluster, needs_topic = SIDES[name]
    with cluster() as bootstrap:
        if needs_topic:
            create_topic(bootstrap)
        # untimed first: start-up costs, and a JVM's JIT compiling its hot paths
        produce(bootstrap, warmup, value)
        consume(bootstrap, warmup)
        produced = produce(bootstrap, records, value)
        # reads from offset 0: the warm-up records first, the same work per record
        consumed = consume(bootstrap, records)
    return records / produced, records / consumed


def main() -> int:
    """Run the chosen sides, print rates and every side's ratio to real Kafka."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20_000, help="untimed records first")
    parser.add_argument("--side", action="append", choices=sorted(SIDES), dest="sides")
    args = parser.parse_args()
    if args.records < 1 or args.size < 0 or args.warmup < PARTITIONS:
        parser.error(f"--records must be >= 1, --size >= 0 and --warmup >= {PARTITIONS}")
    sides = args.sides or list(SIDES)
    value = b"x" * args.size
    results = {}
    for name in sides:
        try:
            results[name] = run_side(name, args.records, value, args.warmup)
        except KafkaUnavailable as e:
            print(f"{name:16} skipped: {e}", file=sys.stderr)
            continue
        produce_rate, consume_rate = results[name]
        print(
            f"{name:16} produce {produce_rate:>10,.0f} msg/s   consume {consume_rate:>10,.0f} msg/s"
        )
    base = results.get("real Kafka 4.1")
    if base is None:
        print("no real Kafka result to compare with", file=sys.stderr)
        return 1
    for name, (p, c) in results.items():
        if name != "real Kafka 4.1":
            label = f"{name} / Kafka"
            print(f"{label:16} produce {p / base[0]:>10.2f}x        consume {c / base[1]:>10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
