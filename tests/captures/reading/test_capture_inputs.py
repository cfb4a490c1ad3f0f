"""Input discovery: kinds by content or name, tcpflow directions joined, labels."""

from __future__ import annotations

from pathlib import Path

from kafka_capture_kit import write_frame_dumps, write_rotated, write_tcpflow

from kipwire.captures.reading.inputs import expand_inputs, input_label, sniff_kind


def test_kinds_by_content_and_name(tmp_path: Path) -> None:
    write_rotated(tmp_path / "rot")
    write_tcpflow(tmp_path / "flows")
    req, resp = write_frame_dumps(tmp_path / "dumps")
    (tmp_path / "notes.txt").write_text("hello\n" * 10)
    assert sniff_kind(str(tmp_path / "rot" / "cap.pcapng1")) == "pcap"
    assert sniff_kind(str(next((tmp_path / "flows").iterdir()))) == "tcpflow"
    assert sniff_kind(str(req)) == "frames"
    # responses alone do not look like requests: recognised only with --pair or --format
    assert sniff_kind(str(resp)) is None
    assert sniff_kind(str(tmp_path / "notes.txt")) is None
    assert sniff_kind(str(tmp_path / "absent")) is None


def test_expand_joins_tcpflow_directions_and_keeps_rotation_sets(tmp_path: Path) -> None:
    write_rotated(tmp_path / "rot")
    write_tcpflow(tmp_path / "flows")
    files = expand_inputs([str(tmp_path / "rot"), str(tmp_path / "flows")])
    assert [(Path(f.name).name, f.kind) for f in files] == [
        ("010.000.000.001.50000-010.000.000.002.09092", "tcpflow"),
        ("cap.pcapng", "pcap"),
        ("cap.pcapng1", "pcap"),
    ]
    flow, cap0, cap1 = files
    assert flow.peer and Path(flow.peer).name == "010.000.000.002.09092-010.000.000.001.50000"
    assert cap0.group == cap1.group != flow.group


def test_forced_format_and_pairs(tmp_path: Path) -> None:
    req, resp = write_frame_dumps(tmp_path / "dumps")
    (f,) = expand_inputs([], pairs=[(str(req), str(resp))])
    assert (f.kind, f.path, f.peer) == ("frames", str(req), str(resp))
    kinds = {Path(f.name).name: f.kind for f in expand_inputs([str(resp)], fmt="frames")}
    assert kinds == {"responses.bin": "frames"}


def test_label_is_the_name_given_not_its_parent(tmp_path: Path) -> None:
    (tmp_path / "run-7").mkdir()
    (tmp_path / "run-7" / "cap.pcapng").write_bytes(b"")
    assert input_label(str(tmp_path / "run-7")) == "run-7"
    assert input_label(str(tmp_path / "run-7") + "/") == "run-7"
    assert input_label(str(tmp_path / "run-7" / "cap.pcapng")) == "cap.pcapng"
    assert input_label("hdfs://nn/caps/2026-11-21/") == "2026-11-21"
