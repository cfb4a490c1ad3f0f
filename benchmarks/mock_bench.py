"""Mock clusters side by side: confluent-kafka producing, then consuming, 100,000 x 100 B records
on a 3-broker kipwire cluster and on librdkafka's own mock cluster (`test.mock.num.brokers=3`).

The kipwire cluster runs in a subprocess (`python -m kipwire.mockbroker serve`), as a real
broker would, so it does not share this process's interpreter lock with the client; librdkafka's
mock runs in C threads of the client. Both sides use a 4-partition topic: librdkafka's mock
auto-creates topics with 4 partitions (it does not serve CreateTopics); kipwire's is made with
CreateTopics through the AdminClient.

Both clusters stay up and the sides alternate, round after round (each round a new topic, the
side going first taking turns), so that the load of a shared machine falls on both alike; the
ratios are per round, then their median. Beside each rate, CPU time per record over the span
the rate is timed: the broker's (the serve process's threads; the mock's `rdk:mock` thread, in
this process) / the client's (this process's other threads). On a machine whose cores are all
busy the rates follow the sum, and the client's part is the same on both sides: the estimate
printed, (mock's client + mock) / kipwire's client, is what a broker costing nothing would
reach there (not a hard bound: kipwire's broker, a process of its own, may be given CPU time
beside the client's).

Then the cost of replication on kipwire: the same produce to a replication-factor-3 topic with
acks=1 (the leader answers at once) and acks=all (the answer waits for both followers to fetch
the records and the high watermark to pass them), reported as the ratio of the two rates.
Usage: ``python benchmarks/mock_bench.py [--records N] [--size B] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "bench"
#: The thread librdkafka's mock cluster runs in (all of its brokers), in this process.
MOCK_THREAD = "rdk:mock"
PARTITIONS = 4
TIMEOUT = 120.0


@contextmanager
def kipwire_cluster(
    brokers: int = 3,
    config: Mapping[str, str] | None = None,
    options: Sequence[str] = (),
    stop_seconds: float = 10,
) -> Iterator[str]:
    """`kipwire-broker serve` in a subprocess, with broker `config` and further serve `options`;
    yields its bootstrap servers, then stops it with SIGTERM (a clean stop)."""
    with kipwire_process(brokers, config, options, stop_seconds) as (bootstrap, _pid):
        yield bootstrap


@contextmanager
def kipwire_process(
    brokers: int = 3,
    config: Mapping[str, str] | None = None,
    options: Sequence[str] = (),
    stop_seconds: float = 10,
) -> Iterator[tuple[str, int]]:
    """`kipwire_cluster`, yielding the serve process's id beside its bootstrap servers."""
    configs = [f"--config={key}={value}" for key, value in (config or {}).items()]
    command = [sys.executable, "-m", "kipwire.mockbroker", "serve", "--brokers", str(brokers)]
    proc = subprocess.Popen(
        [*command, "--quiet", *configs, *options], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        if not bootstrap:
            raise RuntimeError("kipwire-broker did not print its bootstrap servers")
        yield bootstrap, proc.pid
    finally:
        proc.terminate()
        proc.wait(stop_seconds)


@contextmanager
def librdkafka_cluster() -> Iterator[str]:
    """librdkafka's mock cluster, owned by a client kept open while it is used."""
    owner = Producer({"bootstrap.servers": "unused:1", "test.mock.num.brokers": 3})
    try:
        brokers = owner.list_topics(timeout=10).brokers.values()
        yield ",".join(f"{b.host}:{b.port}" for b in brokers)
    finally:
        owner.flush(5)


def create_topic(
    bootstrap: str, topic: str = TOPIC, replication_factor: int = 1, partitions: int = PARTITIONS
) -> None:
    """The topic, made through the cluster's CreateTopics."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, replication_factor)
    for future in admin.create_topics([new]).values():
        future.result(timeout=30)


def produce(
    bootstrap: str, records: int, value: bytes, topic: str = TOPIC, acks: str = "all"
) -> float:
    """Seconds to produce every record and have it acknowledged (default settings but acks)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks})
    errors: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                # round robin: librdkafka's mock keeps 5 MB per partition, so spread evenly
                producer.produce(topic, value, partition=i % PARTITIONS, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(TIMEOUT) != 0:
        raise RuntimeError("the producer did not flush")
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} delivery errors, first: {errors[0]}")
    return elapsed


def consume(
    bootstrap: str, records: int, topic: str = TOPIC, mark: Callable[[], None] | None = None
) -> float:
    """Seconds from the first record received to the last, reading every partition from 0.

    The clock starts at the first record so that the consumer's own start-up (connections,
    metadata, offset lookups) is not what is measured, on either side; `mark` is called when
    the clock starts and when it stops (to read CPU times over the same span).
    """
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen = 0
    start = None
    deadline = time.perf_counter() + TIMEOUT
    while seen < records and time.perf_counter() < deadline:
        # never more than are left: a call asking for more waits out its whole timeout
        for message in consumer.consume(min(10_000, records - seen), 1.0):
            if message.error() is None:
                if start is None:
                    start = time.perf_counter()
                    if mark is not None:
                        mark()
                seen += 1
            elif message.error().fatal():
                raise KafkaException(message.error())
    elapsed = time.perf_counter() - (start or 0.0)
    if mark is not None:
        mark()
    consumer.close()
    if seen != records:
        raise RuntimeError(f"consumed {seen} of {records} records")
    return elapsed


@dataclass
class Sample:
    """One side's round: rates, and CPU seconds of its broker and of the client process."""

    produce_rate: float
    consume_rate: float
    broker_cpu: tuple[float, float]  # produce, consume
    client_cpu: tuple[float, float]


def thread_cpu(tasks: Path) -> dict[str, float]:
    """CPU seconds of a process's threads, summed by thread name (from schedstat)."""
    by_name: dict[str, float] = {}
    for task in tasks.iterdir():
        try:
            name = (task / "comm").read_text().strip()
            ns = int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
        by_name[name] = by_name.get(name, 0.0) + ns / 1e9
    return by_name


def run_side(
    bootstrap: str, topic: str, records: int, value: bytes, cpu: Callable[[], tuple[float, float]]
) -> Sample:
    """Produce then consume `records` on a new topic; `cpu` gives (broker, client) CPU seconds."""
    # one record each way first: neither side's one-time start-up costs are timed
    produce(bootstrap, PARTITIONS, value, topic)
    consume(bootstrap, PARTITIONS, topic)
    before = cpu()
    produced = produce(bootstrap, records, value, topic)
    after = cpu()
    marks: list[tuple[float, float]] = []
    consumed = consume(bootstrap, records + PARTITIONS, topic, lambda: marks.append(cpu()))
    first, last = marks
    return Sample(
        records / produced,
        records / consumed,
        (after[0] - before[0], last[0] - first[0]),
        (after[1] - before[1], last[1] - first[1]),
    )


def main() -> None:
    """Run both sides, alternating, and print rates, CPU times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    value = b"x" * args.size
    print(f"load average {os.getloadavg()[0]:.1f}")
    samples: dict[str, list[Sample]] = {"mock": [], "kipwire": []}
    with ExitStack() as stack:
        mock = stack.enter_context(librdkafka_cluster())
        ours, pid = stack.enter_context(kipwire_process())
        own, serve = Path("/proc/self/task"), Path(f"/proc/{pid}/task")

        def mock_cpu() -> tuple[float, float]:
            threads = thread_cpu(own)
            broker = threads.get(MOCK_THREAD, 0.0)
            return broker, sum(threads.values()) - broker

        def kipwire_cpu() -> tuple[float, float]:
            threads = thread_cpu(own)
            client = sum(threads.values()) - threads.get(MOCK_THREAD, 0.0)
            return sum(thread_cpu(serve).values()), client

        sides = {"mock": (mock, mock_cpu), "kipwire": (ours, kipwire_cpu)}
        for n in range(args.rounds):
            topic = f"{TOPIC}-{n}"
            create_topic(ours, topic)
            for side in ("mock", "kipwire") if n % 2 == 0 else ("kipwire", "mock"):
                bootstrap, cpu = sides[side]
                samples[side].append(run_side(bootstrap, topic, args.records, value, cpu))
            _print_round(n + 1, samples["kipwire"][-1], samples["mock"][-1], args.records)
    pairs = list(zip(samples["kipwire"], samples["mock"], strict=True))
    produce_ratio = statistics.median(k.produce_rate / m.produce_rate for k, m in pairs)
    consume_ratio = statistics.median(k.consume_rate / m.consume_rate for k, m in pairs)
    print(
        f"median of {args.rounds} rounds: produce {produce_ratio:.2f}x  consume"
        f" {consume_ratio:.2f}x  (load average {os.getloadavg()[0]:.1f})"
    )
    estimates = [
        statistics.median(
            (m.client_cpu[phase] + m.broker_cpu[phase]) / k.client_cpu[phase] for k, m in pairs
        )
        for phase in (0, 1)
    ]
    print(
        "estimate where CPU is the bound, a broker costing nothing against the mock:"
        f" produce {estimates[0]:.2f}x  consume {estimates[1]:.2f}x"
    )
    replication_cost(
        args.records, value, statistics.median(k.produce_rate for k in samples["kipwire"])
    )


def _print_round(n: int, ours: Sample, theirs: Sample, records: int) -> None:
    """One round: each side's rates and CPU per record (broker / client), and kipwire / mock."""
    for name, sample in (("librdkafka mock", theirs), ("kipwire", ours)):
        us = 1e6 / records
        cpu = [f"{sample.broker_cpu[i] * us:.2f} / {sample.client_cpu[i] * us:.2f}" for i in (0, 1)]
        print(
            f"{n:>3} {name:16} produce {sample.produce_rate:>9,.0f} msg/s ({cpu[0]} us CPU/msg)"
            f"  consume {sample.consume_rate:>9,.0f} msg/s ({cpu[1]} us CPU/msg)"
        )
    print(
        f"{n:>3} {'kipwire / mock':16} produce {ours.produce_rate / theirs.produce_rate:>9.2f}x"
        f"{'':27}consume {ours.consume_rate / theirs.consume_rate:>9.2f}x"
    )


def replication_cost(records: int, value: bytes, unreplicated: float) -> None:
    """kipwire, replication factor 3: produce rates with acks=1 and acks=all, their ratio, and
    acks=all against the replication-factor-1 rate measured above."""
    rates = {}
    with kipwire_cluster() as bootstrap:
        for acks in ("1", "all"):
            topic = f"{TOPIC}-rf3-acks-{acks}"
            create_topic(bootstrap, topic, replication_factor=3)
            produce(bootstrap, PARTITIONS, value, topic, acks)
            rates[acks] = records / produce(bootstrap, records, value, topic, acks)
            print(f"{'kipwire RF=3':16} produce {rates[acks]:>10,.0f} msg/s   acks={acks}")
    print(f"{'acks=all / acks=1':16} produce {rates['all'] / rates['1']:>10.2f}x")
    print(f"{'RF=3 / RF=1':16} produce {rates['all'] / unreplicated:>10.2f}x   (acks=all)")


if __name__ == "__main__":
    main()
