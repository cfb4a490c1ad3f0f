"""Logs on disk against logs in memory: confluent-kafka producing, then consuming, 100,000 x
100 B records on a 1-broker kipwire cluster (a `serve` subprocess) in one run, three ways: in
memory, with `--data-dir` (Kafka's default flush policy: the files get the records only when the
cluster stops), and with `--data-dir` and `log.flush.interval.messages=1` (every produce request
written and fsynced before it is answered). Then the restart: seconds from starting `serve` on
the data directory left by the last run until it prints its bootstrap servers (every segment
read, recovered and replayed into its log), against a start without a data directory.

Usage: ``python benchmarks/data_dir_bench.py [--records N] [--size B]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from mock_bench import PARTITIONS, consume, create_topic, kipwire_cluster, produce


def run(name: str, args: list[str], records: int, value: bytes) -> tuple[float, float]:
    """Produce then consume on one side; (produce, consume) in records per second."""
    # a clean stop: the logs are flushed and checkpointed
    with kipwire_cluster(1, options=args, stop_seconds=60) as bootstrap:
        create_topic(bootstrap)
        produce(bootstrap, PARTITIONS, value)  # start-up costs untimed, as in mock_bench
        consume(bootstrap, PARTITIONS)
        produced = records / produce(bootstrap, records, value)
        consumed = records / consume(bootstrap, records + PARTITIONS)
    print(f"{name:32} produce {produced:>10,.0f} msg/s   consume {consumed:>10,.0f} msg/s")
    return produced, consumed


def main() -> None:
    """Every side in one run, then the restart time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args()
    value = b"x" * args.size
    with tempfile.TemporaryDirectory() as base:
        lazy, synced = Path(base) / "lazy", Path(base) / "synced"
        memory = run("in memory", [], args.records, value)
        disk = run("--data-dir", ["--data-dir", str(lazy)], args.records, value)
        every = ["--data-dir", str(synced), "--config", "log.flush.interval.messages=1"]
        fsynced = run("--data-dir, flush every", every, args.records, value)
        for name, side in (("--data-dir", disk), ("--data-dir, flush every", fsynced)):
            print(
                f"{name + ' / memory':32} produce {side[0] / memory[0]:>10.2f}x        "
                f"consume {side[1] / memory[1]:>10.2f}x"
            )
        size = sum(p.stat().st_size for p in lazy.rglob("*.log"))
        empty = _start_time([])
        loaded = _start_time(["--data-dir", str(lazy)])
        print(
            f"{'restart on --data-dir':32} {loaded:>6.2f} s to serve {size / 1e6:.1f} MB "
            f"({empty:.2f} s without a data directory)"
        )


def _start_time(args: list[str]) -> float:
    """Seconds from starting `serve` until it prints its bootstrap servers."""
    start = time.perf_counter()
    with kipwire_cluster(1, options=args, stop_seconds=60):
        return time.perf_counter() - start


if __name__ == "__main__":
    main()
