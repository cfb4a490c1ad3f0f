"""The controller's metadata log on disk: written as record batches of framed records, read back
and replayed to the same state; a torn tail is cut and the records before it replay."""

from __future__ import annotations

from controller_kit import alter_partition, replay_cluster

from kipwire.codec.records import iter_batches
from kipwire.mockbroker.broker import segment_files as files
from kipwire.mockbroker.controller import Controller
from kipwire.mockbroker.controller.metadata_files import MetadataLogFiles


def _fresh(ctl: Controller) -> Controller:
    return Controller(semantics=ctl.semantics, cluster_id=ctl.cluster_id)


def test_the_metadata_log_is_written_as_it_grows_and_replays_to_the_same_state(tmp_path):
    ctl = replay_cluster(isr=[1, 2, 3], min_isr=2)
    disk = MetadataLogFiles(str(tmp_path))
    assert disk.directory == tmp_path / "controller" / "__cluster_metadata-0"
    disk.sync(ctl)
    alter_partition(ctl, [1, 2])
    ctl.fence(3)
    disk.sync(ctl)
    disk.sync(ctl)  # nothing new: nothing written
    segment = (disk.directory / (files.segment_name(0) + files.LOG)).read_bytes()
    batches = list(iter_batches(segment))
    assert len(batches) == 2 and batches[-1].last_offset == ctl.end_offset - 1
    assert [bytes(r.value) for b in batches for r in b.records] == [e.data for e in ctl.log]
    again = _fresh(ctl)
    for data in MetadataLogFiles(str(tmp_path)).load():
        again.append_bytes(data)
    assert again.state.snapshot() == ctl.state.snapshot()
    assert again.end_offset == ctl.end_offset


def test_a_torn_write_loses_only_the_last_batch(tmp_path):
    ctl = replay_cluster(isr=[1, 2, 3], min_isr=2)
    disk = MetadataLogFiles(str(tmp_path))
    disk.sync(ctl)
    first = ctl.end_offset
    ctl.fence(3)
    disk.sync(ctl)
    path = disk.directory / (files.segment_name(0) + files.LOG)
    path.write_bytes(path.read_bytes()[:-5])
    loaded = MetadataLogFiles(str(tmp_path))
    assert len(loaded.load()) == first
    assert loaded.store.end_offset == first
