"""Full collections paced while a cluster runs: the generation-2 threshold is raised for as long
as any cluster runs in the process, and the process's own setting comes back after the last."""

from __future__ import annotations

import gc

import pytest

from kipwire.mockbroker.cluster import open_cluster
from kipwire.mockbroker.gc_pacing import FULL_COLLECTION_THRESHOLD, paced_full_collections


def test_nested_blocks_raise_once_and_restore_the_callers_thresholds():
    saved = gc.get_threshold()
    gc.set_threshold(500, 7, 12)
    try:
        with paced_full_collections():
            assert gc.get_threshold() == (500, 7, FULL_COLLECTION_THRESHOLD)
            with paced_full_collections():
                assert gc.get_threshold()[2] == FULL_COLLECTION_THRESHOLD
            assert gc.get_threshold()[2] == FULL_COLLECTION_THRESHOLD
        assert gc.get_threshold() == (500, 7, 12)
    finally:
        gc.set_threshold(*saved)


@pytest.mark.trio
async def test_a_running_cluster_paces_full_collections():
    before = gc.get_threshold()
    async with open_cluster(brokers=1):
        assert gc.get_threshold()[2] == max(before[2], FULL_COLLECTION_THRESHOLD)
    assert gc.get_threshold() == before
