"""Extraction on Spark gives what the local extraction gives, and a replay from it means the
same (local[2]; skipped without Java)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from kipwire.captures import replay
from kipwire.captures.replaying.extract import Extracted, extract
from kipwire.mockbroker import MockCluster

pytest.importorskip("pyspark")
pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java"),
    pytest.mark.requires("java"),
]


def _shape(found: Extracted) -> tuple:
    conns = [
        (c.uid, c.client, c.server, [(e.frame, e.response, e.ts_ns) for e in c.exchanges])
        for c in found.connections
    ]
    rows = Counter((r.reason, r.requests) for r in found.not_replayed)
    return conns, rows


@pytest.fixture(scope="module")
def spark():
    from kipwire.captures.engines.spark_session import session

    s = session("local[2]", app="kipwire-replay-test")
    yield s
    s.stop()


def test_spark_extracts_what_the_local_extraction_does(
    spark, story: tuple[Path, dict], tmp_path: Path
) -> None:
    from kipwire.captures.replaying.spark_extract import extract_on_spark

    capture, _ = story
    second = tmp_path / "again.pcapng"
    shutil.copy(capture, second)  # a second input: two read partitions, so the shuffle runs
    local = extract([capture])
    assert _shape(extract_on_spark(spark, [str(capture)])) == _shape(local)
    both = extract_on_spark(spark, [str(capture), str(second)])
    assert len(both.connections) == 2 * len(local.connections)
    assert sum(len(c.exchanges) for c in both.connections) == 2 * sum(
        len(c.exchanges) for c in local.connections
    )


def test_a_replay_cut_on_spark_means_the_same(
    spark, story: tuple[Path, dict], tmp_path: Path
) -> None:
    capture, _ = story
    with MockCluster(brokers=3) as target:
        target.create_topic("orders", 2, 3)
        result = replay(
            [capture], bootstrap=target.bootstrap_servers, out=tmp_path / "out", engine="spark"
        )
    assert result.semantic_differences == []
    assert result.connections >= 5
