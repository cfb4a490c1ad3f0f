"""diff-upstream: what a Kafka release's schema files change against the project's schemas."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kipwire.generator.diff_upstream import compare, main, read_project, read_upstream

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
KAFKA_44 = SHARED / "kafka-schemas-4.4.0"
needs_shared = pytest.mark.skipif(
    not KAFKA_44.is_dir(), reason=f"Kafka's schema files are not available ({KAFKA_44})"
)


def _doc(name: str, valid: str, fields: list[dict], key: int = 1000, **extra) -> dict:
    kind = "response" if name.endswith("Response") else "request"
    return {"apiKey": key, "type": kind, "name": name, "validVersions": valid,
            "flexibleVersions": "none", "fields": fields, **extra}  # fmt: skip


def _f(name: str, type: str = "int32", versions: str = "0+") -> dict:
    return {"name": name, "type": type, "versions": versions}


def _write(folder: Path, *docs: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for d in docs:
        (folder / f"{d['name']}.json").write_text(json.dumps(d), encoding="utf-8")
    return folder


def test_each_kind_of_difference_is_reported(tmp_path: Path) -> None:
    ours = _write(
        tmp_path / "ours",
        _doc("ARequest", "0-1", [_f("X")], key=5),
        _doc("BRequest", "0", [_f("Old")], key=6),
        _doc("CRequest", "0-2", [_f("X")], key=7),
    )
    theirs = _write(
        tmp_path / "theirs",
        _doc("ARequest", "1-2", [_f("X"), _f("Y", versions="2+")], key=5),
        _doc("BRequest", "0", [_f("New")], key=6),
        _doc("CRequest", "0-2", [_f("X", "int64")], key=8),
        _doc("DRequest", "0", [], key=7),
    )
    report = compare(read_upstream(theirs), read_project(ours))
    assert report.new_versions == [
        "ARequest v2: fields of message: ['X'] vs ['X', 'Y']",
    ]
    assert report.dropped == ["ARequest v0"]
    assert report.renamed == ["BRequest v0: Old is New upstream"]
    assert report.changed == ["CRequest v0: X: type 'int32' vs 'int64'", *report.changed[1:]]
    assert len(report.changed) == 3
    assert report.renumbered == [
        "7: C in the project, D upstream",
        "CRequest: apiKey 7 in the project, 8 upstream",
    ]
    assert report.new_keys == ["8 C"]
    assert report.new_messages == ["DRequest (request, apiKey 7, v0)"]
    assert main([str(ours), "--against", str(ours)]) == 0
    assert main([str(theirs), "--against", str(ours)]) == 1


def test_a_jar_is_read_like_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ours = _write(tmp_path / "ours", _doc("ARequest", "0", [_f("X")]))
    jar = tmp_path / "kafka-clients-9.9.9.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("common/message/ARequest.json", json.dumps(_doc("ARequest", "0-1", [_f("X")])))
        z.writestr("META-INF/other.json", "{ not a schema")
    assert main([str(jar), "--against", str(ours)]) == 1
    assert "new versions (1):\n  ARequest v1: the same bytes as v0\n" in capsys.readouterr().out


def test_unreadable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert main([str(tmp_path / "notes.txt")]) == 2
    assert "neither a folder nor a jar" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 2  # a folder with no schema file


@needs_shared
def test_the_project_is_complete_for_kafka_44() -> None:
    report = compare(read_upstream(KAFKA_44), read_project(ROOT / "jsonschemas"))
    assert report.renumbered == report.new_keys == report.new_messages == []
    assert report.new_versions == report.changed == report.renamed == []
    # what remains: old versions Kafka removed (KIP-896) or withdrew, which the codec still reads
    assert "ProduceRequest v0-v2" in report.dropped
    assert "ShareFetchRequest v0" in report.dropped


@needs_shared
def test_a_4_1_era_folder_against_4_4_shows_the_renumbered_93_and_new_versions() -> None:
    old = read_upstream(SHARED / "kafka-schemas" / "message")  # trunk with GetReplicaLogInfo
    report = compare(read_upstream(KAFKA_44 / "message"), old)
    renumbered = (
        "93: GetReplicaLogInfo in the project, StreamsGroupTopologyDescriptionUpdate upstream"
    )
    assert renumbered in report.renumbered
    assert "94 UnregisterController" in report.new_keys
    assert any(line.startswith("ApiVersionsRequest v5: ") for line in report.new_versions)
    python_era = read_upstream(SHARED / "kafka-schemas-kafka-python-3.0.12")
    report = compare(read_upstream(KAFKA_44 / "message"), python_era)
    assert "93 StreamsGroupTopologyDescriptionUpdate" in report.new_keys
    assert any(line.startswith("TxnOffsetCommitRequest v6: ") for line in report.new_versions)
    assert any("GenerationId is GenerationIdOrMemberEpoch" in line for line in report.renamed)


@needs_shared
def test_the_command_line_prints_the_report() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kipwire.generator", "diff-upstream", str(KAFKA_44 / "message")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 1, done.stderr  # the codec keeps versions 4.4.0 dropped
    assert done.stdout.startswith("versions the upstream no longer defines")
