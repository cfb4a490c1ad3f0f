"""Mock clusters side by side: confluent-kafka producing, then consuming, 100,000 x 100 B records
on a 3-broker kipwire cluster and on librdkafka's own mock cluster (`test.mock.num.brokers=3`).

The kipwire cluster runs in a subprocess (`python -m kipwire.mockbroker serve`), as a real
broker would, so it does not share this process's interpreter lock with the client; librdkafka's
mock runs in C threads of the client. Both sides use a 4-partition topic: librdkafka's mock
auto-creates topics with 4 partitions (it does not serve CreateTopics); kipwire's is made with
CreateTopics through the AdminClient.

Both clusters stay up and the sides alternate, round after round (each round a new topic, the
side going first taking turns), so that the load of a shared machine falls on both alike; the
ratios are per round, then their median. Each side's broker CPU time is measured beside its rate
(the serve process's threads; the mock's `rdk:mock` thread): the clients are the same, so the
rates meet where the client's own loop is the bound, and the CPU time says what each broker
spent on the same work.

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
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "bench"
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


def create_topic(bootstrap: str, topic: str = TOPIC, replication_factor: int = 1) -> None:
    """The topic, made through the cluster's CreateTopics."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, PARTITIONS, replication_factor)
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


def consume(bootstrap: str, records: int, topic: str = TOPIC) -> float:
    """Seconds from the first record received to the last, reading every partition from 0.

    The clock starts at the first record so that the consumer's own start-up (connections,
    metadata, offset lookups) is not what is measured, on either side.
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
                seen += 1
            elif message.error().fatal():
                raise KafkaException(message.error())
    elapsed = time.perf_counter() - (start or 0.0)
    consumer.close()
    if seen != records:
        raise RuntimeError(f"consumed {seen} of {records} records")
    return elapsed


def cpu_seconds(tasks: Path, name: str | None = None) -> float:
    """CPU time of a process's threads (those called `name`, when given), from schedstat."""
    total = 0
    for task in tasks.iterdir():
        try:
            if name is None or (task / "comm").read_text().strip() == name:
                total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def run_side(
    bootstrap: str, topic: str, records: int, value: bytes, cpu: Callable[[], float]
) -> tuple[float, float, float, float]:
    """(produce msg/s, consume msg/s, broker CPU s of each) on a new topic."""
    # one record each way first: neither side's one-time start-up costs are timed
    produce(bootstrap, PARTITIONS, value, topic)
    consume(bootstrap, PARTITIONS, topic)
    before = cpu()
    produced = produce(bootstrap, records, value, topic)
    between = cpu()
    consumed = consume(bootstrap, records + PARTITIONS, topic)
    after = cpu()
    return records / produced, records / consumed, between - before, after - between


def main() -> None:
    """Run both sides, alternating, and print rates, CPU times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    value = b"x" * args.size
    print(f"load average {os.getloadavg()[0]:.1f}")
    rates: dict[str, list[tuple[float, float, float, float]]] = {"mock": [], "kipwire": []}
    with ExitStack() as stack:
        mock = stack.enter_context(librdkafka_cluster())
        ours, pid = stack.enter_context(kipwire_process())
        sides = {
            "mock": (mock, lambda: cpu_seconds(Path("/proc/self/task"), "rdk:mock")),
            "kipwire": (ours, lambda: cpu_seconds(Path(f"/proc/{pid}/task"))),
        }
        for n in range(args.rounds):
            topic = f"{TOPIC}-{n}"
            create_topic(ours, topic)
            for side in ("mock", "kipwire") if n % 2 == 0 else ("kipwire", "mock"):
                bootstrap, cpu = sides[side]
                rates[side].append(run_side(bootstrap, topic, args.records, value, cpu))
            _print_round(str(n + 1), rates["kipwire"][-1], rates["mock"][-1], args.records)
    ratios = [
        (k[0] / m[0], k[1] / m[1]) for k, m in zip(rates["kipwire"], rates["mock"], strict=True)
    ]
    print(
        f"median of {args.rounds} rounds: produce {statistics.median(r[0] for r in ratios):.2f}x"
        f"  consume {statistics.median(r[1] for r in ratios):.2f}x"
        f"  (load average {os.getloadavg()[0]:.1f})"
    )
    replication_cost(args.records, value, statistics.median(r[0] for r in rates["kipwire"]))


def _print_round(label: str, ours: tuple, theirs: tuple, records: int) -> None:
    """One round: each side's rates and broker CPU per record, and kipwire / mock."""
    for name, (produced, consumed, produce_cpu, consume_cpu) in (
        ("librdkafka mock", theirs),
        ("kipwire", ours),
    ):
        print(
            f"{label:>3} {name:16} produce {produced:>10,.0f} msg/s "
            f"({produce_cpu / records * 1e6:5.2f} us CPU/msg)   consume {consumed:>10,.0f} msg/s "
            f"({consume_cpu / records * 1e6:5.2f} us CPU/msg)"
        )
    print(
        f"{label:>3} {'kipwire / mock':16} produce {ours[0] / theirs[0]:>10.2f}x"
        f"{'':24}consume {ours[1] / theirs[1]:>10.2f}x"
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
