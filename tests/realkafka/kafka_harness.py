"""Real Apache Kafka KRaft clusters on 127.0.0.1, started from the jars `kafka_dist` fetched.

`KafkaCluster.start(dist, workdir, layout)` formats every node's storage with Kafka's own
StorageTool (feature eligible.leader.replicas.version=1), starts one JVM per node with
`kafka.Kafka server.properties` and waits (bounded) until a real client sees every broker.
Two layouts: `single()` (one combined controller+broker) and `elr()` (a combined node 0, which
keeps the controller and answers clients, plus brokers 1-3 that tests stop and start).

Every JVM is ended by its own pid: SIGTERM (Kafka's clean shutdown), SIGKILL after a bound;
`hard_kill` is the unclean crash KIP-966 talks about. Logs go to files in the node's folder.
"""

from __future__ import annotations

import base64
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_dist import KafkaDist, KafkaUnavailable

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_INTERVAL_MS = 500
REPLICA_LAG_MS = 3000
# tests: a small heap, and C1 only, which starts a JVM sooner on 2 shared cores
JVM_OPTS = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
JVM_OPTS += ["-XX:-UsePerfData", "-Djava.awt.headless=true"]
# benchmarks: the full JIT and room for the batches in flight
BENCH_JVM_OPTS = ["-Xms512m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]

_PR_SET_PDEATHSIG = 1
_LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kipwire.log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""


def _die_with_parent() -> None:
    # a JVM must not outlive a killed pytest (CI timeout, ^C) and load the shared cores: Linux
    # sends it SIGKILL when its parent dies; elsewhere the fixtures' own stop() has to do
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred: Callable[[], Any], timeout: float, what: str, step: float = 0.2) -> Any:
    """Poll `pred` until it returns something truthy; TimeoutError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(step)


@dataclass(frozen=True)
class NodeSpec:
    """One KRaft node: its id and roles."""

    node_id: int
    controller: bool
    broker: bool

    @property
    def roles(self) -> str:
        """process.roles for server.properties."""
        return ",".join(
            r for r, on in (("broker", self.broker), ("controller", self.controller)) if on
        )


def single() -> list[NodeSpec]:
    """One combined controller+broker node."""
    return [NodeSpec(0, controller=True, broker=True)]


def three_brokers() -> list[NodeSpec]:
    """Node 0 (controller + broker) and brokers 1 and 2: three brokers, as the mocks have."""
    return [NodeSpec(0, True, True), NodeSpec(1, False, True), NodeSpec(2, False, True)]


def elr() -> list[NodeSpec]:
    """Node 0 (controller + an always-up broker) and brokers 1, 2, 3 to stop and restart."""
    return [NodeSpec(0, True, True)] + [NodeSpec(i, False, True) for i in (1, 2, 3)]


@dataclass
class KafkaNode:
    """One node's folder, ports and (while running) JVM."""

    spec: NodeSpec
    dir: Path
    broker_port: int | None
    controller_port: int | None
    proc: subprocess.Popen | None = None

    @property
    def metadata_log_dir(self) -> Path:
        """The node's __cluster_metadata-0 folder (its only log dir is also the metadata dir)."""
        return self.dir / "data" / "__cluster_metadata-0"

    @property
    def server_log(self) -> Path:
        """The node's log4j log file."""
        return self.dir / "server.log"

    @property
    def running(self) -> bool:
        """Whether the JVM is alive."""
        return self.proc is not None and self.proc.poll() is None


@dataclass
class KafkaCluster:
    """A running KRaft cluster; `stop()` ends every JVM it started."""

    dist: KafkaDist
    workdir: Path
    nodes: dict[int, KafkaNode]
    cluster_id: str
    extra_props: dict[str, str] = field(default_factory=dict)
    jvm_opts: list[str] = field(default_factory=lambda: list(JVM_OPTS))

    @classmethod
    def start(
        cls,
        dist: KafkaDist,
        workdir: Path,
        layout: Iterable[NodeSpec],
        extra_props: dict[str, str] | None = None,
        jvm_opts: list[str] | None = None,
        attempts: int = 2,
    ) -> KafkaCluster:
        """Format and start every node of `layout`; returns once every broker is seen.

        Kafka is the oracle here, not what is tested: a node that exits while starting gets the
        whole cluster another attempt in a fresh folder (`workdir/retry-N`, the failed attempt's
        logs kept), and only the last failure, naming every attempt's, is raised."""
        layout = list(layout)
        failures = []
        for attempt in range(attempts):
            folder = workdir / f"retry-{attempt}" if attempt else workdir
            try:
                return cls._start_once(dist, folder, layout, extra_props, jvm_opts)
            except KafkaUnavailable as e:
                failures.append(f"attempt {attempt + 1}: {e}")
        raise KafkaUnavailable("; ".join(failures))

    @classmethod
    def _start_once(
        cls,
        dist: KafkaDist,
        workdir: Path,
        layout: list[NodeSpec],
        extra_props: dict[str, str] | None,
        jvm_opts: list[str] | None,
    ) -> KafkaCluster:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "log4j2.properties").write_text(_LOG4J2)
        nodes = {}
        for spec in layout:
            nodes[spec.node_id] = KafkaNode(
                spec,
                workdir / f"node{spec.node_id}",
                free_port() if spec.broker else None,
                free_port() if spec.controller else None,
            )
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        cluster = cls(
            dist, workdir, nodes, cluster_id, dict(extra_props or {}), list(jvm_opts or JVM_OPTS)
        )
        try:
            for node in nodes.values():
                node.dir.mkdir(parents=True, exist_ok=True)
                (node.dir / "server.properties").write_text(cluster.properties(node))
                cluster._format(node)
            for node in nodes.values():
                cluster._launch(node)
            cluster.wait_brokers(set(cluster.broker_ids()))
        except BaseException:
            cluster.stop()
            raise
        return cluster

    # ------------------------------------------------------------------ configuration

    def broker_ids(self) -> list[int]:
        """Ids of the nodes that have the broker role."""
        return [i for i, n in self.nodes.items() if n.spec.broker]

    def properties(self, node: KafkaNode) -> str:
        """server.properties of one node."""
        voters = ",".join(
            f"{n.spec.node_id}@127.0.0.1:{n.controller_port}"
            for n in self.nodes.values()
            if n.spec.controller
        )
        listeners, protocols = [], ["CONTROLLER:PLAINTEXT"]
        if node.spec.broker:
            listeners.append(f"PLAINTEXT://127.0.0.1:{node.broker_port}")
            protocols.append("PLAINTEXT:PLAINTEXT")
        if node.spec.controller:
            listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
        replicas = min(3, len(self.broker_ids()))
        props = {
            "process.roles": node.spec.roles,
            "node.id": str(node.spec.node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": ",".join(protocols),
            "log.dirs": str(node.dir / "data"),
            "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "broker.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
            "replica.lag.time.max.ms": str(REPLICA_LAG_MS),
            # unknown topics must answer UNKNOWN_TOPIC_OR_PARTITION, not appear
            "auto.create.topics.enable": "false",
            "group.initial.rebalance.delay.ms": "0",
            # 50 partitions each (the defaults) cost seconds on 2 cores for nothing
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "default.replication.factor": str(replicas),
            "num.network.threads": "2",
            "num.io.threads": "2",
            "log.segment.bytes": str(16 * 1024 * 1024),
            # the cleaner allocates this map at start-up in one piece; the default 128 MiB is half
            # the 256 MiB heap, and once other start-up data was promoted it failed with
            # OutOfMemoryError (a node exited while starting, in two CI runs)
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
        }
        if node.spec.broker:
            props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{node.broker_port}"
            props["inter.broker.listener.name"] = "PLAINTEXT"
        props.update(self.extra_props)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _java(self, log: Path, main: str, *args: str) -> list[str]:
        return [
            self.dist.java,
            *self.jvm_opts,
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            f"-Dkipwire.log.file={log}",
            "-cp",
            self.dist.classpath,
            main,
            *args,
        ]

    def _format(self, node: KafkaNode) -> None:
        cmd = self._java(
            node.dir / "format.log",
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={self.cluster_id}",  # one glued argument: an id may start with "-"
            "-c",
            str(node.dir / "server.properties"),
            "--feature",
            "eligible.leader.replicas.version=1",
        )
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise KafkaUnavailable(
                f"StorageTool format failed for node {node.spec.node_id} "
                f"(exit {done.returncode}): {(done.stdout + done.stderr).strip()[-500:]}"
            )

    # ------------------------------------------------------------------ processes

    def _launch(self, node: KafkaNode) -> None:
        cmd = self._java(node.server_log, "kafka.Kafka", str(node.dir / "server.properties"))
        with open(node.dir / "jvm.out", "ab") as out:
            node.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )

    def restart(self, node_id: int, timeout: float = START_TIMEOUT_S) -> None:
        """Start a stopped node again and wait until a client sees it among the brokers."""
        node = self.nodes[node_id]
        if node.running:
            raise RuntimeError(f"node {node_id} is still running")
        self._launch(node)
        self.wait_brokers({node_id}, timeout)

    def stop_node(self, node_id: int, timeout: float = STOP_TIMEOUT_S) -> int:
        """Kafka's clean shutdown (SIGTERM), SIGKILL after `timeout`; returns the exit code."""
        node = self.nodes[node_id]
        if node.proc is None:
            return 0
        proc = node.proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        node.proc = None
        return proc.returncode

    def hard_kill(self, node_id: int) -> None:
        """SIGKILL: the node stops without a clean-shutdown file (an unclean shutdown)."""
        node = self.nodes[node_id]
        if node.proc is None or node.proc.poll() is not None:
            raise RuntimeError(f"node {node_id} is not running")
        node.proc.kill()
        node.proc.wait(timeout=STOP_TIMEOUT_S)
        node.proc = None

    def stop(self) -> None:
        """End every JVM this cluster started, each by its own pid."""
        for node_id in reversed(list(self.nodes)):
            self.stop_node(node_id)

    # ------------------------------------------------------------------ clients

    def bootstrap(self) -> str:
        """bootstrap.servers of the running brokers."""
        return ",".join(
            f"127.0.0.1:{n.broker_port}" for n in self.nodes.values() if n.spec.broker and n.running
        )

    def observer_port(self) -> int:
        """Broker port of node 0, which no test stops (the ELR story asks it)."""
        port = self.nodes[0].broker_port
        if port is None:
            raise RuntimeError("node 0 has no broker role")
        return port

    def listener_ports(self) -> list[int]:
        """Every port of every node: broker and controller listeners."""
        ports = [(n.broker_port, n.controller_port) for n in self.nodes.values()]
        return [p for pair in ports for p in pair if p is not None]

    def live_brokers(self) -> set[int]:
        """The broker ids a real client (confluent-kafka) sees in Metadata now."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap(), "log_level": 0})
        try:
            return set(admin.list_topics(timeout=2).brokers)
        except Exception:  # not up yet: any client error means "poll again"
            return set()

    def wait_brokers(self, ids: set[int], timeout: float = START_TIMEOUT_S) -> None:
        """Wait until a client sees every broker of `ids`; a JVM that exits fails at once."""

        def seen() -> bool:
            for i in ids:
                node = self.nodes[i]
                if not node.running:
                    raise KafkaUnavailable(f"node {i} exited while starting: {self.failure(i)}")
            return ids <= self.live_brokers()

        try:
            wait_until(seen, timeout, f"brokers {sorted(ids)} registered", step=0.5)
        except TimeoutError as e:
            tails = "; ".join(f"node {i}: {self.log_tail(i)}" for i in sorted(ids))
            raise TimeoutError(f"{e}; {tails}") from None

    def failure(self, node_id: int) -> str:
        """A stopped node's last ERROR line and the exception logged under it, else its log's
        tail."""
        log = self.nodes[node_id].server_log
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        errors = [n for n, line in enumerate(lines) if "] ERROR " in line]
        if not errors:
            return f"its log ends: {self.log_tail(node_id)}"
        error, after = lines[errors[-1]], lines[errors[-1] + 1 : errors[-1] + 2]
        # an exception's first line follows its log line; a next log line starts with "["
        return " | ".join([error, *(line for line in after if not line.startswith("["))])

    def log_tail(self, node_id: int, lines: int = 5) -> str:
        """The last lines of a node's server log (and JVM output), for error messages."""
        node = self.nodes[node_id]
        text = []
        for path in (node.server_log, node.dir / "jvm.out"):
            if path.exists():
                text += path.read_text(errors="replace").splitlines()[-lines:]
        return " | ".join(text) or "(no log)"

    def run_tool(self, main: str, *args: str, timeout: float = 120) -> str:
        """Run one of Kafka's command-line tools on this classpath; its stdout, or an error."""
        log = self.workdir / "tools.log"
        cmd = self._java(log, main, *args)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{main} exit {done.returncode}: {done.stderr.strip()[-500:]}")
        return done.stdout


def is_alive(pid: int) -> bool:
    """Whether a process with this pid exists (and is not a zombie we reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
