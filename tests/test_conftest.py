"""tests/conftest.py's `requires` marker: a skip for a missing tool stays a skip, unless
KIPWIRE_REQUIRE names the tool (CI), where it fails the run with the skip's reason; a
`realkafka` test requires java."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_EXAMPLE = """
import pytest

@pytest.mark.requires("sometool")
def test_needs_the_tool():
    pytest.skip("sometool is not installed")

def test_unmarked_skip():
    pytest.skip("no reason to fail")

@pytest.mark.realkafka
def test_real_kafka():
    pytest.skip("real Kafka did not start")
"""


def _run(tmp_path: Path, require: str) -> subprocess.CompletedProcess:
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_example.py").write_text(_EXAMPLE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    realkafka: real Kafka\n")
    env = {**os.environ, "KIPWIRE_REQUIRE": require, "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_required_tools_skip_fails_and_says_why(tmp_path):
    done = _run(tmp_path, "java,sometool")
    assert done.returncode == 1, done.stdout
    assert "2 failed, 1 skipped" in done.stdout
    assert "KIPWIRE_REQUIRE names sometool, but the test skipped: sometool is not installed" in (
        done.stdout
    )
    assert "KIPWIRE_REQUIRE names java, but the test skipped: real Kafka did not start" in (
        done.stdout
    )


def test_without_the_requirement_it_stays_a_skip(tmp_path):
    done = _run(tmp_path, "go")
    assert done.returncode == 0, done.stdout
    assert "3 skipped" in done.stdout
