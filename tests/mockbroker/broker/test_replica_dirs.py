"""Where a broker places its replicas among its log directories (LogManager#getOrCreateLog's
order: the dir AlterReplicaLogDirs asked for, the recorded one, the one with the fewest replicas)
and what it reports to the controller."""

from __future__ import annotations

import base64
import uuid

from kipwire.mockbroker.broker.metadata_image import MetadataImage
from kipwire.mockbroker.broker.replica_dirs import ReplicaDirs, future_name_too_long
from kipwire.mockbroker.controller.directories import UNASSIGNED

TOPIC_ID = uuid.UUID(int=77)


def image_with(partitions: dict[int, tuple[list[int], list[uuid.UUID]]]) -> MetadataImage:
    image = MetadataImage()
    image.replay(0, "TopicRecord", {"name": "t", "topic_id": TOPIC_ID})
    for index, (replicas, dirs) in partitions.items():
        image.replay(
            1,
            "PartitionRecord",
            {
                "partition_id": index,
                "topic_id": TOPIC_ID,
                "replicas": replicas,
                "isr": replicas,
                "leader": replicas[0],
                "leader_epoch": 0,
                "partition_epoch": 0,
                "directories": dirs,
            },
        )
    return image


def test_dirs_come_from_log_dirs_or_memory(tmp_path) -> None:
    on_disk = ReplicaDirs(f" {tmp_path}/a , {tmp_path}/b ", 3)
    assert [d.path for d in on_disk.dirs] == [f"{tmp_path}/a/broker-3", f"{tmp_path}/b/broker-3"]
    assert all(d.on_disk and d.directory_id.int >= 100 for d in on_disk.dirs)
    assert len(set(on_disk.ids())) == 2
    memory = ReplicaDirs(None, 3)
    assert [(d.path, d.on_disk, d.space()) for d in memory.dirs] == [
        ("/kipwire-memory/broker-3", False, (-1, -1))
    ]


def test_unassigned_replicas_go_to_the_dir_with_fewest_and_are_reported(tmp_path) -> None:
    dirs = ReplicaDirs(f"{tmp_path}/a,{tmp_path}/b", 1)
    image = image_with({i: ([1], [UNASSIGNED]) for i in range(3)})
    dirs.replayed(image, 1, {("t", i) for i in range(3)})
    a, b = dirs.dirs
    assert [dirs.dir_of("t", i) for i in range(3)] == [a, b, a]
    assert dirs.take_unreported() == {("t", 0): a, ("t", 1): b, ("t", 2): a}


def test_the_recorded_dir_is_kept_and_a_preferred_one_wins(tmp_path) -> None:
    dirs = ReplicaDirs(f"{tmp_path}/a,{tmp_path}/b", 1)
    a, b = dirs.dirs
    dirs.prefer("t", 1, a)
    image = image_with({0: ([2, 1], [UNASSIGNED, b.directory_id]), 1: ([1], [b.directory_id])})
    dirs.replayed(image, 1, {("t", 0), ("t", 1)})
    assert (dirs.dir_of("t", 0), dirs.dir_of("t", 1)) == (b, a)
    # only the replica not where the metadata says is reported
    assert dirs.take_unreported() == {("t", 1): a}


def test_a_lost_replica_is_forgotten_and_a_move_is_reported(tmp_path) -> None:
    dirs = ReplicaDirs(f"{tmp_path}/a,{tmp_path}/b", 1)
    a, b = dirs.dirs
    image = image_with({0: ([1], [a.directory_id]), 1: ([1], [a.directory_id])})
    dirs.replayed(image, 1, {("t", 0), ("t", 1)})
    assert dirs.take_unreported() == {}
    dirs.move("t", 0, b)
    assert dirs.replicas_in(b) == [("t", 0)]
    image.replay(
        2, "PartitionChangeRecord", {"topic_id": TOPIC_ID, "partition_id": 1, "replicas": [2]}
    )
    dirs.replayed(image, 1, {("t", 1)})
    assert not dirs.hosts("t", 1)
    assert dirs.take_unreported() == {("t", 0): b}
    # a send that failed is queued again, unless the replica moved since
    dirs.requeue({("t", 0): b})
    dirs.move("t", 0, a)
    dirs.requeue({("t", 0): b})
    assert dirs.take_unreported() == {("t", 0): a}


def test_records_without_directories_are_not_reported(tmp_path) -> None:
    dirs = ReplicaDirs(f"{tmp_path}/a,{tmp_path}/b", 1)
    dirs.replayed(image_with({0: ([1], [])}), 1, {("t", 0)})
    assert dirs.hosts("t", 0) and dirs.take_unreported() == {}


def test_the_future_log_name_limit() -> None:
    # `<topic>-<n>.<32 hex>-future` within 255 bytes (KAFKA-4893)
    assert not future_name_too_long("t" * 213, 0)
    assert future_name_too_long("t" * 214, 0)


def test_a_directory_keeps_the_id_its_meta_properties_holds(tmp_path) -> None:
    kept = uuid.UUID("8f1c0c1e-5d3a-4b7e-9a55-0d9b7e1c2a3f")
    broker_dir = tmp_path / "a" / "broker-1"
    broker_dir.mkdir(parents=True)
    encoded = base64.urlsafe_b64encode(kept.bytes).decode().rstrip("=")
    (broker_dir / "meta.properties").write_text(
        f"#\nnode.id=1\ndirectory.id={encoded}\nversion=1\ncluster.id=c\n"
    )
    dirs = ReplicaDirs(f"{tmp_path}/a,{tmp_path}/b", 1)
    assert dirs.dirs[0].directory_id == kept  # as Kafka reads it back after a restart
    assert dirs.dirs[1].directory_id != kept
    (broker_dir / "meta.properties").write_text("directory.id=not-base64!\n")
    assert ReplicaDirs(f"{tmp_path}/a", 1).dirs[0].directory_id != kept
