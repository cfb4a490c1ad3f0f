"""Logs on disk: what a flush writes, what a restart loads, and how the files follow the log."""

from __future__ import annotations

import shutil
import uuid

import pytest

from kipwire.codec import ErrorCode
from kipwire.codec.records import build_batch, iter_batches
from kipwire.mockbroker.broker import segment_files as files
from kipwire.mockbroker.broker.log import LogError
from kipwire.mockbroker.broker.log_config import LogConfig
from kipwire.mockbroker.broker.log_dirs import LogDirError, LogDirs
from kipwire.mockbroker.broker.replica_dirs import ReplicaDirs

TOPIC_ID = uuid.UUID("7b2ca0f1-83b1-4f4c-9d2a-0c6f2d7b2a11")


def _batch(n: int, *, value: bytes = b"v", pid: int = -1, seq: int = -1) -> bytes:
    records = [{"key": b"k%d" % i, "value": value, "timestamp": 1000 + i} for i in range(n)]
    return build_batch(
        records, producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq
    )


def _log_dirs(tmp_path) -> LogDirs:
    dirs = LogDirs(str(tmp_path), 1, "cluster-a")
    dirs.format()
    return dirs


def _reload(tmp_path) -> dict:
    return LogDirs(str(tmp_path), 1, "cluster-a").load_logs(lambda topic: LogConfig())


def _records(log) -> list[int]:
    return [r.offset for b in log.batches for r in next(iter_batches(b.data)).records]


def test_only_flushed_batches_reach_the_files_and_a_restart_loads_them(tmp_path):
    log = _log_dirs(tmp_path).new_log("t", 0, TOPIC_ID, LogConfig())
    directory = tmp_path / "broker-1" / "t-0"
    assert files.read_partition_metadata(directory) == TOPIC_ID
    log.append(_batch(3))
    log.append(_batch(2))
    assert not (directory / "00000000000000000000.log").exists()
    log.flush()
    log.append(_batch(4))  # never flushed: an unclean stop loses it
    on_disk = (directory / "00000000000000000000.log").read_bytes()
    assert on_disk == b"".join(b.data for b in list(log.batches)[:2])
    (loaded,) = _reload(tmp_path).values()
    assert loaded.end_offset == loaded.flushed_offset == 5
    assert _records(loaded) == [0, 1, 2, 3, 4]
    assert [b.data for b in loaded.batches] == [b.data for b in list(log.batches)[:2]]


def test_segments_roll_into_their_own_files_and_producer_state_survives(tmp_path):
    config = LogConfig(segment_bytes=200)
    log = _log_dirs(tmp_path).new_log("t", 0, TOPIC_ID, config)
    for seq in range(0, 12, 3):
        log.append(_batch(3, value=b"x" * 40, pid=7, seq=seq))
    log.flush()
    directory = tmp_path / "broker-1" / "t-0"
    assert files.segment_bases(directory) == [s.base_offset for s in log.segments]
    assert len(log.segments) > 1
    (loaded,) = _reload(tmp_path).values()
    assert [s.base_offset for s in loaded.segments] == [s.base_offset for s in log.segments]
    assert loaded.end_offset == 12
    # the reloaded log knows producer 7's last sequence: a retried batch is a duplicate
    assert loaded.append(_batch(3, value=b"x" * 40, pid=7, seq=9)).base_offset == 9
    assert loaded.end_offset == 12


def test_truncation_deletion_and_compaction_follow_the_log_in_its_files(tmp_path):
    dirs = _log_dirs(tmp_path)
    log = dirs.new_log("t", 0, TOPIC_ID, LogConfig(segment_bytes=150))
    for _ in range(8):
        log.append(_batch(1, value=b"y" * 60))
    log.flush()
    directory = tmp_path / "broker-1" / "t-0"
    bases = files.segment_bases(directory)
    assert len(bases) >= 3
    log.truncate_to(bases[-1] + 0)  # the last segment goes with its file
    assert files.segment_bases(directory) == bases[:-1]
    log.high_watermark = log.end_offset
    assert log.delete_segments(1) == bases[1]  # retention: the first segment's files go
    assert files.segment_bases(directory) == bases[1:-1]
    first = log.segments[0]
    kept = first.batches[-1:]
    first.replace(kept)  # compaction kept one batch of the segment
    assert (directory / (files.segment_name(first.base_offset) + files.LOG)).read_bytes() == (
        kept[0].data
    )
    dirs.write_checkpoints({("t", 0): log})
    (loaded,) = _reload(tmp_path).values()
    assert loaded.log_start_offset == bases[1]
    assert loaded.end_offset == log.end_offset
    assert [b.base_offset for b in loaded.batches] == [b.base_offset for b in log.batches]


def test_delete_records_start_offset_and_high_watermark_come_back_from_the_checkpoints(tmp_path):
    dirs = _log_dirs(tmp_path)
    log = dirs.new_log("t", 0, TOPIC_ID, LogConfig())
    for _ in range(5):
        log.append(_batch(2))
    log.flush()
    log.high_watermark = 8
    assert log.delete_before(3) == 3
    dirs.write_checkpoints({("t", 0): log})
    assert (tmp_path / "broker-1" / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 3\n"
    (loaded,) = _reload(tmp_path).values()
    assert (loaded.log_start_offset, loaded.high_watermark, loaded.end_offset) == (3, 8, 10)
    with pytest.raises(LogError) as refused:
        loaded.read(1, 1000)
    assert refused.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_new_log_replaces_a_deleted_topics_leftovers(tmp_path):
    dirs = _log_dirs(tmp_path)
    old = dirs.new_log("t", 0, TOPIC_ID, LogConfig())
    old.append(_batch(3))
    old.flush()
    dirs.remove_log("t", 0)
    assert not (tmp_path / "broker-1" / "t-0").exists()
    new = dirs.new_log("t", 0, uuid.uuid4(), LogConfig())
    new.append(_batch(1))
    new.flush()
    (loaded,) = _reload(tmp_path).values()
    assert loaded.end_offset == 1


def test_another_clusters_log_directory_is_refused(tmp_path):
    _log_dirs(tmp_path)
    with pytest.raises(LogDirError, match="cluster-a"):
        LogDirs(str(tmp_path), 1, "cluster-b").format()
    meta = files.read_meta_properties(tmp_path / "broker-1")
    assert (meta["node.id"], meta["cluster.id"], meta["version"]) == ("1", "cluster-a", "1")


def _two_dirs(tmp_path) -> str:
    return f"{tmp_path}/a,{tmp_path}/b"


def test_each_log_dirs_entry_is_a_directory_with_its_own_id_kept_across_restarts(tmp_path):
    dirs = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    dirs.format()
    assert not (tmp_path / "a,b").exists()
    ids = [files.read_meta_properties(p)["directory.id"] for p in dirs.paths]
    assert dirs.paths == [tmp_path / "a" / "broker-1", tmp_path / "b" / "broker-1"]
    assert len(set(ids)) == 2
    again = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    again.format()
    assert [files.read_meta_properties(p)["directory.id"] for p in again.paths] == ids
    assert [d.directory_id for d in ReplicaDirs(_two_dirs(tmp_path), 1).dirs] == [
        files.parse_uuid(i) for i in ids
    ]


def test_logs_live_in_the_directory_given_and_load_back_from_there(tmp_path):
    dirs = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    dirs.format()
    first = dirs.new_log("t", 0, TOPIC_ID, LogConfig(), str(dirs.paths[0]))
    second = dirs.new_log("t", 1, TOPIC_ID, LogConfig(), str(dirs.paths[1]))
    first.append(_batch(2))
    second.append(_batch(3))
    first.flush()
    second.flush()
    first.high_watermark, second.high_watermark = 2, 3
    dirs.write_checkpoints({("t", 0): first, ("t", 1): second})
    assert (dirs.paths[0] / "replication-offset-checkpoint").read_text() == "0\n1\nt 0 2\n"
    assert (dirs.paths[1] / "replication-offset-checkpoint").read_text() == "0\n1\nt 1 3\n"
    again = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    loaded = again.load_logs(lambda topic: LogConfig())
    assert again.loaded_from == {("t", 0): dirs.paths[0], ("t", 1): dirs.paths[1]}
    assert (loaded["t", 0].end_offset, loaded["t", 1].end_offset) == (2, 3)
    assert (loaded["t", 0].high_watermark, loaded["t", 1].high_watermark) == (2, 3)


def test_a_moved_log_takes_its_files_and_writes_the_next_ones_there(tmp_path):
    dirs = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    dirs.format()
    log = dirs.new_log("t", 0, TOPIC_ID, LogConfig(segment_bytes=150), str(dirs.paths[0]))
    for _ in range(3):
        log.append(_batch(1, value=b"z" * 60))
    log.flush()
    log.append(_batch(1, value=b"z" * 60))  # not flushed yet: it goes to the new place
    size = dirs.size_on_disk("t", 0)
    dirs.move_log("t", 0, str(dirs.paths[1]))
    assert not (dirs.paths[0] / "t-0").exists()
    assert [p.name for p in dirs.paths[1].iterdir() if p.is_dir()] == ["t-0"]
    assert dirs.size_on_disk("t", 0) == size > 0
    log.flush()
    log.append(_batch(1, value=b"z" * 60))
    log.flush()
    assert dirs.size_on_disk("t", 0) > size
    assert files.read_partition_metadata(dirs.paths[1] / "t-0") == TOPIC_ID
    again = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    (loaded,) = again.load_logs(lambda topic: LogConfig()).values()
    assert again.loaded_from == {("t", 0): dirs.paths[1]}
    assert [b.data for b in loaded.batches] == [b.data for b in log.batches]


def test_a_clean_shutdown_counts_only_when_every_directory_has_its_file(tmp_path):
    dirs = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    dirs.write_clean_shutdown(9)
    assert dirs.take_previous_epoch() == 9
    assert not any((p / ".kafka_cleanshutdown").exists() for p in dirs.paths)
    dirs.write_clean_shutdown(9)
    (dirs.paths[1] / ".kafka_cleanshutdown").unlink()
    assert dirs.take_previous_epoch() == -1
    assert not (dirs.paths[0] / ".kafka_cleanshutdown").exists()


def test_a_move_cut_short_leaves_one_copy_after_a_restart(tmp_path):
    dirs = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    dirs.format()
    log = dirs.new_log("t", 0, TOPIC_ID, LogConfig(), str(dirs.paths[0]))
    log.append(_batch(2))
    log.flush()
    source = dirs.paths[0] / "t-0"
    partial = dirs.paths[1] / "t-0.0123456789abcdef0123456789abcdef-future"
    partial.mkdir()
    (partial / "00000000000000000000.log").write_bytes(b"cut")
    again = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    (loaded,) = again.load_logs(lambda topic: LogConfig()).values()
    assert not partial.exists()
    assert again.loaded_from == {("t", 0): dirs.paths[0]}
    # copied and renamed, the source not deleted yet: the copy in the first directory stays
    shutil.copytree(source, dirs.paths[1] / "t-0")
    again = LogDirs(_two_dirs(tmp_path), 1, "cluster-a")
    (loaded,) = again.load_logs(lambda topic: LogConfig()).values()
    assert loaded.end_offset == 2
    assert source.is_dir() and not (dirs.paths[1] / "t-0").exists()
