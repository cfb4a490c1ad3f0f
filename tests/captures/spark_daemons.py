"""Spark daemons for the tests, started from pyspark's own jars: a standalone master and
workers, a Spark Connect server. Each is one JVM on 127.0.0.1 (`spark-class` execs java, so the
pid is the JVM's), waited for by a line of its log within a bounded time, ended by its pid.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

_SPEC = importlib.util.find_spec("pyspark")
SPARK_HOME = Path(_SPEC.origin).parent if _SPEC and _SPEC.origin else Path("/nonexistent")
SPARK_BIN = SPARK_HOME / "bin"  # spark-class and spark-submit, with the jars beside them
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


def java_missing() -> str | None:
    """Why the daemons cannot run here, or None."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is missing (no java on PATH, no JAVA_HOME): Spark's daemons need a JVM"
    if not (SPARK_BIN / "spark-class").exists():
        return f"pyspark's spark-class is not in {SPARK_BIN}"
    return None


class Daemon:
    """One JVM started with `cmd`, its output in `log`."""

    def __init__(self, cmd: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        base = dict(
            os.environ,
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY="384m",
        )
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env={**base, **(env or {})}
            )

    def wait_for(self, pattern: str, timeout: float = 90.0) -> re.Match[str]:
        """The first match of `pattern` in the log; fails on exit or after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.log.read_text(errors="replace"))
            if found:
                return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.25)  # polling a log file the JVM writes: no event to wait on
        tail = self.log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{pattern!r} not seen (exit {self.proc.poll()}):\n{tail}")

    def stop(self) -> None:
        """SIGTERM by pid (Spark's shutdown hooks end a worker's executors), then SIGKILL."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start_master(folder: Path) -> tuple[Daemon, str]:
    """A standalone master on a free port; its spark:// URL."""
    cmd = [str(SPARK_BIN / "spark-class"), "org.apache.spark.deploy.master.Master"]
    master = Daemon(
        cmd + ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"], folder / "master.log"
    )
    found = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")
    master.wait_for(r"New state: ALIVE")
    return master, found.group(1)


def start_worker(folder: Path, url: str, n: int) -> Daemon:
    """A worker of one core and 1 GiB registered with the master at `url`."""
    work = folder / f"worker-{n}"
    work.mkdir()
    cmd = [str(SPARK_BIN / "spark-class"), "org.apache.spark.deploy.worker.Worker"]
    cmd += ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", "1"]
    cmd += ["--memory", "1g", "--work-dir", str(work), url]
    worker = Daemon(cmd, folder / f"worker-{n}.log")
    worker.wait_for(r"Successfully registered with master")
    return worker


def start_connect_server(folder: Path, port: int, python: str) -> Daemon:
    """A Spark Connect server (local[2]) on 127.0.0.1:`port`, its Python workers `python`."""
    cmd = [str(SPARK_BIN / "spark-submit"), "--class", CONNECT_SERVER, "--master", "local[2]"]
    cmd += ["--conf", "spark.ui.enabled=false"]
    cmd += ["--conf", "spark.connect.grpc.binding.address=127.0.0.1"]
    cmd += ["--conf", f"spark.connect.grpc.binding.port={port}"]
    cmd += ["--conf", "spark.driver.host=127.0.0.1"]
    # spark-submit sizes this daemon's heap by SPARK_DAEMON_MEMORY, not --driver-memory; the
    # Python a Connect session's functions and data sources run is PYSPARK_PYTHON's
    env = {"SPARK_DAEMON_MEMORY": "1g", "PYSPARK_PYTHON": python}
    server = Daemon(cmd + ["spark-internal"], folder / "connect.log", env)
    server.wait_for(r"Spark Connect server started")
    return server
