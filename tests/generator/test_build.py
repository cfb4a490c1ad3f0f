"""The generator compiles every upstream schema, and the committed codecs are current."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from kipwire.generator.build import generate, load_schemas

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
UPSTREAM = ["kafka-schemas", "kafka-schemas-2025-01", "kafka-schemas-kafka-python-3.0.12"]
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="../shared (Kafka's reference schemas) is not beside the project"
)


def _upstream_dirs() -> list[list[Path]]:
    groups = []
    for name in UPSTREAM:
        base = SHARED / name
        subdirs = sorted({p.parent for p in base.rglob("*.json")})
        groups.append(subdirs)
    return groups


@needs_shared
def test_every_upstream_schema_file_compiles() -> None:
    compiled = 0
    for dirs in _upstream_dirs():
        for d in dirs:
            files = generate([d])
            modules = [f for f in files if not f.startswith("_")]
            assert len(modules) == len(list(d.glob("*.json")))
            for name, source in files.items():
                compile(source, name, "exec")
            compiled += len(modules)
    assert compiled == 576


@needs_shared
def test_compiled_package_imports_and_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "forkcodecs"
    src = SHARED / "kafka-schemas" / "metadata"
    result = subprocess.run(
        [sys.executable, "-m", "kipwire.generator", "compile", str(src), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        pkg = importlib.import_module("forkcodecs")
        codec = pkg.message("PartitionChangeRecord", 2)
        data = codec.build({"partition_id": 3, "eligible_leader_replicas": [1, 2]})
        assert codec.parse(data)["eligible_leader_replicas"] == [1, 2]
        assert pkg.RECORDS[5] == "PartitionChangeRecord"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("forkcodecs")]:
            del sys.modules[name]


def test_committed_codecs_are_current() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kipwire.generator", "check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_check_names_stale_files(tmp_path: Path) -> None:
    from kipwire.generator.build import stale_files, write

    files = generate([ROOT / "jsonschemas"])
    write(files, tmp_path)
    assert stale_files(files, tmp_path) == []
    (tmp_path / "fetch_request.py").write_text("# edited\n")
    (tmp_path / "leftover.py").write_text("")
    assert stale_files(files, tmp_path) == ["fetch_request.py", "leftover.py"]


def test_project_schemas_load_and_cover_the_union() -> None:
    specs = {s.name: s for s in load_schemas([ROOT / "jsonschemas"])}
    for name, lo, hi in [
        ("ProduceRequest", 0, 13),
        ("FetchRequest", 0, 18),
        ("MetadataRequest", 0, 13),
    ]:
        v = specs[name].valid_versions
        assert (v.lo, v.hi) == (lo, hi)


def test_bad_schema_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "Broken.json").write_text('{"name": "Broken", "type": "request"}')
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kipwire.generator",
            "compile",
            str(tmp_path),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 2
    assert "Broken.json" in result.stderr and "validVersions" in result.stderr


def test_a_renamed_api_key_maps_to_its_newer_name_and_keeps_an_alias() -> None:
    from kipwire import codec
    from kipwire.generator.build import api_table

    table = api_table(load_schemas([ROOT / "jsonschemas"]))
    assert table[codec.ApiKey.LIST_CONFIG_RESOURCES] == (
        "ListConfigResources",
        "ListConfigResourcesRequest",
        "ListConfigResourcesResponse",
    )
    assert codec.ApiKey.LIST_CLIENT_METRICS_RESOURCES is codec.ApiKey.LIST_CONFIG_RESOURCES
    assert codec.ApiKey.LIST_CONFIG_RESOURCES.api_name == "ListConfigResources"
    assert codec.message("ListClientMetricsResourcesRequest", 0).build({}) == codec.message(
        "ListConfigResourcesRequest", 0
    ).build({})
