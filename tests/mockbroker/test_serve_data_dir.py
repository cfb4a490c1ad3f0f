"""`kipwire-broker serve --data-dir DIR` survives a restart: after Ctrl-C every acknowledged
record, its offset and the group's committed offsets are there again; after SIGKILL exactly the
records that were never flushed are gone (flush.messages=1 against a larger value)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from kipwire.mockbroker.broker import segment_files as files

TIMEOUT_S = 30
GROUP = "survivors"


@contextmanager
def _serve(data_dir: Path | list[Path], stop: signal.Signals = signal.SIGINT) -> Iterator[str]:
    """A one-broker `serve --data-dir` (`--config log.dirs=A,B` for a list); yields its
    bootstrap server, then stops it by `stop`."""
    if isinstance(data_dir, list):
        where = ["--config", "log.dirs=" + ",".join(str(d) for d in data_dir)]
    else:
        where = ["--data-dir", str(data_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", "--brokers", "1", "--quiet"] + where,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        bootstrap = proc.stdout.readline().strip()
        assert bootstrap, proc.stderr.read()
        yield bootstrap
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=TIMEOUT_S)
        if stop == signal.SIGINT:
            assert proc.returncode == 0, err
            assert "Traceback" not in err
    finally:
        proc.kill()
        proc.wait(timeout=TIMEOUT_S)


def _create(bootstrap: str, *topics: NewTopic) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics(list(topics))
    admin.close()


def _produce(bootstrap: str, topic: str, count: int, partitions: int = 1) -> dict:
    """`count` records, each acknowledged (acks=all) on its own; {(partition, offset): value}."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    acked = {}
    for i in range(count):
        value = b"%s-%d" % (topic.encode(), i)
        meta = producer.send(topic, value, partition=i % partitions).get(timeout=TIMEOUT_S)
        acked[meta.partition, meta.offset] = value
    producer.close()
    return acked


def _consume_all(bootstrap: str, topic: str, partitions: int = 1) -> dict:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=4000
    )
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    found = {(m.partition, m.offset): m.value for m in consumer}
    consumer.close()
    return found


def test_a_clean_restart_keeps_records_offsets_and_committed_offsets(tmp_path):
    data = tmp_path / "data"
    with _serve(data) as bootstrap:
        _create(bootstrap, NewTopic("events", 2, 1))
        acked = _produce(bootstrap, "events", 40, partitions=2)
        committer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False
        )
        committer.commit({TopicPartition("events", 1): OffsetAndMetadata(15, "", -1)})
        committer.close()
    assert (data / "broker-1" / ".kafka_cleanshutdown").is_file()
    with _serve(data) as bootstrap:
        assert _consume_all(bootstrap, "events", partitions=2) == acked
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False
        )
        committed = consumer.committed(TopicPartition("events", 1))
        consumer.close()
        # the offsets carry on from where they were
        more = _produce(bootstrap, "events", 2, partitions=2)
    assert committed == 15
    assert sorted(more) == [(0, 20), (1, 20)]


def test_a_restart_with_two_log_dirs_keeps_each_replica_in_its_directory(tmp_path):
    entries = [tmp_path / "a", tmp_path / "b"]
    with _serve(entries) as bootstrap:
        _create(bootstrap, NewTopic("halves", 4, 1))
        acked = _produce(bootstrap, "halves", 20, partitions=4)
    held = {
        entry.name: sorted(p.name for p in (entry / "broker-1").iterdir() if p.is_dir())
        for entry in entries
    }
    # the fewest-replicas rule: two partitions in each directory; the controller in the first
    assert sorted(held["a"] + held["b"]) == [f"halves-{i}" for i in range(4)]
    assert [len(held["a"]), len(held["b"])] == [2, 2]
    assert (tmp_path / "a" / "controller").is_dir()
    assert not (tmp_path / "b" / "controller").exists()
    ids = [files.read_meta_properties(e / "broker-1")["directory.id"] for e in entries]
    assert all((e / "broker-1" / ".kafka_cleanshutdown").is_file() for e in entries)
    with _serve(entries) as bootstrap:
        assert _consume_all(bootstrap, "halves", partitions=4) == acked
    assert {
        entry.name: sorted(p.name for p in (entry / "broker-1").iterdir() if p.is_dir())
        for entry in entries
    } == held
    assert [files.read_meta_properties(e / "broker-1")["directory.id"] for e in entries] == ids


def test_an_unclean_stop_loses_exactly_the_unflushed_suffix(tmp_path):
    data = tmp_path / "data"
    with _serve(data, stop=signal.SIGKILL) as bootstrap:
        _create(
            bootstrap,
            NewTopic("synced", 1, 1, topic_configs={"flush.messages": "1"}),
            NewTopic("lossy", 1, 1, topic_configs={"flush.messages": "5"}),
        )
        synced = _produce(bootstrap, "synced", 7)
        lossy = _produce(bootstrap, "lossy", 7)  # flushed at 5 records: 2 are never flushed
    assert not (data / "broker-1" / ".kafka_cleanshutdown").exists()
    with _serve(data) as bootstrap:
        assert _consume_all(bootstrap, "synced") == synced
        assert _consume_all(bootstrap, "lossy") == {k: v for k, v in lossy.items() if k[1] < 5}
        # the lost offsets are written again
        assert list(_produce(bootstrap, "lossy", 1)) == [(0, 5)]


def test_a_data_dir_other_than_log_dirs_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", "--data-dir", str(tmp_path / "a")]
        + ["--config", f"log.dirs={tmp_path / 'b'}"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 2
    assert "--data-dir" in done.stderr and "differ" in done.stderr
    assert "Traceback" not in done.stderr
