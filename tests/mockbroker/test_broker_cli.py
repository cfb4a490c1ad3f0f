"""`kipwire-broker serve` (python -m kipwire.mockbroker): prints the bootstrap servers, logs each
request, stops cleanly on SIGINT; bad arguments exit 2 with a message, no traceback."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from confluent_kafka import Producer
from kafka_wire import WireClient

from kipwire.codec import ApiKey
from kipwire.mockbroker.broker.log_dirs import CLEAN_SHUTDOWN_FILE

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


def _refused(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_an_unknown_config_or_a_bad_value_exits_2_with_kafkas_message():
    typo = _refused("--config", "min.insync.replica=2")
    assert typo.returncode == 2
    assert "'min.insync.replica' was supplied but isn't a known config" in typo.stderr
    assert "Did you mean 'min.insync.replicas'?" in typo.stderr
    bad = _refused("--config", "num.partitions=abc")
    assert bad.returncode == 2
    assert "Invalid value abc for configuration num.partitions" in bad.stderr
    for done in (typo, bad, _refused("--config", "no-equals-sign")):
        assert done.returncode == 2 and "Traceback" not in done.stderr


def test_version_prints_the_package_version():
    done = subprocess.run(
        [sys.executable, "-m", "kipwire.mockbroker", "--version"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0
    assert re.fullmatch(r"kipwire-broker \d+\.\d+\.\d+\S*\n", done.stdout)


def _banner(proc: subprocess.Popen, until: str) -> list[str]:
    lines = []
    for _ in range(20):  # bootstrap, brokers, controller, metrics, control: a bounded banner
        lines.append(proc.stdout.readline().strip())
        if lines[-1].startswith(until):
            return lines
    raise AssertionError(f"no {until!r} line in {lines}")


def test_a_config_file_with_unknown_keys_is_warned_about_and_applied(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(
        "# Kafka's own keys the mock has no use for are skipped quietly\n"
        "node.id=1\nprocess.roles=broker,controller\n"
        "num.partitions = 3\n"
        "min.insync.replica=2\n"
        "auto.create.topics.enable: true\n"
    )
    proc = _serve("--brokers", "1", "--config-file", str(path), "--semantics", "KAFKA_4_0")
    try:
        lines = _banner(proc, "controller: ")
        with WireClient(lines[0]) as client:
            answer = client.call(ApiKey.METADATA, 12, {"topics": [{"name": "auto"}]})
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert lines[1] == f"broker 1: PLAINTEXT://{lines[0]}"
    assert re.fullmatch(r"controller: 127\.0\.0\.1:\d+", lines[2])
    assert len(answer["topics"][0]["partitions"]) == 3  # num.partitions from the file
    assert "'min.insync.replica' was supplied but isn't a known config" in err
    assert "Did you mean 'min.insync.replicas'?" in err
    assert "node.id" not in err and "process.roles" not in err


def _idle_log(*args: str) -> str:
    """What a 1-broker cluster logs over a second of idling, after a client's one request."""
    proc = _serve("--brokers", "1", *args)
    try:
        bootstrap = proc.stdout.readline().strip()
        with WireClient(bootstrap) as client:
            client.call(ApiKey.METADATA, 12, {"topics": []})
        # the heartbeat interval is 200 ms: a second holds several of the nodes' own requests
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0
    return err


def test_the_nodes_own_requests_are_logged_only_when_asked():
    quiet = _idle_log()
    assert "MetadataRequest v12" in quiet
    assert "BrokerHeartbeatRequest" not in quiet
    chatty = _idle_log("--log-internal")
    assert "MetadataRequest v12" in chatty
    assert "BrokerHeartbeatRequest" in chatty
    assert _idle_log("--log-level", "warning").strip() == ""


def _finalized_elr(*args: str) -> int:
    """The eligible.leader.replicas.version a 1-broker `serve` finalizes (ApiVersions v3)."""
    proc = _serve("--brokers", "1", "--quiet", *args)
    try:
        bootstrap = proc.stdout.readline().strip()
        with WireClient(bootstrap) as client:
            answer = client.call(ApiKey.API_VERSIONS, 3, {})
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0
    levels = {f["name"]: f["max_version_level"] for f in answer["finalized_features"]}
    return levels.get("eligible.leader.replicas.version", 0)


def test_elr_and_the_semantics_preset_are_chosen_on_the_command_line():
    assert _finalized_elr() == 1
    assert _finalized_elr("--elr", "off", "--semantics", "KAFKA_3_9") == 0
    unknown = _refused("--semantics", "KAFKA_9_9")
    assert unknown.returncode == 2 and "KAFKA_4_1" in unknown.stderr  # the presets are listed


def test_a_control_port_in_use_is_reported():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _refused("--brokers", "1", "--quiet", "--control-port", str(port))
    assert done.returncode == 2
    assert f"control port {port} is already in use" in done.stderr
    assert "Traceback" not in done.stderr


def test_processes_serves_each_broker_from_its_own_process_with_the_http_servers(tmp_path):
    proc = _serve(
        "--brokers", "2", "--processes", "--quiet", "--control-port", "0", "--metrics-port", "0",
        "--data-dir", str(tmp_path),
    )  # fmt: skip
    try:
        bootstrap = proc.stdout.readline().strip()
        addresses = bootstrap.split(",")
        assert len(addresses) == 2
        metrics = proc.stdout.readline().split()[1]
        control = proc.stdout.readline().split()[1]
        for address in addresses:
            with WireClient(address) as client:
                assert len(client.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]) == 2
        children = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert len(children) == 3  # one process per broker and one for the controller
        topic = {"name": "http", "partitions": 2, "replication_factor": 2}
        assert _http(f"{control}/topics", topic)["partitions"] == 2
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(10):
            producer.produce("http", b"%d" % i, partition=i % 2)
        assert producer.flush(TIMEOUT) == 0
        marks = _http(f"{control}/metrics")["high_watermark"]  # read from the brokers
        assert marks == {"http-0": 5, "http-1": 5}
        with urllib.request.urlopen(metrics, timeout=TIMEOUT) as answer:
            assert 'kipwire_high_watermark{topic="http",partition="1"} 5' in answer.read().decode()
        assert _http(f"{control}/brokers/2/stop", {})["state"] == "stopped"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "Traceback" not in err
    # the brokers' processes wrote their directories, the controller's the metadata log, and
    # the orderly end a clean shutdown of the broker still running
    assert (tmp_path / "broker-1" / "http-0").is_dir()
    assert (tmp_path / "broker-1" / CLEAN_SHUTDOWN_FILE).is_file()
    assert any((tmp_path / "controller" / "__cluster_metadata-0").iterdir())


def test_processes_whose_parent_is_killed_end_as_killed_brokers(tmp_path):
    proc = _serve("--brokers", "1", "--processes", "--quiet", "--data-dir", str(tmp_path))
    try:
        assert proc.stdout.readline().strip()
        children = [
            int(pid)
            for pid in subprocess.run(
                ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
            ).stdout.split()
        ]
        assert len(children) == 2
        proc.kill()
        proc.communicate(timeout=TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in children)  # they go with their parent
    finally:
        proc.kill()
    assert (tmp_path / "broker-1").is_dir()
    assert not (tmp_path / "broker-1" / CLEAN_SHUTDOWN_FILE).exists()  # not a clean shutdown


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def _http(url: str, body: dict | None = None) -> dict:
    """GET `url`, or POST `body` to it, and the JSON it answers."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
        return json.loads(answer.read())
