"""What the tool matrix (test_tool_matrix.py) runs Kafka's command-line tools with: one `Side`
per cluster (real Kafka 4.4.0 or the mock), a transcript of named steps per tool, and the masks
that make two clusters' answers comparable.

A tool runs on the fetched Kafka 4.4.0 jars (in java/ToolServer.java's JVM, one per side), with
its log4j output sent to a file, so a step's text is what a user sees: stdout, then stderr
without Java stack frames, then the exit code when it is not 0. Masks replace what differs
between any two clusters (ids, timestamps, host:ports, the harness's log-dir paths); each
tool's own normaliser sorts what Kafka prints in hash order or places at random (replica lists,
observers).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafka_dist import KafkaDist
from kafka_harness import JVM_OPTS
from scenario_kit import bounded

TOOL_TIMEOUT_S = 90.0
SERVER_START_S = 180.0
TOOL_SERVER = Path(__file__).parent / "java" / "ToolServer.java"
TOOLS = "org.apache.kafka.tools."

_LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kipwire.log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""


@dataclass
class Side:
    """One cluster the matrix runs tools against: its name, bootstrap servers and tool jars.

    The tools run in one JVM per side (java/ToolServer.java), started on the first call and
    ended by `close()`: a JVM start costs seconds on a loaded machine, a tool's run far less.
    The server ends itself when its stdin closes, so it does not outlive this process (no
    PR_SET_PDEATHSIG here: that fires when the thread that started it ends, and a side's
    first tool may run in a pool thread).
    """

    name: str  # "real" or "mock"
    bootstrap: str
    dist: KafkaDist
    workdir: Path
    # the controller listener --bootstrap-controller reaches; None where the cluster has none
    controller: str | None = None
    steps: dict[str, str] = field(default_factory=dict)
    server: subprocess.Popen | None = None

    def _command(self, *more: str) -> list[str]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(_LOG4J2)
        cmd = [self.dist.java, *JVM_OPTS, f"-Dlog4j2.configurationFile={log4j}"]
        cmd += [f"-Dkipwire.log.file={self.workdir / 'tools.log'}", "-cp", self.dist.classpath]
        return cmd + list(more)

    def _start(self) -> subprocess.Popen:
        cmd = self._command(str(TOOL_SERVER))
        with open(self.workdir / "server.err", "ab") as err:
            server = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        ready = self._answer(server, SERVER_START_S)
        assert ready == {"ready": True}, ready
        return server

    def _answer(self, server: subprocess.Popen, timeout: float) -> dict:
        assert server.stdout is not None
        line = bounded(server.stdout.readline, timeout, f"{self.name} tool server")
        if not line:
            tail = (self.workdir / "server.err").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the {self.name} tool server ended: {tail}")
        return json.loads(line)

    def tool(self, main: str, *args: str, stdin: str | None = None, jvm: bool = False) -> str:
        """Run a tool (`main` relative to org.apache.kafka.tools); its text, as a user reads it.

        `{bs}` in an argument is this side's bootstrap servers, `{ctrl}` its controller. `jvm`
        runs it in a JVM of its own: for tools that finish their work in a shutdown hook they
        add with Runtime.addShutdownHook, which the tool server cannot run for them.
        """
        filled = [
            a.replace("{bs}", self.bootstrap).replace("{ctrl}", self.controller or "") for a in args
        ]
        if jvm:
            cmd = self._command(TOOLS + main, *filled)
            try:
                done = subprocess.run(
                    cmd,
                    input=stdin,
                    capture_output=True,
                    text=True,
                    timeout=TOOL_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return f"[timed out after {TOOL_TIMEOUT_S:.0f} s]"
            return user_text(done.stdout, done.stderr, done.returncode)
        if self.server is None:
            self.server = self._start()
        request = {
            "main": TOOLS + main,
            "args": filled,
            "stdin": stdin,
            "timeout_s": TOOL_TIMEOUT_S,
        }
        assert self.server.stdin is not None
        self.server.stdin.write(json.dumps(request).encode() + b"\n")
        self.server.stdin.flush()
        done = self._answer(self.server, TOOL_TIMEOUT_S + 30)
        if done["rc"] == -1:
            return f"[timed out after {TOOL_TIMEOUT_S:.0f} s]"
        return user_text(done["stdout"], done["stderr"], done["rc"])

    def close(self) -> None:
        """End the tool server: its stdin closes, it returns; killed if it does not."""
        server, self.server = self.server, None
        if server is None:
            return
        assert server.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)

    def step(self, name: str, text: str) -> str:
        """Record a step's (normalised) text under its name; returns it."""
        self.steps[name] = text
        return text

    def until(self, name: str, run: Callable[[], str], done: Callable[[str], bool]) -> str:
        """Run a step again until `done` holds for its text (bounded); records the last text."""
        deadline = time.monotonic() + 30
        text = run()
        while not done(text) and time.monotonic() < deadline:
            time.sleep(1)
            text = run()
        return self.step(name, text)


#: warnings the tools print for options of their own, not for anything the cluster said
_TOOL_WARNINGS = re.compile(r"^(Warning: |Option --\S+ has been deprecated).*$", re.M)


#: a Java stack trace's frames (tools print traces on stdout and stderr alike)
_STACK_FRAMES = re.compile(r"^\t(at |\.\.\. \d+ more).*$", re.M)


def user_text(stdout: str, stderr: str, returncode: int) -> str:
    """stdout and stderr without stack frames or the tools' deprecation warnings, then the exit
    code."""
    text = stdout.rstrip() + ("\n" + stderr if stderr.strip() else "")
    text = _STACK_FRAMES.sub("", _TOOL_WARNINGS.sub("", text))
    text = "\n".join(line.rstrip() for line in text.splitlines() if line.strip())
    return text + (f"\n[exit {returncode}]" if returncode else "")


# ------------------------------------------------------------------ masks

_MASKS: list[tuple[re.Pattern[str], str]] = [
    # host:port of any listener
    (re.compile(r"127\.0\.0\.1:\d+"), "<host:port>"),
    # Java UUIDs (member ids of classic consumers end in one)
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    # Kafka's base64 Uuids: topic ids, directory ids, KIP-848 member ids, the cluster id
    (re.compile(r"(?<![\w-])[A-Za-z0-9_-]{21}[AQgw](?![\w-])"), "<id>"),
    (re.compile(r"\bkipwire-mock\b"), "<id>"),
    # the groups a console or perf consumer without --group makes up
    (re.compile(r"\b(console|perf)-consumer-\d+\b"), r"\1-consumer-<n>"),
    # wall-clock milliseconds and the dates the perf tools print
    (re.compile(r"(?<!\d)1\d{12}(?!\d)"), "<ts>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"), "<date>"),
    # the harness's node folders and the mock's in-memory log dirs (kafka-log-dirs and
    # kafka-reassign-partitions print log dirs, in JSON without spaces: no quote or comma inside)
    (re.compile(r"/[^\s\",]*/node\d+/data"), "<log-dir>"),
    (re.compile(r"/kipwire-memory/broker-\d+"), "<log-dir>"),
]


def mask(text: str) -> str:
    """`text` with ids, timestamps, host:ports and log-dir paths replaced by placeholders."""
    for pattern, placeholder in _MASKS:
        text = pattern.sub(placeholder, text)
    return text


def mask_fields(text: str, *names: str) -> str:
    """`text` with the value after each `Name:` (as kafka-metadata-quorum and kafka-features
    print) replaced by <n>: values that move with the cluster's history, not its behaviour."""
    for name in names:
        text = re.sub(rf"({re.escape(name)}:\s*)\S+", r"\1<n>", text)
    return text


def table(text: str, sep: str | None = None) -> list[list[str]]:
    """A tool's table as rows of cells: tab-separated (`sep="\\t"`) or space-aligned."""
    rows = []
    for line in text.splitlines():
        cells = line.rstrip("\t").split(sep) if sep else line.split()
        rows.append([c.strip() for c in cells])
    return rows


def untable(rows: list[list[str]]) -> str:
    """Rows back to text, one space between cells."""
    return "\n".join(" ".join(row) for row in rows)


#: cells that say a value is absent: kept by mask_columns, since absent and present differ
ABSENT = {"None", "-", ""}


def mask_columns(text: str, names: set[str], sep: str | None = None, sort: bool = False) -> str:
    """A table whose header names columns in `names`: those cells become <n> (unless they say
    the value is absent), and the rows under the header sorted when `sort` (Kafka prints some
    in hash order). A row short of the header's cells (a last empty column) is padded."""
    rows = table(text, sep)
    out: list[list[str]] = []
    header: list[str] | None = None
    body: list[list[str]] = []
    for row in rows:
        if names & set(row):
            out += sorted(body) if sort else body
            header, body = row, []
            out.append(row)
        elif header is not None and len(header) - len(row) in (0, 1):
            row = row + [""] * (len(header) - len(row))
            cells = zip(header, row, strict=True)
            body.append(["<n>" if h in names and c not in ABSENT else c for h, c in cells])
        else:
            out += sorted(body) if sort else body
            header, body = None, []
            out.append(row)
    out += sorted(body) if sort else body
    return untable(out)


def replica_sets(text: str) -> str:
    """kafka-topics --describe with each partition's replicas and ISR as sorted sets and its
    leader as <leader>: Kafka starts its replica placement at a random broker, the mock does
    not, so only which brokers hold a partition is comparable."""

    def sort_ids(m: re.Match[str]) -> str:
        ids = sorted(int(i) for i in m.group(2).split(",") if i)
        return m.group(1) + ",".join(str(i) for i in ids)

    text = re.sub(r"(Replicas: |Isr: )([\d,]*)", sort_ids, text)
    return re.sub(r"Leader: \d+", "Leader: <leader>", text)


def sorted_lines(text: str) -> str:
    """The lines of `text` sorted: a consumer's records come in whatever order fetches end."""
    return "\n".join(sorted(text.splitlines()))


def sorted_table(text: str) -> str:
    """A space-aligned table with one space between cells and its rows (not its header)
    sorted: Kafka lists groups in hash order."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(lines[:1] + sorted(lines[1:]))
