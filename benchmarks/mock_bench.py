"""Mock clusters side by side: confluent-kafka producing, then consuming, 100,000 x 100 B records
on a 3-broker kipwire cluster and on librdkafka's own mock cluster (`test.mock.num.brokers=3`).

The kipwire cluster runs in a subprocess (`python -m kipwire.mockbroker serve`), as a real
broker would, so it does not share this process's interpreter lock with the client; librdkafka's
mock runs in C threads of the client. Both sides use a 4-partition topic: librdkafka's mock
auto-creates topics with 4 partitions (it does not serve CreateTopics); kipwire's is made with
CreateTopics through the AdminClient.

Then the cost of replication on kipwire: the same produce to a replication-factor-3 topic with
acks=1 (the leader answers at once) and acks=all (the answer waits for both followers to fetch
the records and the high watermark to pass them), reported as the ratio of the two rates.
Usage: ``python benchmarks/mock_bench.py [--records N] [--size B]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

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
        yield bootstrap
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


def consume(bootstrap: str, records: int) -> float:
    """Seconds from the first record received to the last, reading every partition from 0.

    The clock starts at the first record so that the consumer's own start-up (connections,
    metadata, offset lookups) is not what is measured, on either side.
    """
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    seen = 0
    start = None
    deadline = time.perf_counter() + TIMEOUT
    while seen < records and time.perf_counter() < deadline:
        for message in consumer.consume(10_000, 1.0):
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


def main() -> None:
    """Run both sides and print rates and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args()
    value = b"x" * args.size
    results = {}
    for name, cluster in (("librdkafka mock", librdkafka_cluster), ("kipwire", kipwire_cluster)):
        with cluster() as bootstrap:
            if name == "kipwire":
                create_topic(bootstrap)
            # one record each way first: neither side's one-time start-up costs are timed
            produce(bootstrap, PARTITIONS, value)
            consume(bootstrap, PARTITIONS)
            produced = produce(bootstrap, args.records, value)
            consumed = consume(bootstrap, args.records + PARTITIONS)
        results[name] = (args.records / produced, args.records / consumed)
        print(
            f"{name:16} produce {results[name][0]:>10,.0f} msg/s   "
            f"consume {results[name][1]:>10,.0f} msg/s"
        )
    ours, theirs = results["kipwire"], results["librdkafka mock"]
    print(
        f"{'kipwire / mock':16} produce {ours[0] / theirs[0]:>10.2f}x        "
        f"consume {ours[1] / theirs[1]:>10.2f}x"
    )
    replication_cost(args.records, value, ours[0])


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
