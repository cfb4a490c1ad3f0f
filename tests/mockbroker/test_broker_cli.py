"""`kipwire-broker serve` (python -m kipwire.mockbroker): prints the bootstrap servers, logs each
request, stops cleanly on SIGINT; bad arguments exit 2 with a message, no traceback."""

from __future__ import annotations

import signal
import subprocess
import sys

from kafka_wire import WireClient

from kipwire.codec import ApiKey

TIMEOUT = 20


def _serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_prints_bootstrap_logs_requests_and_stops_on_sigint():
    proc = _serve("--brokers", "2")
    try:
        bootstrap = proc.stdout.readline().strip()
        addresses = bootstrap.split(",")
        assert len(addresses) == 2
        with WireClient(addresses[0]) as client:
            assert len(client.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]) == 2
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "MetadataRequest v12" in err
    assert "Traceback" not in err


def test_record_option_writes_a_pcapng(tmp_path):
    path = tmp_path / "cli.pcapng"
    proc = _serve("--brokers", "1", "--record", str(path), "--quiet")
    try:
        bootstrap = proc.stdout.readline().strip()
        with WireClient(bootstrap) as client:
            client.call(ApiKey.METADATA, 12, {"topics": []})
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert path.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"  # a pcapng section header block
    assert path.stat().st_size > 200


def test_bad_arguments_exit_2_without_a_traceback():
    for args in (["--brokers", "0"], ["--port", "70000"], ["--brokers", "x"]):
        done = subprocess.run(
            [sys.executable, "-m", "kipwire.mockbroker", "serve", *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert done.returncode == 2, args
        assert "Traceback" not in done.stderr
        assert done.stderr.strip()


def test_a_port_in_use_is_reported():
    first = _serve("--brokers", "1", "--quiet")
    try:
        port = first.stdout.readline().strip().rsplit(":", 1)[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kipwire.mockbroker",
                "serve",
                "--brokers",
                "1",
                "--port",
                port,
                "--quiet",
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=TIMEOUT)
    assert done.returncode == 2
    assert "already in use" in done.stderr
    assert "Traceback" not in done.stderr
