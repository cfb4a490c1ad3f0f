"""`make demo` (`kipwire`, `python -m kipwire.mockbroker.demo`): KIP-966's story, end to end.

A 3-broker mock cluster (min ISR 2) records pcapng while a real client (confluent-kafka,
acks=all, idempotent) produces through KIP-966's "last replica standing": one follower cut off
by the network, the second stopped cleanly, the leader, last ISR member, shut down uncleanly
(its unflushed suffix lost), then the ELR member back, the old leader back, the network healed.
The story runs with ELR on (Kafka 4.1) and again with ELR off (Kafka 3.9, feature level 0); a
table puts the two side by side, and both captures are decoded (Spark, `local[*]`) and compared
into a report.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .controller import Semantics
from .sync_cluster import MockCluster

TOPIC = "kip966-story"
PRODUCER_ID = "kipwire-demo-producer"
READER_ID = "kipwire-demo-reader"
MIN_ISR = 2
NOT_ENOUGH_REPLICAS = (19, 20)  # NOT_ENOUGH_REPLICAS and NOT_ENOUGH_REPLICAS_AFTER_APPEND
STEP_TIMEOUT = 20.0
# how long the client keeps retrying against a partition under min ISR before each next fault
UNDER_MIN_ISR_WINDOW = 1.5
# librdkafka logs every refused connection to a stopped broker on stderr; the story expects them
_CLIENT_LOG = logging.getLogger("kipwire.demo.client")
_CLIENT_LOG.addHandler(logging.NullHandler())
_CLIENT_LOG.propagate = False


class DemoError(Exception):
    """A step of the demo that failed: its message names the step and the reason."""


@dataclass
class StoryResult:
    """What one run of the story measured."""

    label: str
    capture: Path
    acked: int = 0
    lost: int = 0
    read: int = 0
    elections: dict[str, int] = field(default_factory=dict)
    under_min_isr_s: float = 0.0
    not_enough_replicas: int = 0
    producer_fatal: str = ""
    timeline: list[str] = field(default_factory=list)


class Progress:
    """Step lines, and one live status line rewritten in place when the output is a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()
        self._width = 0
        self._lock = threading.Lock()

    def step(self, text: str) -> None:
        """One line saying what the demo does now."""
        with self._lock:
            self._clear()
            print(text, file=self.stream, flush=True)

    def status(self, text: str) -> None:
        """The live line (terminals only: elsewhere the step lines carry the same facts)."""
        if not self.live:
            return
        with self._lock:
            self._clear()
            self.stream.write(text)
            self.stream.flush()
            self._width = len(text)

    def _clear(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0


class Workload:
    """An acks=all idempotent confluent-kafka producer writing numbered records to TOPIC."""

    def __init__(self, bootstrap: str, message_timeout_ms: int) -> None:
        from confluent_kafka import Producer

        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": PRODUCER_ID,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": message_timeout_ms,
                "retry.backoff.ms": 100,
                "retry.backoff.max.ms": 500,
                "reconnect.backoff.max.ms": 500,
                "logger": _CLIENT_LOG,
            }
        )
        self.sent = 0
        self.acked: set[int] = set()
        self.failed = 0
        # a fatal client error (the idempotent producer seeing its acked sequence gone) ends it
        self.fatal = ""
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="demo-producer", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._stop.is_set() and not self.fatal:
            self._guard(self.producer.poll, 0.05)

    def _guard(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Make a client call; a fatal client error is recorded, and stops the workload."""
        from confluent_kafka import KafkaException

        try:
            call(*args, **kwargs)
        except KafkaException as exc:
            self.fatal = exc.args[0].name() if exc.args else str(exc)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add(int(msg.value()))
        else:
            self.failed += 1

    def produce(self, count: int) -> range:
        """Queue `count` more records (values are their sequence numbers)."""
        numbers = range(self.sent, self.sent + count)
        for n in numbers:
            if self.fatal:
                break
            self._guard(self.producer.produce, TOPIC, str(n).encode(), on_delivery=self._delivered)
        self.sent += count
        return numbers

    def wait_acked(self, numbers: range, timeout: float) -> bool:
        """True once every record of `numbers` is acknowledged; False after `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(n in self.acked for n in numbers):
                return True
            if self.fatal:
                return False
            time.sleep(0.05)
        return False

    def close(self, timeout: float) -> None:
        """Deliver or fail what is queued (bounded by `timeout`), then stop polling."""
        if not self.fatal:
            self._guard(self.producer.flush, timeout)
        self.stop()

    def stop(self) -> None:
        """Stop polling and drop the client (idempotent), so it does not outlive the cluster."""
        self._stop.set()
        self._poller.join(STEP_TIMEOUT)
        self.producer = None


class Monitor:
    """Samples the controller's partition state: time under min ISR and the live status line."""

    def __init__(self, cluster: MockCluster, label: str, work: Workload, progress: Progress):
        self.cluster, self.label, self.work, self.progress = cluster, label, work, progress
        self.under_min_isr_s = 0.0
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="demo-monitor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(0.1):
            now = time.monotonic()
            try:
                p = self.cluster.partition(TOPIC, 0)
            except (RuntimeError, KeyError):
                break  # the cluster is closing
            if len(p.isr) < MIN_ISR:
                self.under_min_isr_s += now - last
            last = now
            self.progress.status(
                f"  [{self.label} {now - self._t0:5.1f}s] acked {len(self.work.acked)}/"
                f"{self.work.sent}  leader {p.leader}  ISR {list(p.isr)}  ELR {list(p.elr)}"
            )

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join(5)


def _state(cluster: MockCluster) -> str:
    p = cluster.partition(TOPIC, 0)
    return f"leader {p.leader}, ISR {list(p.isr)}, ELR {list(p.elr)}"


def _wait(cluster: MockCluster, what: str, pred: Callable[[Any], bool]) -> None:
    try:
        cluster.wait_until(lambda: pred(cluster.partition(TOPIC, 0)), STEP_TIMEOUT)
    except TimeoutError:
        raise DemoError(f"{what} did not happen within {STEP_TIMEOUT:.0f} s") from None


def _read_back(bootstrap: str, timeout: float) -> set[int]:
    """Every record readable at the end, from offset 0 to the high watermark."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": READER_ID,
            "group.id": READER_ID,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "logger": _CLIENT_LOG,
        }
    )
    seen: set[int] = set()
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout)
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        position = 0
        while position < high and time.monotonic() < deadline:
            for m in consumer.consume(500, 0.2):
                if m.error() is None:
                    seen.add(int(m.value()))
                    position = m.offset() + 1
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    position = max(position, m.offset())
    finally:
        consumer.close()
    return seen


def _elections(cluster: MockCluster) -> dict[str, int]:
    """Clean, ELR and unclean elections from the controller's metrics and log."""
    metrics = cluster.metrics()
    elr = metrics["election_from_eligible_leader_replicas"]
    unclean = metrics["unclean_leader_elections"]
    # every PartitionChangeRecord naming a leader (>= 0) is an election; not ELR/unclean = clean.
    # The story is over: the log only grows on a fault, so reading it from this thread is safe.
    named = sum(
        1
        for e in list(cluster.controller.log)
        if e.name == "PartitionChangeRecord" and e.record.get("leader", -2) >= 0
    )
    return {"clean": named - elr - unclean, "ELR": elr, "unclean": unclean}


def count_not_enough_replicas(capture: Path) -> int:
    """Produce responses to the demo's producer carrying NOT_ENOUGH_REPLICAS(_AFTER_APPEND)."""
    from kipwire.captures.pipeline import decode_capture

    rows = decode_capture(capture, with_body_json=False)
    return sum(
        1
        for r in rows.pdus
        if r["api_key"] == 0
        and r["direction"] == "response"
        and r["client_id"] == PRODUCER_ID
        and r["error_code"] in NOT_ENOUGH_REPLICAS
    )


def run_story(out: Path, *, elr: bool, records: int, progress: Progress) -> StoryResult:
    """Run the last-replica-standing story once; the cluster records `out/<label>.pcapng`."""
    label = "elr-on" if elr else "elr-off"
    result = StoryResult(label, out / f"{label}.pcapng")
    semantics = Semantics.KAFKA_4_1 if elr else Semantics.KAFKA_3_9
    level = 1 if elr else 0
    quarter = max(records // 4, 1)

    def note(text: str) -> None:
        result.timeline.append(text)
        progress.step(f"  [{label}] {text}")

    with MockCluster(
        brokers=3,
        semantics=semantics,
        features={"eligible.leader.replicas.version": level},
        record=str(result.capture),
    ) as cluster:
        progress.step(
            f"[{label}] 3 brokers, {semantics.name} semantics, "
            f"eligible.leader.replicas.version={level}, min ISR {MIN_ISR}, "
            f"recording {result.capture}"
        )
        cluster.create_topic(
            TOPIC, 1, 3, {"min.insync.replicas": MIN_ISR, "unclean.leader.election.enable": False}
        )
        p = cluster.partition(TOPIC, 0)
        leader = p.leader
        first, second = [r for r in p.replicas if r != leader]
        work = Workload(cluster.bootstrap_servers, message_timeout_ms=int(STEP_TIMEOUT * 1000))
        monitor = Monitor(cluster, label, work, progress)
        try:
            batch = work.produce(quarter)
            if not work.wait_acked(batch, STEP_TIMEOUT):
                raise DemoError(f"the producer's first {quarter} records were not acked")
            note(f"T0 {quarter} records acked by all 3 replicas; {_state(cluster)}")

            cluster.isolate(first)
            _wait(cluster, f"broker {first} leaving the ISR", lambda p: first not in p.isr)
            batch = work.produce(quarter)
            work.wait_acked(batch, STEP_TIMEOUT)
            note(f"T1 follower {first} cut off by the network; {_state(cluster)}")

            cluster.stop_broker(second, clean=True)
            _wait(cluster, f"the ISR shrinking to [{leader}]", lambda p: list(p.isr) == [leader])
            work.produce(quarter)
            time.sleep(UNDER_MIN_ISR_WINDOW)  # the client retries into NOT_ENOUGH_REPLICAS
            note(f"T2 follower {second} stopped cleanly, under min ISR; {_state(cluster)}")

            cluster.stop_broker(leader, clean=False)
            _wait(cluster, "the partition going offline", lambda p: p.leader == -1)
            note(f"T3 leader {leader} (last ISR member) shut down uncleanly; {_state(cluster)}")

            cluster.start_broker(second)
            if elr:
                _wait(cluster, f"ELR member {second} elected", lambda p: p.leader == second)
            note(f"T4 broker {second} back; {_state(cluster)}")

            cluster.start_broker(leader)
            _wait(cluster, "a leader elected", lambda p: p.leader >= 0)
            note(f"T5 broker {leader} back; {_state(cluster)}")

            cluster.heal()
            _wait(cluster, "the ISR filling up again", lambda p: len(p.isr) == 3)
            work.produce(records - 3 * quarter)
            work.close(STEP_TIMEOUT)
            ended = f"producer stopped by {work.fatal}" if work.fatal else "producer flushed"
            note(f"T6 network healed, broker {first} back in the ISR, {ended}; {_state(cluster)}")
        finally:
            monitor.stop()
            work.stop()
        seen = _read_back(cluster.bootstrap_servers, STEP_TIMEOUT)
        result.acked = len(work.acked)
        result.read = len(seen)
        result.lost = len(work.acked - seen)
        result.elections = _elections(cluster)
        result.under_min_isr_s = monitor.under_min_isr_s
        result.producer_fatal = work.fatal
    result.not_enough_replicas = count_not_enough_replicas(result.capture)
    return result


def format_table(on: StoryResult, off: StoryResult) -> str:
    """The side-by-side table of the two runs."""
    rows = [
        ("records acknowledged", on.acked, off.acked),
        ("records lost (acked, not readable)", on.lost, off.lost),
        ("elections: clean", on.elections["clean"], off.elections["clean"]),
        ("elections: ELR", on.elections["ELR"], off.elections["ELR"]),
        ("elections: unclean", on.elections["unclean"], off.elections["unclean"]),
        ("time under min ISR (s)", f"{on.under_min_isr_s:.1f}", f"{off.under_min_isr_s:.1f}"),
        (
            "NOT_ENOUGH_REPLICAS seen by the producer",
            on.not_enough_replicas,
            off.not_enough_replicas,
        ),
        ("fatal error seen by the producer", on.producer_fatal or "-", off.producer_fatal or "-"),
    ]
    width = max(len(r[0]) for r in rows)
    col = max(len(str(v)) for r in rows for v in r[1:] + ("ELR off (3.9)",))
    lines = [f"{'':<{width}}  {'ELR on (4.1)':>{col}}  {'ELR off (3.9)':>{col}}"]
    lines += [f"{name:<{width}}  {a!s:>{col}}  {b!s:>{col}}" for name, a, b in rows]
    return "\n".join(lines)


def _spark_session(progress: Progress) -> Any:
    """A local[*] Spark session, or None (said in one line) when Spark cannot start."""
    try:
        from kipwire.captures.job import session

        return session("local[*]")
    except Exception as exc:  # noqa: BLE001 - whatever stops Spark, the local engine decodes
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        progress.step(f"    Spark cannot start ({reason}); decoding with the local engine instead")
        return None


def decode_captures(
    captures: Sequence[Path], out: Path, progress: Progress, spark: bool = True
) -> tuple[str, list[Path]]:
    """Decode each capture with the Spark job (`local[*]`), or locally (asked, or no Spark)."""
    dirs = [out / "decoded" / c.stem for c in captures]
    session = _spark_session(progress) if spark else None
    if session is None:
        from kipwire.captures.local_engine import run_local

        for c, d in zip(captures, dirs, strict=True):
            run_local([str(c)], d, capture=c.stem)
        return "local", dirs
    from kipwire.captures.job import run_decode

    try:
        for c, d in zip(captures, dirs, strict=True):
            run_decode([str(c)], d, name=c.stem, spark=session)
    finally:
        session.stop()
    return "spark", dirs


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kipwire",
        description="KIP-966's last-replica-standing story with a real client, ELR on and off, "
        "recorded, decoded and compared.",
    )
    p.add_argument("--out", default="demo-out", type=Path, help="output folder (demo-out)")
    p.add_argument("--records", type=int, default=2000, help="records to produce per run (2000)")
    p.add_argument("--quick", action="store_true", help="reduced size (400 records), for tests")
    return p


@dataclass
class DemoRun:
    """Everything one demo run produced."""

    on: StoryResult
    off: StoryResult
    engine: str
    decoded: list[Path]
    report: Path
    differences: dict[str, int]


class StepFailed(Exception):
    """A numbered step failed; the message says which and why."""


def run(out: Path, records: int, progress: Progress, spark: bool = True) -> DemoRun:
    """The whole demo: both stories, the table, the decode and the comparison."""
    step = "preparing the output folder"
    try:
        out.mkdir(parents=True, exist_ok=True)
        step = "1/5 the story with ELR on"
        progress.step(f"{step}: {records} records, acks=all, idempotent confluent-kafka producer")
        on = run_story(out, elr=True, records=records, progress=progress)
        step = "2/5 the story with ELR off"
        progress.step(f"{step} (Kafka before 4.0): {records} records")
        off = run_story(out, elr=False, records=records, progress=progress)
        step = "3/5 the table"
        progress.step(f"{step}, the two runs side by side:")
        progress.step(format_table(on, off))
        step = "4/5 decoding both captures"
        progress.step(f"{step} with the {'Spark job (local[*])' if spark else 'local engine'}")
        engine, decoded = decode_captures([on.capture, off.capture], out, progress, spark)
        progress.step(f"    decoded with the {engine} engine into {out / 'decoded'}")
        step = "5/5 comparing the captures"
        progress.step(f"{step}: ELR on (baseline) against ELR off (candidate)")
        from kipwire.captures.compare import compare, write_report

        report = compare(decoded[0], decoded[1])
        paths = write_report(report, out)
        kinds = dict(sorted(report.kinds().items()))
        progress.step("    differences: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
    except Exception as exc:  # noqa: BLE001 - any failure ends the demo with its step named
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StepFailed(f"{step} failed: {reason}") from exc
    return DemoRun(on, off, engine, decoded, paths["html"], kinds)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `kipwire` and `python -m kipwire.mockbroker.demo`."""
    args = _parser().parse_args(argv)
    records = 400 if args.quick else args.records
    if records < 4:
        print("kipwire: --records must be at least 4", file=sys.stderr)
        return 2
    progress = Progress()
    t0 = time.monotonic()
    try:
        result = run(args.out, records, progress)
    except StepFailed as exc:
        print(f"kipwire demo: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    progress.step(f"done in {time.monotonic() - t0:.0f} s; wrote:")
    for path in (result.on.capture, result.off.capture, *result.decoded, result.report):
        progress.step(f"  {path}")
    progress.step(f"  {result.report.with_suffix('.md')} and the PNG plots beside it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
