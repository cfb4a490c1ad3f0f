"""Real Kafka clients against librdkafka's mock cluster, recorded with tcpdump on loopback.

`MockCluster` starts the mock in-process (a confluent-kafka producer with
`test.mock.num.brokers`); its brokers listen on 127.0.0.1 ports found from `list_topics()`.
`Tcpdump` records those ports. It is ready when tcpdump prints "listening on"; it has written
everything when a UDP marker datagram, sent after the workload, is in the file (tcpdump runs
with `-U`: each packet is written as soon as libpcap delivers it, and it delivers in order). The
marker is the only non-TCP packet in the capture. A capture in which the kernel dropped
packets raises `IncompleteCapture`.

Every wait here polls with a deadline; nothing sleeps to let a race pass.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TCPDUMP = shutil.which("tcpdump") or (
    "/usr/sbin/tcpdump" if os.path.exists("/usr/sbin/tcpdump") else None
)


class CaptureUnavailable(Exception):
    """tcpdump is missing or cannot capture on `lo` here (not root, no CAP_NET_RAW, ...)."""


class IncompleteCapture(Exception):
    """tcpdump reported packets dropped by the kernel: the file misses some traffic."""


def wait_until(pred: Callable[[], Any], timeout: float, what: str, step: float = 0.02) -> Any:
    """Poll `pred` until it returns something truthy; TimeoutError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(step)


# ---------------------------------------------------------------------------------------------
# the mock cluster


@dataclass
class MockCluster:
    """librdkafka's mock cluster, alive as long as `owner` (the producer that created it)."""

    owner: Any
    ports: list[int]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def close(self) -> None:
        close = getattr(self.owner, "close", None)
        if close is not None:
            close()
        self.owner = None


def start_mock_cluster(brokers: int = 3) -> MockCluster:
    from confluent_kafka import Producer

    owner = Producer(
        {
            "test.mock.num.brokers": brokers,
            "bootstrap.servers": "unused:9",  # replaced by the mock's own brokers
            "client.id": "mock-owner",
            "enable.metrics.push": False,  # no telemetry connection to show up in captures
            "log_level": 3,
        }
    )
    md = owner.list_topics(timeout=10)
    # the first answer comes from the bootstrap connection; ask again so the connection to a
    # learned broker is up now, not in the middle of a later capture
    md = owner.list_topics(timeout=10)
    ports = sorted(b.port for b in md.brokers.values())
    hosts = {b.host for b in md.brokers.values()}
    if len(ports) != brokers or hosts != {"127.0.0.1"}:
        raise RuntimeError(f"mock cluster brokers: {md.brokers}")
    return MockCluster(owner, ports)


# ---------------------------------------------------------------------------------------------
# tcpdump


@dataclass
class Tcpdump:
    """`tcpdump -i lo -U --immediate-mode -w path` for some TCP ports plus a UDP marker port."""

    path: Path
    ports: Sequence[int]
    ready_timeout: float = 15.0
    proc: subprocess.Popen | None = None
    marker: bytes = field(default_factory=lambda: b"kipwire-marker-" + uuid.uuid4().hex.encode())
    markers_sent: int = 0
    stderr_lines: list[str] = field(default_factory=list)
    _lines: queue.Queue = field(default_factory=queue.Queue)
    _udp: socket.socket | None = None
    _pump_thread: threading.Thread | None = None

    def start(self) -> Tcpdump:
        if TCPDUMP is None:
            raise CaptureUnavailable("tcpdump is not installed (Debian package tcpdump)")
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind(("127.0.0.1", 0))
        marker_port = self._udp.getsockname()[1]
        expr = " or ".join([*(f"tcp port {p}" for p in self.ports), f"udp port {marker_port}"])
        # no --immediate-mode: libpcap then uses TPACKET_V2 with one snaplen-sized slot per
        # packet, and a 2 MiB ring of 256 KiB slots drops bursts; the marker tells when the
        # (TPACKET_V3, block-timeout) delivery has caught up instead
        cmd = [TCPDUMP, "-i", "lo", "-U", "-B", "32768", "-s", "0", "-n"]
        cmd += ["-w", str(self.path), expr]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()
        deadline = time.monotonic() + self.ready_timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._abort()
                raise CaptureUnavailable(
                    f"tcpdump printed no 'listening on' line within {self.ready_timeout} s"
                ) from None
            if line is None:  # tcpdump exited before it was listening
                rc = self.proc.wait(timeout=5)
                text = " | ".join(self.stderr_lines) or "(no output)"
                raise CaptureUnavailable(f"tcpdump cannot capture on lo (exit {rc}): {text}")
            if "listening on" in line:
                return self
            if time.monotonic() >= deadline:
                self._abort()
                raise CaptureUnavailable(f"tcpdump not listening: {' | '.join(self.stderr_lines)}")

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.stderr_lines.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _abort(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        if self._udp is not None:
            self._udp.close()

    def _send_marker(self) -> None:
        assert self._udp is not None
        self._udp.sendto(self.marker, self._udp.getsockname())
        self.markers_sent += 1

    def stop(self, timeout: float = 10.0) -> Path:
        """Flush (marker seen in the file), then SIGINT and wait; returns the pcap path."""
        assert self.proc is not None
        try:
            self._send_marker()
            wait_until(
                lambda: self.marker in _read(self.path), timeout, "tcpdump writing the marker"
            )
        finally:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
            if self._udp is not None:
                self._udp.close()
        if self._pump_thread is not None:
            self._pump_thread.join(timeout=5)  # stderr is closed: its last lines are in
        dropped = [ln for ln in self.stderr_lines if "dropped by kernel" in ln]
        if not dropped or not dropped[0].startswith("0 "):
            raise IncompleteCapture(f"tcpdump: {' | '.join(self.stderr_lines)}")
        return self.path


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def record(path: Path, ports: Sequence[int], workload: Callable[[], Any]) -> tuple[Path, Any]:
    """Run `workload` while tcpdump records `ports`; (pcap path, the workload's result)."""
    dump = Tcpdump(path, ports).start()
    try:
        result = workload()
    except BaseException:
        dump.stop()
        raise
    dump.stop()
    return path, result


# ---------------------------------------------------------------------------------------------
# workloads (keys and values are what the tests look for in the decoded bodies)


def messages(tag: str, n: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    """(key, value, headers) of `n` recognisable messages."""
    return [
        (
            f"{tag}-key-{i:03d}".encode(),
            f"{tag}-value-{i:03d}-".encode() + b"x" * 40,
            [("seq", str(i).encode()), ("src", tag.encode())],
        )
        for i in range(n)
    ]


def ck_produce(
    bootstrap: str,
    topic: str,
    msgs: Sequence[tuple[bytes, bytes, list]],
    *,
    client_id: str,
    timeout: float = 60.0,
    **conf: Any,
) -> int:
    """confluent-kafka producer: produce all, flush, close; returns messages delivered."""
    from confluent_kafka import Producer

    delivered: list[Any] = []
    errors: list[Any] = []

    def on_delivery(err, msg):
        (errors if err else delivered).append(err or msg)

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "log_level": 3, **conf})
    for key, value, headers in msgs:
        p.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
    left = p.flush(timeout)
    if left or errors or len(delivered) != len(msgs):
        raise RuntimeError(f"produce: {left} undelivered, errors {errors[:3]}")
    close_client(p)
    return len(delivered)


def ck_consume(
    bootstrap: str, topic: str, n: int, *, client_id: str, group: str, timeout: float = 90.0
) -> list[tuple[bytes, bytes]]:
    """confluent-kafka consumer in a group: poll until `n` messages or `timeout`, then close."""
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    got: list[tuple[bytes, bytes]] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            got.append((m.key(), m.value()))
    finally:
        c.close()
    return got


def close_client(client: Any) -> None:
    close = getattr(client, "close", None)
    if close is not None:
        close()


def kp_produce(
    bootstrap: str,
    topic: str,
    msgs: Sequence[tuple[bytes, bytes, list]],
    *,
    client_id: str,
    api_version: tuple[int, int] | None = (2, 3),
    timeout: float = 60.0,
    **conf: Any,
) -> int:
    """kafka-python producer (pinned to `api_version`), every send confirmed; returns the count."""
    from kafka import KafkaProducer

    p = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        api_version=api_version,
        request_timeout_ms=int(timeout * 1000),
        max_block_ms=int(timeout * 1000),
        **conf,
    )
    try:
        futures = [p.send(topic, key=k, value=v, headers=h) for k, v, h in msgs]
        p.flush(timeout=timeout)
        for f in futures:
            f.get(timeout=timeout)
    finally:
        p.close(timeout=timeout)
    return len(futures)


def kp_consume(
    bootstrap: str,
    topic: str,
    n: int,
    *,
    client_id: str,
    api_version: tuple[int, int] | None = (2, 3),
    timeout: float = 60.0,
) -> list[tuple[bytes, bytes]]:
    """kafka-python consumer without a group, from the earliest offset, until `n` or timeout."""
    from kafka import KafkaConsumer

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        api_version=api_version,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        request_timeout_ms=int(timeout * 1000) + 1000,
    )
    got: list[tuple[bytes, bytes]] = []
    try:
        # kafka-python 3.0.12 with a pinned api_version bootstraps on its IO thread while the
        # constructor goes on; a topic subscribed meanwhile is lost when the bootstrap's
        # Metadata answer (asked without it) clears the update flag, and the next refresh
        # is metadata.max.age.ms (5 min) away. Subscribing after the bootstrap cannot race.
        c.bootstrap(timeout_ms=int(timeout * 1000))
        c.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=200).values():
                got.extend((r.key, r.value) for r in records)
    finally:
        c.close()
    return got
