"""Kafka 4.4.0's own DumpLogSegments (kafka-dump-log.sh) reads a segment the mock wrote: every
batch and record offset as the mock stored them, the offset and time index entries as the mock
computed them, and no index mismatch. Skipped with the reason where java or the jars are
missing (tests/realkafka's cache of Kafka's jars)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaProducer

from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.broker import segment_files as files

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "realkafka"))
import kafka_dist  # noqa: E402

pytestmark = pytest.mark.requires("java")  # Kafka's own Java code

DUMP = "org.apache.kafka.tools.DumpLogSegments"
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def kafka() -> kafka_dist.KafkaDist:
    try:
        return kafka_dist.ensure_kafka()
    except kafka_dist.KafkaUnavailable as exc:
        pytest.skip(f"real Kafka unavailable: {exc}")


def _write_segment(tmp_path: Path) -> tuple[Path, list[tuple[int, int]], list[int]]:
    """A topic's segment written by the mock: (its path without suffix, the batches' (base,
    last) offsets, every record offset)."""
    with MockCluster(brokers=1, config={"log.dirs": str(tmp_path)}) as cluster:
        cluster.create_topic("dumped")
        for compression in (None, "gzip"):
            producer = KafkaProducer(
                bootstrap_servers=cluster.bootstrap_servers,
                compression_type=compression,
                batch_size=1500,
                linger_ms=2,
            )
            for i in range(150):
                producer.send("dumped", b"value-%04d-" % i + b"x" * 60, partition=0)
            producer.flush()
            producer.close()
        log = cluster.cluster.nodes[1].logs["dumped", 0]
        batches = [(b.base_offset, b.last_offset) for b in log.batches]
    stem = tmp_path / "broker-1" / "dumped-0" / files.segment_name(0)
    return stem, batches, list(range(batches[-1][1] + 1))


def test_kafkas_dump_log_segments_reads_the_mocks_segment(kafka, tmp_path):
    stem, batches, offsets = _write_segment(tmp_path)
    paths = [str(stem) + suffix for suffix in (files.LOG, files.INDEX, files.TIME_INDEX)]
    done = subprocess.run(
        [kafka.java, "-cp", kafka.classpath, DUMP, "--deep-iteration", "--files", ",".join(paths)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "mismatch" not in out.lower() and "mismatch" not in done.stderr.lower()
    log_part, index_part, time_part = re.split(r"^Dumping .*$", out, flags=re.M)[1:]
    dumped_batches = [
        (int(b), int(last))
        for b, last in re.findall(r"^baseOffset: (\d+) lastOffset: (\d+)", log_part, re.M)
    ]
    assert dumped_batches == batches
    assert [int(o) for o in re.findall(r"^\| offset: (\d+)", log_part, re.M)] == offsets
    assert "isvalid: false" not in log_part
    index = files.read_index(Path(paths[1]).read_bytes())
    assert len(index) > 1  # the segment is large enough for sparse entries
    dumped_index = re.findall(r"^offset: (\d+) position: (\d+)", index_part, re.M)
    assert [(int(o), int(p)) for o, p in dumped_index] == [(rel, pos) for rel, pos in index]
    times = files.read_time_index(Path(paths[2]).read_bytes())
    dumped_times = re.findall(r"^timestamp: (\d+) offset: (\d+)", time_part, re.M)
    assert [(int(t), int(o)) for t, o in dumped_times] == times
