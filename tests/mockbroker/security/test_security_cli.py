"""`kipwire-broker serve` with the security flags: the CA and a client configuration printed
(the password left out), users split at their first colon, bad flags exit 2."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from confluent_kafka.admin import AdminClient

TIMEOUT = 20


def _serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", "--quiet", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_sasl_ssl_prints_the_ca_and_a_client_config():
    proc = _serve(
        "--brokers",
        "1",
        "--security-protocol",
        "SASL_SSL",
        "--sasl-mechanism",
        "PLAIN",
        "--sasl-mechanism",
        "SCRAM-SHA-256",
        "--user",
        "alice:pass:with:colons",
        "--super-user",
        "alice",
        "--authorizer",
    )
    try:
        bootstrap = proc.stdout.readline().strip()
        ca = proc.stdout.readline().strip().removeprefix("ssl.ca.location: ")
        config = json.loads(proc.stdout.readline().removeprefix("client config: "))
        assert Path(ca).read_text().startswith("-----BEGIN CERTIFICATE-----")
        assert config["bootstrap.servers"] == bootstrap
        assert config["sasl.username"] == "alice"
        assert config["sasl.password"] == "<the password of alice>"
        config["sasl.password"] = "pass:with:colons"
        assert AdminClient(config).list_topics(timeout=10).brokers
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "pass:with:colons" not in err


def test_bad_security_flags_exit_2():
    for args, message in (
        (["--user", "nocolon"], "--user takes NAME:PASSWORD"),
        (["--sasl-mechanism", "GSSAPI"], "sasl_mechanisms must be some of"),
        (["--ssl-client-auth", "required"], "needs an SSL protocol"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "kipwire.mockbroker", "serve", *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert done.returncode == 2, args
        assert message in done.stderr and "Traceback" not in done.stderr
