"""One run of KIP-966's "last replica standing" story against the mock cluster, recorded.

A 3-broker mock cluster (min ISR 2) records pcapng while a real client (confluent-kafka,
acks=all, idempotent) produces through it: one follower cut off by the network, the second
stopped cleanly, the leader, last ISR member, shut down uncleanly (its unflushed suffix lost),
then the ELR member back, the old leader back, the network healed. `run_story` returns what the
run measured (`StoryResult`); `Progress` prints its steps.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster, Semantics

TOPIC = "kip966-story"
PRODUCER_ID = "kipwire-demo-producer"
READER_ID = "kipwire-demo-reader"
MIN_ISR = 2
NOT_ENOUGH_REPLICAS = (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
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
    from kipwire.captures import decode_capture

    rows = decode_capture(capture, with_body_json=False)
    return sum(
        1
        for r in rows.pdus
        if r["api_key"] == ApiKey.PRODUCE
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
