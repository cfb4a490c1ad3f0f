"""The scale curve against real Kafka 4.4.0: the same client-side measures on both, in one run.

Each side is a controller plus three brokers reached only through clients: kipwire's mock as
`kipwire-broker serve --brokers 3` in a subprocess (one process), real Kafka as four JVMs from
tests/realkafka's harness (a controller node and brokers 1-3, the full JIT, 512 MiB heaps, Kafka's
default heartbeat, session and replica-lag settings). On
each, in order:

1. one topic of 10 partitions (RF 3) in the otherwise empty cluster; N records of 100 B produced
   (confluent-kafka, acks=all, linger.ms=5, round robin) and consumed: the ratio's baseline;
2. topics of 100 partitions (RF 3) up to P partitions, one CreateTopics each (confluent-kafka's
   AdminClient; timed until its future resolves);
3. a 2 s settle, then the CPU of the cluster's processes (utime + stime from /proc) over 5 s;
4. a Metadata v12 request for every topic (kipwire's client, decode included);
5. the same N records spread round robin over all P partitions, produced and consumed;
6. the RSS of the cluster's processes.

Usage: ``python benchmarks/scale_bench.py --real-kafka [--partitions P] [--records N]``
(``--side mock`` or ``--side kafka`` for one side).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "realkafka"))

from kafka_dist import ensure_kafka  # noqa: E402
from kafka_harness import BENCH_JVM_OPTS, KafkaCluster, NodeSpec  # noqa: E402
from scale_bench import (  # noqa: E402
    IDLE,
    REPLICATION_FACTOR,
    SETTLE,
    TOPIC_PARTITIONS,
    _flow,
    _metadata_seconds,
    consume_spread,
    produce_spread,
)

_TICK = os.sysconf("SC_CLK_TCK")
#: Kafka's own defaults, not the test harness's short ones: four JVMs starting on a loaded 2-core
#: machine miss a 500 ms heartbeat timeout, and a benchmark measures Kafka as it ships
KAFKA_DEFAULTS = {
    "broker.heartbeat.interval.ms": "2000",
    "broker.session.timeout.ms": "9000",
    "replica.lag.time.max.ms": "30000",
}
START_TIMEOUT_S = 300.0


class _PatientCluster(KafkaCluster):
    """The harness's cluster with a longer bound on its brokers' registration."""

    def wait_brokers(self, ids: set[int], timeout: float = START_TIMEOUT_S) -> None:
        """`KafkaCluster.wait_brokers` bounded by `START_TIMEOUT_S` by default."""
        super().wait_brokers(ids, max(timeout, START_TIMEOUT_S))


def process_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system, every thread) the processes `pids` used so far."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            # fields after the command's closing parenthesis; utime and stime are 14 and 15
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / _TICK


def process_rss_mb(pids: list[int]) -> float:
    """The summed VmRSS of `pids`, in MiB."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as status:
            total += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return total / 1024


@contextmanager
def mock_side() -> Iterator[tuple[str, list[int]]]:
    """`kipwire-broker serve --brokers 3` in one subprocess: bootstrap servers and its pid."""
    command = [sys.executable, "-m", "kipwire.mockbroker", "serve", "--brokers", "3", "--quiet"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        if not bootstrap:
            raise RuntimeError("kipwire-broker did not print its bootstrap servers")
        yield bootstrap, [proc.pid]
    finally:
        proc.terminate()
        proc.wait(60)


@contextmanager
def kafka_side() -> Iterator[tuple[str, list[int]]]:
    """Real Kafka 4.4.0, a controller node and brokers 1-3: bootstrap servers and the JVMs' pids."""
    layout = [NodeSpec(0, True, False)] + [NodeSpec(i, False, True) for i in (1, 2, 3)]
    with tempfile.TemporaryDirectory(prefix="kipwire-scale-realkafka-") as tmp:
        cluster = _PatientCluster.start(
            ensure_kafka(), Path(tmp), layout, extra_props=KAFKA_DEFAULTS, jvm_opts=BENCH_JVM_OPTS
        )
        try:
            pids = [n.proc.pid for n in cluster.nodes.values() if n.proc is not None]
            yield cluster.bootstrap(), pids
        finally:
            cluster.stop()


def _create(admin: Any, name: str, partitions: int) -> float:
    """Seconds for one CreateTopics of `name` (RF 3), until the AdminClient's future resolves."""
    from confluent_kafka.admin import NewTopic

    start = time.perf_counter()
    new = NewTopic(name, partitions, REPLICATION_FACTOR)
    for future in admin.create_topics([new], operation_timeout=60).values():
        future.result(timeout=120)
    return time.perf_counter() - start


def _wait_leaders(admin: Any, topics: int, partitions: int, timeout: float = 300) -> None:
    """Wait until a Metadata answer shows `partitions` partitions in `topics` topics, each led."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = admin.list_topics(timeout=30).topics
        ours = [t for name, t in listed.items() if not name.startswith("__")]
        led = sum(p.leader >= 0 for t in ours for p in t.partitions.values())
        if len(ours) >= topics and led >= partitions:
            return
        time.sleep(0.5)
    raise TimeoutError(f"{partitions} partitions not led within {timeout:.0f} s")


def measure_side(bootstrap: str, pids: list[int], partitions: int, records: int) -> dict[str, Any]:
    """Steps 1-6 of the module docstring on one running cluster."""
    from confluent_kafka.admin import AdminClient

    row: dict[str, Any] = {}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    row["create_one_s"] = _create(admin, "one", 10)
    _wait_leaders(admin, 1, 10)
    row["small"] = _flow(bootstrap, ["one"], 10, records)
    print(f"  10 partitions: {row['small']}", flush=True)
    creates = []
    topics = [f"t{n:04d}" for n in range(partitions // TOPIC_PARTITIONS)]
    for name in topics:
        creates.append(_create(admin, name, TOPIC_PARTITIONS))
    row["create_median_s"] = sorted(creates)[len(creates) // 2]
    row["create_max_s"] = max(creates)
    _wait_leaders(admin, len(topics) + 1, partitions + 10)
    time.sleep(SETTLE)
    before = process_cpu(pids)
    time.sleep(IDLE)
    row["idle_cpu_pct"] = 100 * (process_cpu(pids) - before) / IDLE
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    took, seen = trio.run(_metadata_seconds, f"{host}:{port}")
    row["metadata_s"], row["metadata_partitions"] = took, seen
    print(f"  set-up and idle: {row}", flush=True)
    row["large"] = _spread(bootstrap, topics, records)
    row["rss_mb"] = process_rss_mb(pids)
    return row


def _spread(bootstrap: str, topics: list[str], records: int) -> tuple[float, float | str]:
    """Step 5: the produce and consume rates, a failed step's reason in place of its rate (a
    cluster that cannot take the flow is a result too)."""
    targets = [(t, p) for p in range(TOPIC_PARTITIONS) for t in topics]
    try:
        produced = records / produce_spread(bootstrap, targets, records)
    except RuntimeError as exc:
        return float("nan"), f"not consumed: produce failed ({exc})"
    print(f"  spread produce: {produced:,.0f} rec/s", flush=True)
    seen, took = consume_spread(bootstrap, targets, records)
    if seen < records:
        return produced, f"consumed {seen:,} of {records:,} in {took:.0f} s"
    return produced, records / took


SIDES = {"mock": ("kipwire mock", mock_side), "kafka": ("real Kafka 4.4.0", kafka_side)}


def table(rows: list[tuple[str, dict[str, Any]]], partitions: int) -> str:
    """The sides as one markdown table."""
    lines = [
        f"| side | idle CPU at {partitions:,} | create x100: median / slowest | Metadata (all) "
        "| 10 partitions: produce / consume | spread: produce / consume | ratio produce / consume "
        "| RSS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows:
        (p1, c1), (p2, c2) = r["small"], r["large"]
        spread, ratio = f"{p2:,.0f} rec/s / {c2}", f"{p2 / p1:.2f}x / -"
        if not isinstance(c2, str):
            spread, ratio = f"{p2:,.0f} / {c2:,.0f} rec/s", f"{p2 / p1:.2f}x / {c2 / c1:.2f}x"
        lines.append(
            f"| {name} | {r['idle_cpu_pct']:.1f}% | {r['create_median_s']:.3f} / "
            f"{r['create_max_s']:.3f} s | {r['metadata_s']:.3f} s "
            f"| {p1:,.0f} / {c1:,.0f} rec/s | {spread} | {ratio} | {r['rss_mb']:.0f} MiB |"
        )
    return "\n".join(lines)


def run(partitions: int, records: int, sides: list[str]) -> None:
    """Measure each side in turn and print the table."""
    rows = []
    for key in sides:
        name, side = SIDES[key]
        with side() as (bootstrap, pids):
            row = measure_side(bootstrap, pids, partitions, records)
        print(f"{name}: {row}", flush=True)
        rows.append((name, row))
    print(table(rows, partitions))
    print("load average after the run: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
