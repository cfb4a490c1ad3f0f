"""The control API from other languages: a Go test (net/http and franz-go) and a Java test
(java.net.http and Kafka's own kafka-clients) each drive one story against
`kipwire-broker serve --control-port 0`: stop the leader, produce on, an injected error fails one
produce and its handle says so, start the broker again, consume what was acknowledged.

Each skips with the reason where go or java (or the kafka-clients jars) is missing; under
`KIPWIRE_REQUIRE=java,go` (CI) such a skip is a failure (tests/conftest.py).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent
REALKAFKA = HERE.parents[1] / "realkafka"
START_TIMEOUT = 30
STORY_TIMEOUT = 600  # the first go test builds franz-go
MIN_GO = (1, 26)


class DevBroker:
    """A `kipwire-broker serve` subprocess with its bootstrap servers, control URL and log."""

    def __init__(self, proc: subprocess.Popen, bootstrap: str, control: str, log: Path) -> None:
        self.proc, self.bootstrap, self.control, self.log = proc, bootstrap, control, log

    def log_tail(self) -> str:
        """The end of what the broker logged (every control call and client request)."""
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture
def dev_broker(tmp_path: Path) -> Iterator[DevBroker]:
    """Three brokers with a control port, stopped with SIGINT (it must exit 0)."""
    log = tmp_path / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kipwire.mockbroker", "serve", "--brokers", "3"]
            + ["--control-port", "0"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        bootstrap = proc.stdout.readline().strip()
        control = ""
        for _ in range(10):  # the banner's lines: brokers, controller, then the control URL
            line = proc.stdout.readline()
            if line.startswith("control: "):
                control = line.split()[1]
                break
        assert control.startswith("http://127.0.0.1:"), f"no control URL; bootstrap {bootstrap!r}"
        yield DevBroker(proc, bootstrap, control, log)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, log.read_text(errors="replace")[-3000:]


def _kafka_dist() -> ModuleType:
    """tests/realkafka/kafka_dist.py (the kafka-clients jars' cache), under its own name."""
    if "kafka_dist" not in sys.modules:
        spec = importlib.util.spec_from_file_location("kafka_dist", REALKAFKA / "kafka_dist.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["kafka_dist"] = module
        spec.loader.exec_module(module)
    return sys.modules["kafka_dist"]


def _go_version(go: str) -> tuple[int, int] | None:
    done = subprocess.run([go, "version"], capture_output=True, text=True, timeout=60, check=False)
    found = re.search(r"go(\d+)\.(\d+)", done.stdout)
    return (int(found[1]), int(found[2])) if found else None


@pytest.mark.requires("go")
def test_a_go_client_story_through_the_control_api(dev_broker: DevBroker) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed (the Go story needs it)")
    version = _go_version(go)
    if version is None or version < MIN_GO:
        pytest.skip(f"go {version} is older than franz-go's {MIN_GO}")
    env = {**os.environ, "KIPWIRE_BOOTSTRAP": dev_broker.bootstrap}
    env["KIPWIRE_CONTROL"] = dev_broker.control
    done = subprocess.run(
        [go, "test", "-count=1", "-v", "./..."],
        cwd=HERE / "gostory",
        env=env,
        capture_output=True,
        text=True,
        timeout=STORY_TIMEOUT,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:] + "\nthe broker's log:\n" + dev_broker.log_tail()
    assert "--- PASS: TestStoryThroughTheControlAPI" in output


@pytest.mark.requires("java")
def test_a_java_client_story_through_the_control_api(dev_broker: DevBroker) -> None:
    kafka_dist = _kafka_dist()
    try:
        clients = kafka_dist.ensure_kafka_clients()
    except kafka_dist.KafkaUnavailable as exc:
        pytest.skip(f"java or the kafka-clients jars are unavailable: {exc}")
    done = subprocess.run(
        [clients.java, "-cp", clients.classpath, str(HERE / "java" / "ControlStory.java")]
        + [dev_broker.bootstrap, dev_broker.control],
        capture_output=True,
        text=True,
        timeout=STORY_TIMEOUT,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:] + "\nthe broker's log:\n" + dev_broker.log_tail()
    assert done.stdout.strip().endswith("STORY OK")
