"""Speed of the mock KRaft controller: AlterPartition requests handled per second on a
10,000-partition controller, and metadata records replayed per second from a 100,000-record log.

Run with `.venv/bin/python benchmarks/controller_bench.py [--partitions N] [--records N]`.

Targets (issue 9, one core): 20,000 AlterPartition/s and 200,000 records/s replayed. The
AlterPartition figure is given twice: for request bodies as the codec decodes them off the wire
(what the cluster runtime passes), and for plain dicts (which `handle` first runs through the
codec to fill defaults). Every request changes the ISR, so every one writes a record. Rates are
per CPU second of this process with the garbage collector paused, as timeit and codec_bench do;
one replay is repeated with the collector on, for scale.
"""

from __future__ import annotations

import argparse
import gc
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kipwire.codec import ApiKey, message
from kipwire.mockbroker.controller import Controller

BROKERS = (1, 2, 3)


@contextmanager
def paused_gc(pause: bool = True) -> Iterator[None]:
    """Collector pauses are noise, not the controller's cost (timeit and codec_bench agree)."""
    gc.collect()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        gc.enable()


def build_controller(partitions: int, per_topic: int = 10) -> Controller:
    """A controller loaded by replay: 3 unfenced brokers, `partitions` partitions of RF 3."""
    ctl = Controller()
    for b in BROKERS:
        ctl.replay(
            "RegisterBrokerRecord",
            {
                "broker_id": b,
                "broker_epoch": 10 + b,
                "incarnation_id": uuid.UUID(int=b),
                "fenced": False,
            },
        )
    for t in range(partitions // per_topic):
        topic_id = uuid.UUID(int=1_000_000 + t)
        ctl.replay("TopicRecord", {"name": f"topic-{t:05d}", "topic_id": topic_id})
        for p in range(per_topic):
            ctl.replay(
                "PartitionRecord",
                {
                    "partition_id": p,
                    "topic_id": topic_id,
                    "replicas": list(BROKERS),
                    "isr": list(BROKERS),
                    "leader": 1,
                    "leader_epoch": 0,
                    "partition_epoch": 0,
                    "eligible_leader_replicas": [],
                    "last_known_elr": [],
                },
            )
    return ctl


def requests(ctl: Controller, round_: int) -> list[dict]:
    """One AlterPartition v3 per partition: even rounds shrink the ISR to [1, 2], odd rounds
    expand it back; the partition epoch is the one the previous round leaves."""
    isr = [1, 2] if round_ % 2 == 0 else [1, 2, 3]
    out = []
    for topic in ctl.state.topics.values():
        for p in topic.partitions.values():
            out.append(
                {
                    "broker_id": 1,
                    "broker_epoch": 11,
                    "topics": [
                        {
                            "topic_id": topic.topic_id,
                            "partitions": [
                                {
                                    "partition_index": p.partition_id,
                                    "leader_epoch": 0,
                                    "partition_epoch": round_,
                                    "new_isr_with_epochs": [
                                        {"broker_id": b, "broker_epoch": 10 + b} for b in isr
                                    ],
                                }
                            ],
                        }
                    ],
                }
            )
    return out


def as_wire(bodies: list[dict]) -> list[Any]:
    """The bodies as the codec decodes them from request bytes."""
    codec = message("AlterPartitionRequest", 3)
    return [codec.parse(codec.build(b)) for b in bodies]


def time_alter(ctl: Controller, bodies: list[Any]) -> float:
    """Requests per CPU second for handling every body once; checks each one succeeded."""
    with paused_gc():
        start = time.process_time()
        for body in bodies:
            resp = ctl.handle(ApiKey.ALTER_PARTITION, 3, body)
            if resp["topics"][0]["partitions"][0]["error_code"]:
                raise SystemExit(f"AlterPartition failed: {resp}")
        return len(bodies) / (time.process_time() - start)


def time_replay(log: list[Any], framed: bool, pause_gc: bool = True) -> tuple[float, tuple]:
    """Records per CPU second replaying a log into a fresh controller: framed bytes (decoded
    on the way) or records already decoded (as Kafka's replay receives them)."""
    fresh = Controller()
    with paused_gc(pause_gc):
        start = time.process_time()
        if framed:
            for e in log:
                fresh.append_bytes(e.data)
        else:
            for e in log:
                fresh.append(e.name, e.record, e.version)
        rate = len(log) / (time.process_time() - start)
    return rate, fresh.state.snapshot()


def main(argv: list[str] | None = None) -> int:
    """Run both measurements and print a small table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=100_000)
    args = ap.parse_args(argv)
    if args.partitions < 10 or args.records < 1:
        ap.error("--partitions must be >= 10 and --records >= 1")

    ctl = build_controller(args.partitions)
    wire_rates, dict_rates = [], []
    round_ = 0
    while len(ctl.log) < args.records or round_ < 4:
        bodies = requests(ctl, round_)
        if round_ % 2 == 0:
            wire_rates.append(time_alter(ctl, as_wire(bodies)))
        else:
            dict_rates.append(time_alter(ctl, bodies))
        round_ += 1
    log = ctl.log[: args.records]
    runs = [time_replay(log, framed) for framed in (True, False) for _ in range(3)]
    if any(snapshot != runs[0][1] for _, snapshot in runs):
        raise SystemExit("replaying the same log gave different states")
    framed = max(rate for rate, _ in runs[:3])
    decoded = max(rate for rate, _ in runs[3:])
    with_gc, _ = time_replay(log, framed=False, pause_gc=False)

    n = len(ctl.state.partitions())
    print(f"controller with {n} partitions, {len(ctl.log)} records in its log")
    print(f"{'measurement':<48}{'per second':>14}{'target':>10}")
    print(
        f"{'AlterPartition v3, codec-decoded bodies (best)':<48}{max(wire_rates):>14,.0f}"
        f"{20_000:>10,}"
    )
    print(f"{'AlterPartition v3, plain dict bodies (best)':<48}{max(dict_rates):>14,.0f}")
    print(
        f"{f'replay of {len(log):,} decoded records (best of 3)':<48}{decoded:>14,.0f}"
        f"{200_000:>10,}"
    )
    print(f"{f'replay of {len(log):,} framed records (best of 3)':<48}{framed:>14,.0f}")
    print(f"{'decoded replay again, garbage collector on':<48}{with_gc:>14,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
