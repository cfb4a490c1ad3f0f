"""The Prometheus endpoint of `kipwire-broker serve --metrics-port`, read with urllib, and the
text format it writes."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from kipwire.mockbroker.metrics import prometheus_text

TIMEOUT = 20


def test_prometheus_text_labels_per_partition_gauges():
    text = prometheus_text(
        {
            "high_watermark": {"orders-1": 7, 'we"ird-0': 2},
            "global_under_min_isr_partition_count": 1,
        }
    )
    lines = text.splitlines()
    assert "kipwire_global_under_min_isr_partition_count 1" in lines
    assert 'kipwire_high_watermark{topic="orders",partition="1"} 7' in lines
    assert 'kipwire_high_watermark{topic="we\\"ird",partition="0"} 2' in lines
    assert lines.count("# TYPE kipwire_high_watermark gauge") == 1


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_serve_metrics_port_answers_get_metrics():
    proc = subprocess.Popen(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", "--brokers", "2", "--quiet"]
        + ["--metrics-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert len(proc.stdout.readline().split(",")) == 2
        url = proc.stdout.readline().strip().removeprefix("metrics: ")
        status, body = _get(url)
        assert status == 200
        assert "kipwire_offline_partition_count 0" in body.splitlines()
        assert "# TYPE kipwire_unclean_leader_elections gauge" in body
        assert _get(url.replace("/metrics", "/other"))[0] == 404
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize("port", ["-1", "70000"])
def test_a_bad_metrics_port_exits_2_with_a_message(port):
    done = subprocess.run(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", "--metrics-port", port],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2
    assert "--metrics-port" in done.stderr and "Traceback" not in done.stderr
