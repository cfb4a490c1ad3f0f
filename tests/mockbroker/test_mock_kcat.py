"""kcat (librdkafka's command-line client) against the mock cluster; skipped without kcat."""

from __future__ import annotations

import shutil
import subprocess

import pytest

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat is not installed (Debian: kcat)")
TIMEOUT = 30


def _kcat(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [KCAT, *args], input=stdin, capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    return done.stdout


def test_kcat_lists_metadata_produces_and_consumes(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=2, replication_factor=3)
    listing = _kcat("-b", cluster.bootstrap_servers, "-L", "-t", topic_name)
    assert "3 brokers" in listing
    assert f'topic "{topic_name}" with 2 partitions' in listing
    lines = [f"line-{i}" for i in range(50)]
    _kcat(
        "-b",
        cluster.bootstrap_servers,
        "-P",
        "-t",
        topic_name,
        "-z",
        "lz4",
        stdin="\n".join(lines) + "\n",
    )
    out = _kcat(
        "-b", cluster.bootstrap_servers, "-C", "-t", topic_name, "-o", "beginning", "-e", "-q"
    )
    assert sorted(out.split()) == sorted(lines)
