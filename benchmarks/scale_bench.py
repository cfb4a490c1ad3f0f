"""The mock cluster at scale: idle CPU, create-topic time, Metadata time and RSS as partitions grow.

Each point runs in its own subprocess (so RSS and CPU are that cluster's alone): a trio loop opens
`open_cluster(brokers=B)` (start-up: timed until every broker is registered and unfenced),
creates topics of 100 partitions at replication factor 3 up to P partitions, timing every
create and watching for a fenced broker, then lets the cluster settle
2 s and measures its CPU over 5 s of idleness (user + system time of the process, by
`resource.getrusage`), times a Metadata request for every topic, and reads VmRSS from
/proc/self/status. `--produce N` adds a produce/consume check: N records of 100 B through
confluent-kafka, acks=all, spread over the first 10 topics.

Usage: ``python benchmarks/scale_bench.py`` (the curve: 100 / 1,000 / 10,000 partitions on 3
brokers, then 3 / 9 / 30 brokers at 1,000), or ``--point B,P`` for one point, ``--profile`` to
print where the idle CPU goes (cProfile over the idle window). ``--ratio N``: the issue's
throughput check instead, with the cluster in a subprocess (`kipwire-broker serve`): N records of
100 B produced (acks=all) and consumed on one 10-partition topic of an otherwise empty cluster,
then spread over 100 topics of a 10,000-partition cluster, and the ratio of the rates
(`--client kafka-python` for kafka-python's producer and consumer, `--processes` for a cluster
with a process per broker). ``--process-mode N``: mock_bench's produce and consume of N
records (4 partitions, RF 3, acks=all) on `kipwire-broker serve` in one process and with a
process per broker (`--processes`), alternating, two rounds. Every point counts Python's full
garbage collections (`gc.callbacks`) during set-up and produce; `--gc-freeze` calls
`gc.freeze()` once the topics exist.
``--real-kafka [--partitions P]``: the same client-side measures on the mock and on real Kafka
4.4.0, side by side (scale_realkafka.py).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import time
from typing import Any

import trio

from kipwire.client import TrioConnection
from kipwire.codec import ApiKey
from kipwire.mockbroker.cluster import open_cluster

TOPIC_PARTITIONS = 100
REPLICATION_FACTOR = 3
SETTLE, IDLE = 2.0, 5.0
METADATA_VERSION = 12
CURVE = [(3, 100), (3, 1_000), (3, 10_000), (9, 1_000), (30, 1_000)]


def cpu_seconds() -> float:
    """User plus system CPU time of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mb() -> float:
    """The resident set size of this process, in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def _metadata_seconds(address: str) -> tuple[float, int]:
    """Seconds for a Metadata request naming no topic list (every topic), and the partitions."""
    wire = await TrioConnection.connect(address, client_id="scale-bench")
    try:
        start = time.perf_counter()
        body = await wire.call(
            ApiKey.METADATA,
            METADATA_VERSION,
            {"topics": None, "allow_auto_topic_creation": False},
        )
        took = time.perf_counter() - start
    finally:
        await wire.aclose()
    return took, sum(len(t["partitions"]) for t in body["topics"])


class GcPauses:
    """Python's collections while it is installed (`gc.callbacks`): count and seconds by
    generation."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((info["generation"], time.perf_counter() - self._started))

    def since(self, mark: int) -> dict[str, float]:
        """Full (gen 2) collections since `mark` (an index into `pauses`): count, total, longest."""
        full = [p for gen, p in self.pauses[mark:] if gen == 2]
        return {"count": len(full), "total_s": sum(full), "max_s": max(full, default=0.0)}


async def measure(
    brokers: int,
    partitions: int,
    *,
    profile: bool = False,
    produce: int = 0,
    gc_freeze: bool = False,
) -> dict[str, Any]:
    """One point of the curve (see the module docstring)."""
    row: dict[str, Any] = {"brokers": brokers, "partitions": partitions}
    pauses = GcPauses()
    creates: list[float] = []
    opened = time.perf_counter()
    async with open_cluster(brokers=brokers) as cluster:
        row["start_s"] = time.perf_counter() - opened
        fenced_seen = False
        cpu_max = 0.0
        for n in range(partitions // TOPIC_PARTITIONS):
            start, cpu = time.perf_counter(), cpu_seconds()
            await cluster.create_topic(f"t{n:04d}", TOPIC_PARTITIONS, REPLICATION_FACTOR)
            creates.append(time.perf_counter() - start)
            cpu_max = max(cpu_max, cpu_seconds() - cpu)
            fenced_seen |= any(b.fenced for b in cluster.controller.state.brokers.values())
        row["create_max_s"] = max(creates, default=0.0)
        row["create_median_s"] = sorted(creates)[len(creates) // 2] if creates else 0.0
        row["create_cpu_max_s"] = cpu_max
        row["gc_setup"] = pauses.since(0)
        if gc_freeze:
            gc.freeze()  # what exists now stays: full collections no longer walk it
        await trio.sleep(SETTLE)
        mark = len(pauses.pauses)
        profiler = cProfile.Profile() if profile else None
        before = cpu_seconds()
        if profiler is not None:
            profiler.enable()
        await trio.sleep(IDLE)
        if profiler is not None:
            profiler.disable()
        row["idle_cpu_pct"] = 100 * (cpu_seconds() - before) / IDLE
        row["gc_idle"] = pauses.since(mark)
        row["metadata_s"], row["metadata_partitions"] = await _metadata_seconds(
            cluster.nodes[1].address
        )
        if produce:
            mark = len(pauses.pauses)
            row["produce_consume"] = await trio.to_thread.run_sync(
                _produce_consume, cluster.bootstrap_servers, produce
            )
            row["gc_produce"] = pauses.since(mark)
        fenced_seen |= any(b.fenced for b in cluster.controller.state.brokers.values())
        row["fenced"] = fenced_seen
        row["rss_mb"] = rss_mb()
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        row["profile"] = out.getvalue()
    return row


def _produce_consume(bootstrap: str, records: int) -> dict[str, float]:
    """Records per second produced (acks=all) then consumed over the first 10 topics."""
    from confluent_kafka import Consumer, Producer

    topics = [f"t{n:04d}" for n in range(10)]
    value = b"x" * 100
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topics[i % len(topics)], value)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("records were not delivered in 120 s")
    produced = records / (time.perf_counter() - start)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "scale-bench",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(topics)
    got, start, deadline = 0, time.perf_counter(), time.monotonic() + 120
    while got < records and time.monotonic() < deadline:
        for message in consumer.consume(1000, 1.0):
            got += message.error() is None
    consumer.close()
    if got < records:
        raise RuntimeError(f"consumed {got} of {records} records in 120 s")
    return {"produce_rps": produced, "consume_rps": records / (time.perf_counter() - start)}


def _ratio(records: int, client: str = "confluent-kafka", processes: bool = False) -> None:
    """Produce/consume rates on 10 partitions of an empty cluster, then over 10,000 partitions."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from mock_bench import kipwire_cluster

    rates = []
    for topics, partitions in ((["one"], 10), ([f"t{n:04d}" for n in range(100)], 100)):
        options = ["--processes"] if processes else []
        with kipwire_cluster(3, options=options, stop_seconds=60) as bootstrap:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for first in range(0, len(topics), 10):
                new = [NewTopic(t, partitions, REPLICATION_FACTOR) for t in topics[first:][:10]]
                for future in admin.create_topics(new, operation_timeout=60).values():
                    future.result(timeout=120)
            flow = _flow if client == "confluent-kafka" else _flow_kafka_python
            rates.append(flow(bootstrap, topics, partitions, records))
            print(
                f"{len(topics) * partitions:>6,} partitions: produce {rates[-1][0]:,.0f} rec/s,"
                f" consume {rates[-1][1]:,.0f} rec/s",
                flush=True,
            )
    (p1, c1), (p2, c2) = rates
    print(f"ratio (10,000 partitions / 10): produce {p2 / p1:.2f}x, consume {c2 / c1:.2f}x")


def _process_mode(records: int, rounds: int = 2) -> None:
    """mock_bench's produce (confluent-kafka, 4 partitions, here RF 3 and acks=all), then a
    consume of everything from offset 0 (`consume_spread`, its start-up included), on
    `kipwire-broker serve --brokers 3` in one process and with `--processes`, alternating."""
    from mock_bench import PARTITIONS, TOPIC, consume, create_topic, kipwire_cluster, produce

    value = b"x" * 100
    rates: dict[str, list[tuple[float, float]]] = {"in-process": [], "--processes": []}
    for _ in range(rounds):
        for mode, options in (("in-process", []), ("--processes", ["--processes"])):
            with kipwire_cluster(3, options=options, stop_seconds=60) as bootstrap:
                create_topic(bootstrap, replication_factor=REPLICATION_FACTOR)
                produce(bootstrap, PARTITIONS, value)  # start-up costs stay out of the timing
                consume(bootstrap, PARTITIONS)
                produced = records / produce(bootstrap, records, value)
                targets = [(TOPIC, p) for p in range(PARTITIONS)]
                seen, took = consume_spread(bootstrap, targets, records + PARTITIONS)
                if seen < records + PARTITIONS:
                    raise RuntimeError(f"consumed {seen} of {records + PARTITIONS} records")
                consumed = records / took
            rates[mode].append((produced, consumed))
            print(
                f"{mode:>12}: produce {produced:,.0f} rec/s, consume {consumed:,.0f} rec/s"
                f" (load average {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    for mode, runs in rates.items():
        best_p, best_c = max(p for p, _ in runs), max(c for _, c in runs)
        print(f"{mode:>12}, best of {rounds}: produce {best_p:,.0f}, consume {best_c:,.0f} rec/s")


def _flow(bootstrap: str, topics: list[str], partitions: int, records: int) -> tuple[float, float]:
    """Records per second produced (one producer, acks=all, round robin over every partition),
    then consumed (one consumer assigned every partition from offset 0)."""
    targets = [(t, p) for p in range(partitions) for t in topics]
    produced = records / produce_spread(bootstrap, targets, records)
    seen, took = consume_spread(bootstrap, targets, records)
    if seen < records:
        raise RuntimeError(f"consumed {seen} of {records} records")
    return produced, records / took


def produce_spread(bootstrap: str, targets: list[tuple[str, int]], records: int) -> float:
    """Seconds to produce `records` round robin over `targets` (confluent-kafka, acks=all,
    linger.ms=5) until all are acknowledged; RuntimeError when that takes over 300 s."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    value = b"x" * 100
    start = time.perf_counter()
    for i in range(records):
        topic, partition = targets[i % len(targets)]
        while True:
            try:
                producer.produce(topic, value, partition=partition)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300) != 0:
        raise RuntimeError("records were not delivered in 300 s")
    return time.perf_counter() - start


def consume_spread(
    bootstrap: str, targets: list[tuple[str, int]], records: int
) -> tuple[int, float]:
    """(records seen, seconds) for one consumer assigned every target from offset 0, until
    `records` are seen or 300 s have passed."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "scale", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(t, p, 0) for t, p in targets])
    seen, start, deadline = 0, time.perf_counter(), time.monotonic() + 300
    while seen < records and time.monotonic() < deadline:
        # at most what is left: a call asking for more waits out its whole timeout at the end
        batch = consumer.consume(min(10_000, records - seen), 1.0)
        seen += sum(m.error() is None for m in batch)
    took = time.perf_counter() - start
    consumer.close()
    return seen, took


def _flow_kafka_python(
    bootstrap: str, topics: list[str], partitions: int, records: int
) -> tuple[float, float]:
    """`_flow` with kafka-python, whose producer (like Kafka's Java client) puts every ready
    batch for one broker into one ProduceRequest, where librdkafka sends one per partition."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    targets = [(t, p) for p in range(partitions) for t in topics]
    value = b"x" * 100
    start = time.perf_counter()
    for i in range(records):
        topic, partition = targets[i % len(targets)]
        producer.send(topic, value, partition=partition)
    producer.flush(300)
    produced = records / (time.perf_counter() - start)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    assigned = [TopicPartition(t, p) for t, p in targets]
    consumer.assign(assigned)
    consumer.seek_to_beginning(*assigned)
    seen, start, deadline = 0, time.perf_counter(), time.monotonic() + 300
    while seen < records and time.monotonic() < deadline:
        seen += sum(len(batch) for batch in consumer.poll(1000, max_records=10_000).values())
    consumed = records / (time.perf_counter() - start)
    consumer.close()
    if seen < records:
        raise RuntimeError(f"consumed {seen} of {records} records")
    return produced, consumed


def _run_point(
    brokers: int, partitions: int, produce: int, gc_freeze: bool = False
) -> dict[str, Any]:
    command = [sys.executable, __file__, "--point", f"{brokers},{partitions}", "--json"]
    if gc_freeze:
        command.append("--gc-freeze")
    if produce:
        command += ["--produce", str(produce)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        return {"brokers": brokers, "partitions": partitions, "error": done.stderr[-400:]}
    return json.loads(done.stdout.splitlines()[-1])


def _gcs(pauses: dict[str, float] | None) -> str:
    """Full collections: how many, their total and the longest, in seconds."""
    if not pauses:
        return "-"
    return f"{pauses['count']:.0f} ({pauses['total_s']:.2f} s, max {pauses['max_s']:.2f} s)"


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| brokers | partitions | start-up | idle CPU"
        " | create: median / slowest (wall) / slowest (CPU)"
        " | Metadata (all) | produce / consume | RSS | fenced | full GCs: setup / produce |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['brokers']} | {r['partitions']:,} | failed: {r['error']!r} |")
            continue
        rates = r.get("produce_consume")
        flow = f"{rates['produce_rps']:,.0f} / {rates['consume_rps']:,.0f} rec/s" if rates else "-"
        lines.append(
            f"| {r['brokers']} | {r['partitions']:,} | {r['start_s']:.3f} s"
            f" | {r['idle_cpu_pct']:.1f}% "
            f"| {r['create_median_s']:.3f} / {r['create_max_s']:.3f}"
            f" / {r['create_cpu_max_s']:.3f} s"
            f" | {r['metadata_s']:.3f} s | {flow} | {r['rss_mb']:.0f} MiB "
            f"| {'yes' if r['fenced'] else 'no'} | {_gcs(r.get('gc_setup'))} / "
            f"{_gcs(r.get('gc_produce'))} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Run the curve, or one point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", help="B,P: one point, in this process")
    parser.add_argument("--json", action="store_true", help="print the point as one JSON line")
    parser.add_argument("--profile", action="store_true", help="cProfile the idle window")
    parser.add_argument("--produce", type=int, default=0, help="records to produce and consume")
    parser.add_argument("--ratio", type=int, default=0, help="the throughput ratio, N records")
    parser.add_argument(
        "--processes", action="store_true", help="--ratio on a cluster with a process per broker"
    )
    parser.add_argument(
        "--process-mode",
        type=int,
        default=0,
        help="N records: mock_bench's produce/consume with and without --processes",
    )
    parser.add_argument(
        "--gc-freeze", action="store_true", help="gc.freeze() once the topics are created"
    )
    parser.add_argument(
        "--client",
        choices=("confluent-kafka", "kafka-python"),
        default="confluent-kafka",
        help="the client of --ratio (default confluent-kafka)",
    )
    parser.add_argument(
        "--real-kafka",
        action="store_true",
        help="the mock and real Kafka 4.4.0 side by side (benchmarks/scale_realkafka.py)",
    )
    parser.add_argument("--partitions", type=int, default=1_000, help="--real-kafka's P")
    parser.add_argument("--records", type=int, default=20_000, help="--real-kafka's N")
    parser.add_argument(
        "--side", action="append", choices=("mock", "kafka"), help="--real-kafka: one side only"
    )
    args = parser.parse_args()
    if args.real_kafka:
        from scale_realkafka import run

        run(args.partitions, args.records, args.side or ["mock", "kafka"])
        return
    if args.process_mode:
        _process_mode(args.process_mode)
        return
    if args.ratio:
        _ratio(args.ratio, args.client, args.processes)
        return
    if args.point:
        brokers, partitions = (int(x) for x in args.point.split(","))
        row = trio.run(
            lambda: measure(
                brokers,
                partitions,
                profile=args.profile,
                produce=args.produce,
                gc_freeze=args.gc_freeze,
            )
        )
        profile = row.pop("profile", None)
        print(json.dumps(row) if args.json else _table([row]))
        if profile:
            print(profile)
        return
    rows = [_run_point(b, p, args.produce, args.gc_freeze) for b, p in CURVE]
    print(_table(rows))
    print("load average after the run: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
