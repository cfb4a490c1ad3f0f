"""`kipwire-capture`: bad inputs and arguments are one line and a non-zero exit, never a
traceback; the engine choice; --fail-on; the missing-extra message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kafka_capture_kit import write_frame_dumps, write_rotated

from kipwire.captures import cli
from kipwire.captures.cli import choose_engine, main
from kipwire.captures.reading import inputs


def _run(*args: str, pre: str = "") -> subprocess.CompletedProcess:
    code = f"import sys\n{pre}from kipwire.captures.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr


def test_missing_and_non_capture_inputs_one_line_each(tmp_path: Path) -> None:
    write_rotated(tmp_path / "good")
    (tmp_path / "notes.txt").write_text("not a capture\n")
    proc = _run(
        "decode",
        str(tmp_path / "good"),
        str(tmp_path / "absent.pcap"),
        str(tmp_path / "notes.txt"),
        str(tmp_path / "empty-dir"),
        "--out",
        str(tmp_path / "out"),
        pre=f"import os; os.mkdir({str(tmp_path / 'empty-dir')!r})\n",
    )
    _no_traceback(proc)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 3, lines
    assert "absent.pcap: no such file or folder" in lines[0]
    assert "notes.txt: not a capture" in lines[1]
    assert "empty-dir: no capture files in this folder" in lines[2]
    assert not (tmp_path / "out").exists()  # nothing decoded


def test_unreadable_input_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the tests may run as root, who reads any file: make access() say what a user would see
    write_rotated(tmp_path / "caps")
    locked = str(tmp_path / "caps" / "cap.pcapng1")
    real = os.access
    monkeypatch.setattr(inputs.os, "access", lambda p, m: str(p) != locked and real(p, m))
    problems = inputs.check_inputs([str(tmp_path / "caps")])
    assert problems == [f"{locked}: not readable"]
    assert inputs.check_inputs([locked]) == [f"{locked}: not readable"]


def test_bad_arguments_exit_2_without_traceback(tmp_path: Path, capsys) -> None:
    write_rotated(tmp_path / "caps")
    (tmp_path / "file").write_text("x")
    caps = str(tmp_path / "caps")
    cases = [
        (["decode", caps], "--out"),
        (["decode", caps, "--out", str(tmp_path / "file" / "sub")], "cannot create it"),
        (["decode", caps, "--out", str(tmp_path / "file")], "is not a folder"),
        (["decode", caps, "--out", str(tmp_path / "o"), "--fail-on", "bogus"], "unknown status"),
        (["decode", caps, "--out", str(tmp_path / "o"), "--engine", "gpu"], "invalid choice"),
        (["decode", "--out", str(tmp_path / "o")], "no INPUT"),
        (["decode", "s3a://b/c/", "--out", str(tmp_path / "o"), "--engine", "local"], "local"),
        (["decode", caps, "--out", str(tmp_path / "o"), "--master", "bogus://x"], "not a Spark"),
        (["decode", caps, "--out", str(tmp_path / "o"), "--split-mb", "0"], "--split-mb"),
        (["frobnicate"], "unknown command"),
    ]
    for argv, text in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert text in err and "Traceback" not in err, (argv, err)


def test_compare_out_in_a_place_it_cannot_write(tmp_path: Path, capsys) -> None:
    from kipwire.captures.engines.local import run_local

    write_rotated(tmp_path / "caps")
    run_local([str(tmp_path / "caps")], tmp_path / "a", capture="a")
    run_local([str(tmp_path / "caps")], tmp_path / "b", capture="b")
    (tmp_path / "file").write_text("x")
    out = str(tmp_path / "file" / "report")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"cannot write the report to {out}" in err and len(err.strip().splitlines()) == 1


def test_fail_on_malformed(tmp_path: Path) -> None:
    write_rotated(tmp_path / "caps")
    (tmp_path / "caps" / "garbage.pcap").write_bytes(b"not a capture at all\n" * 3)
    out = str(tmp_path / "out")
    ok = _run("decode", str(tmp_path / "caps"), "--out", out)
    assert ok.returncode == 0, ok.stderr  # a damaged file in a folder is rows, not a failure
    assert "malformed" in ok.stdout
    gate = _run("decode", str(tmp_path / "caps"), "--out", out, "--fail-on", "malformed")
    _no_traceback(gate)
    assert gate.returncode == 1
    assert "failing (--fail-on): 1 malformed PDUs" in gate.stderr


def test_engine_choice_and_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    write_rotated(tmp_path / "caps")
    caps = [str(tmp_path / "caps")]
    size = sum(p.stat().st_size for p in (tmp_path / "caps").iterdir())
    assert choose_engine("auto", None, caps, size)[0] == "local"
    engine, why = choose_engine("auto", None, caps, size - 1)
    assert engine == "spark" and "over" in why
    assert choose_engine("auto", "local[2]", caps, 1 << 40) == ("spark", "--master local[2]")
    assert choose_engine("spark", None, caps, 1 << 40)[0] == "spark"
    assert choose_engine("local", None, caps, 0)[0] == "local"
    assert choose_engine("auto", None, ["hdfs:///caps/"], 1 << 40)[0] == "spark"
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert choose_engine("auto", None, caps, 1 << 40)[0] == "spark"


def test_auto_decodes_small_input_locally(tmp_path: Path) -> None:
    req, resp = write_frame_dumps(tmp_path / "dumps")
    proc = _run("decode", "--pair", str(req), str(resp), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    engine_lines = [x for x in proc.stderr.splitlines() if x.startswith("engine:")]
    assert len(engine_lines) == 1 and engine_lines[0].startswith("engine: local (")
    assert "answered           3" in proc.stdout
    assert "capture 'requests.bin'" in proc.stdout  # the label is the input's own name


@pytest.mark.parametrize("missing", ["pyarrow", "pyspark"])
def test_without_the_captures_extra_one_line_names_it(tmp_path: Path, missing: str) -> None:
    write_rotated(tmp_path / "caps")
    engine = "local" if missing == "pyarrow" else "spark"
    proc = _run(
        "decode",
        str(tmp_path / "caps"),
        "--out",
        str(tmp_path / "out"),
        "--engine",
        engine,
        pre=f"sys.modules[{missing!r}] = None\n",
    )
    _no_traceback(proc)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert "pip install 'kipwire[captures]'" in last and missing in last


def test_statuses_of_fail_on_are_the_pipelines() -> None:
    from kipwire.captures.decoding import pairing

    made = set(pairing._STATUS.values()) - {"ok"}
    assert made <= set(cli._STATUSES)
