"""Retention on the mock (issue 22): the broker's RSS after N MB through a retained topic, and
the produce rate with retention on against off, in one run.

Two one-broker clusters in subprocesses (`python -m kipwire.mockbroker serve`, as a dev broker
runs), one after the other, each with one single-partition topic of 1 MB segments: retention
on is `retention.bytes=1 MB` (the log start follows, old segments go), off is Kafka's default
(no size limit, nothing goes). confluent-kafka produces N MB of 100 KB records (acks=1) to each;
the report is MB/s per side and their ratio, then each broker's RSS (from /proc, Linux only)
once its log cleaner has run, and the records each log kept.
Usage: ``python benchmarks/retention_bench.py [--mb N]``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from mock_bench import kipwire_cluster

TOPIC = "retained"
RECORD = 100_000
SEGMENT = {"segment.bytes": str(1024 * 1024)}
SIDES = {"on": {**SEGMENT, "retention.bytes": str(1024 * 1024)}, "off": SEGMENT}


def broker_pid(bootstrap: str) -> int:
    """The serving process: the one listening on the bootstrap port (found through /proc)."""
    port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # LISTEN
                inodes.add(fields[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return int(pid)
        except OSError:
            continue
    raise RuntimeError(f"no process listens on {port}")


def rss_mb(pid: int) -> float:
    """A process's resident set in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def produce(bootstrap: str, megabytes: int) -> float:
    """Seconds to produce `megabytes` MB of 100 KB records and have them acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5})
    value = os.urandom(RECORD)
    start = time.perf_counter()
    for _ in range(megabytes * 1_000_000 // RECORD):
        while True:
            try:
                producer.produce(TOPIC, value)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError("the producer did not flush")
    return time.perf_counter() - start


def kept_records(bootstrap: str) -> int:
    """High watermark minus log start, after the cleaner has had two passes (1 s apart)."""
    time.sleep(2.5)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "retention-bench"})
    low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    consumer.close()
    return high - low


def run(megabytes: int, configs: dict[str, str]) -> tuple[float, float, int]:
    """(MB/s, RSS in MB, records kept) for one side."""
    with kipwire_cluster(brokers=1) as bootstrap:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, 1, 1, config=configs)]).values():
            future.result(timeout=30)
        produce(bootstrap, 1)  # connections and metadata are not timed
        rate = megabytes / produce(bootstrap, megabytes)
        kept = kept_records(bootstrap)
        return rate, rss_mb(broker_pid(bootstrap)), kept


def main() -> None:
    """Both sides, then the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    args = parser.parse_args()
    results = {side: run(args.mb, configs) for side, configs in SIDES.items()}
    for side, (rate, rss, kept) in results.items():
        print(
            f"retention {side:3}  produce {rate:7.1f} MB/s   RSS after {args.mb} MB "
            f"{rss:6.0f} MB   records kept {kept:,}"
        )
    ratio = results["on"][0] / results["off"][0]
    print(f"on / off      produce {ratio:7.2f}x")


if __name__ == "__main__":
    main()
