"""Decode task planning: connections packed largest first, salts that Spark's hash places."""

from __future__ import annotations

import pytest

from kipwire.captures.engines.balance import murmur3_long, plan_tasks, salts


def test_eight_equal_connections_get_a_task_each() -> None:
    plan = plan_tasks([(f"c{i}", 100) for i in range(8)])
    assert sorted(plan.values()) == list(range(8))


def test_tasks_are_even_and_the_heaviest_comes_first() -> None:
    weights = [("a", 90), ("b", 60), ("c", 50), ("d", 40), ("e", 30), ("f", 30)]
    plan = plan_tasks(weights, max_tasks=2)
    loads = [0, 0]
    for key, w in weights:
        loads[plan[key]] += w
    # largest first onto the lightest task: within 4/3 of the best split (150/150), heaviest first
    assert loads == [160, 140]
    plan = plan_tasks([("small", 1), ("big", 1000), ("mid", 10)], max_tasks=2)
    assert plan["big"] == 0  # task 0 starts first: it must carry the most


def test_no_connections_no_tasks() -> None:
    assert plan_tasks([]) == {}


def test_murmur3_of_known_longs() -> None:
    """Values Spark 4's `F.hash` gives for these longs (checked against a session)."""
    assert murmur3_long(0) == -1670924195
    assert murmur3_long(1) == -1712319331
    assert murmur3_long(-1) == -939490007
    assert murmur3_long(42) == 1316951768
    assert murmur3_long(2**63 - 1) == -1604625029


@pytest.mark.parametrize("tasks", [1, 2, 7, 64, 256])
def test_salts_land_on_their_own_task(tasks: int) -> None:
    found = salts(tasks)
    assert [murmur3_long(v) % tasks for v in found] == list(range(tasks))


def test_a_lone_large_pcap_is_cut_into_ranges_for_every_slot(tmp_path) -> None:
    """One 34 MB file on two slots: four ranges (at least two per slot), none under 4 MiB."""
    pytest.importorskip("pyspark")
    from kipwire.captures.engines.spark_job import MIN_SPLIT_BYTES, task_split_bytes
    from kipwire.captures.reading.inputs import CaptureFile

    def sized(name: str, size: int) -> CaptureFile:
        path = tmp_path / name
        with open(path, "wb") as f:
            f.truncate(size)  # sparse: only the size matters
        return CaptureFile(name, str(path), 0)

    big = [sized("big.pcap", 34_000_000)]
    assert task_split_bytes(big, 64 << 20, slots=2) == 8_500_000
    assert task_split_bytes(big, 1 << 20, slots=2) == 1 << 20  # a smaller --split-mb stays
    small = [sized("small.pcap", 3_000_000)]
    assert task_split_bytes(small, 64 << 20, slots=8) == MIN_SPLIT_BYTES
    many = [sized(f"r{i}.pcap", 100_000_000) for i in range(10)]
    assert task_split_bytes(many, 64 << 20, slots=2) == 64 << 20  # enough whole files


def test_the_reader_reads_options_as_spark_hands_them_over(tmp_path) -> None:
    """Spark lower-cases option names: `splitBytes` must still cut the file into ranges."""
    pytest.importorskip("pyspark")
    from pyspark.sql.datasource import CaseInsensitiveDict

    from kipwire.captures.engines.spark_datasource import KafkaCaptureReader

    given = CaseInsensitiveDict({"paths": "[]", "splitBytes": "4096", "brokerPorts": "[9093]"})
    reader = KafkaCaptureReader(dict(given))
    assert reader.split_bytes == 4096
    assert reader.broker_ports == (9093,)
    assert reader.with_body_json


def test_one_slot_keeps_the_split_size(tmp_path) -> None:
    """With one task slot no other slot waits: a large file is not cut for balance."""
    pytest.importorskip("pyspark")
    from kipwire.captures.engines.spark_job import task_split_bytes
    from kipwire.captures.reading.inputs import CaptureFile

    path = tmp_path / "big.pcap"
    with open(path, "wb") as f:
        f.truncate(34_000_000)
    assert task_split_bytes([CaptureFile("big.pcap", str(path), 0)], 64 << 20, slots=1) == 64 << 20


def test_a_rotated_set_read_whole_decodes_as_the_local_engine(tmp_path) -> None:
    """`wholeSets`: a set is one partition of both files, its rows those of `run_local`."""
    pytest.importorskip("pyspark")
    import json

    import pyarrow.parquet as pq
    from kafka_capture_kit import write_rotated

    from kipwire.captures.engines.local import run_local
    from kipwire.captures.engines.spark_datasource import KafkaCaptureReader, plan_partitions
    from kipwire.captures.engines.table_files import finish_tables, prepare_tables
    from kipwire.captures.reading.inputs import expand_inputs

    write_rotated(tmp_path / "in", exchanges=6)
    files = expand_inputs([str(tmp_path / "in")])
    assert len(files) == 2
    apart = plan_partitions(files, 64 << 20)
    assert [p.whole for p in apart] == [False, False]
    assert plan_partitions(files, 1000, whole_sets=True)[0].whole is False  # over splitBytes
    (part,) = plan_partitions(files, 64 << 20, whole_sets=True)
    assert part.whole and part.members == tuple(files)
    out = tmp_path / "spark"
    prepare_tables(str(out))
    listed = [[f.name, f.path, f.ord, f.group, f.kind, f.peer] for f in files]
    opts = {"files": json.dumps(listed), "out": str(out), "capture": "c", "wholeSets": "true"}
    reader = KafkaCaptureReader(opts)
    assert list(reader.read(reader.partitions()[0])) == []
    finish_tables(str(out))
    run_local([str(tmp_path / "in")], tmp_path / "local", capture="c")
    for table in ("pdus", "pairs", "connections"):
        got = pq.read_table(out / table).to_pylist()
        assert got and got == pq.read_table(tmp_path / "local" / table).to_pylist(), table


@pytest.mark.parametrize(
    ("module", "absent"),
    [
        (
            "spark_datasource",
            ("kipwire.captures.engines.fragment_decode", "kipwire.codec", "pandas"),
        ),
        ("spark_job", ("pandas", "pyarrow.dataset")),
    ],
)
def test_the_spark_modules_import_light(module: str, absent: tuple[str, ...]) -> None:
    """Fresh Spark workers unpickle the data source only for its schema and partitions."""
    pytest.importorskip("pyspark")
    import ast
    import subprocess
    import sys

    probe = f"import sys, kipwire.captures.engines.{module}; print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stdout))
    assert f"kipwire.captures.engines.{module}" in loaded
    assert not loaded & set(absent)
