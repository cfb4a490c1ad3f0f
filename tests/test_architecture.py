"""The architecture's rules (ARCHITECTURE.md, DESIGN.md), kept true by reading the source.

Pure AST and file checks (the mypy one runs mypy on one small file): the import graph, API
numbers outside the codec, module sizes, xfails that cannot fail, the newcomer's table, and the
typed public API. The checks themselves live in `arch_checks.py` for other tests to call.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import arch_checks as ac
import pytest

from kipwire.codec import ApiKey, ErrorCode

WIRE = ac.WireNames(
    {n: int(v) for n, v in ApiKey.__members__.items()},
    {n: int(v) for n, v in ErrorCode.__members__.items()},
)

NEWCOMER_TOPICS = (
    "Produce handler",
    "clean shutdown",
    "HWM",
    "tagged",
    "Spark",
    "HTML",
    "Balanced",
    "network cuts",
)


# ---------------------------------------------------------------------------------------------
# the import graph


def test_no_import_cycle_spans_more_than_four_modules_or_two_sub_packages():
    graph = ac.import_graph()
    assert len(graph.modules) > 50 and len(graph.edges) > 200  # the checker sees the packages
    bad = ac.oversized_cycles(graph)
    assert not bad, "import cycles too wide:\n" + "\n".join(bad)


def _modules(root: Path, files: dict[str, str]) -> dict[str, ac.Module]:
    mods = {}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        parts = ["kipwire", *Path(rel).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        mods[name] = ac.Module(name, path, is_package)
    return mods


def test_the_import_checker_counts_every_kind_of_import(tmp_path: Path):
    mods = _modules(
        tmp_path,
        {
            "p/__init__.py": "from .a import A\n",
            "p/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
            "p/b.py": "def f():\n    from . import c\n",
            "p/c.py": "import kipwire.q.d\nfrom kipwire import p\nfrom . import A\n",
            "q/__init__.py": "from kipwire.p import A\n",
            "q/d.py": "from ..p import a\n",
        },
    )
    graph = ac.import_graph(mods)
    edges = {(e.source, e.target) for e in graph.edges}
    assert ("kipwire.p.a", "kipwire.p.b") in edges  # TYPE_CHECKING
    assert ("kipwire.p.b", "kipwire.p.c") in edges  # in a function; `from . import c` is c
    assert ("kipwire.q.d", "kipwire.p.a") in edges and ("kipwire.q", "kipwire.p") in edges
    assert ("kipwire.p", "kipwire.p.a") in edges  # an __init__ is a module
    # a package's own __init__, imported from inside it, does not count
    assert not {t for s, t in edges if s == "kipwire.p.c" and t == "kipwire.p"}
    (cycle,) = ac.import_cycles(graph)
    assert cycle == ["kipwire.p.a", "kipwire.p.b", "kipwire.p.c", "kipwire.q.d"]
    assert ac.oversized_cycles(graph) == []  # 4 modules in 2 sub-packages is allowed
    (too_wide,) = ac.oversized_cycles(graph, max_modules=3)
    assert "p/b.py:2: from . import c  -> kipwire.p.c" in too_wide


# ---------------------------------------------------------------------------------------------
# API keys and error codes


def _literal_folders() -> list[Path]:
    packages = [f for name, f in ac.package_folders().items() if name != "kipwire.codec"]
    return [ac.ROOT / "tests", ac.ROOT / "benchmarks", *packages]


def test_no_number_stands_for_an_api_key_or_error_code_outside_the_codec():
    found = ac.api_number_literals(_literal_folders(), ac.python_files(), WIRE)
    per_folder = Counter("/".join(Path(f.path).parts[:2]) for f in found)
    assert not found, (
        f"{len(found)} numbers for ApiKey/ErrorCode members ({dict(per_folder)}); "
        "use kipwire.codec.ApiKey.X / ErrorCode.X:\n" + "\n".join(map(str, found))
    )


def test_the_literal_checker_flags_each_form_and_nothing_else(tmp_path: Path):
    (tmp_path / "defs.py").write_text(
        "def send(conn, api_key, version): ...\n"
        "def handles(api_key, *, min_version=None): ...\n"
        "class C:\n    def call(self, api_key, version): ...\n"
    )
    flagged = {
        "FETCH = 1": "name FETCH",
        "class K:\n    INVALID_REQUEST: int = 42": "name INVALID_REQUEST",
        "PRODUCE, N = 0, 5": "name PRODUCE",
        "@handles(26)\ndef h(): ...": "handles()",
        "@handles(api_key=26)\ndef h(): ...": "api_key=",
        "send(c, 18, 3)": "send()",
        "C().call(3, 12)": "call()",
        'x = {"error_code": 0}': '"error_code"',
        "r.api_key == 1": "api_key compared",
        'r["error_code"] != -1': "error_code compared",
        'r["api_key"] in (0, 1)': "api_key compared with numbers",
        '(r["length"], r["error_code"]) == (17, 35)': "error_code compared",
        '{(r.api_version, r["error_code"]) for r in rs} == {(4, 35)}': "error_code compared",
        "[r.api_key for r in rs] != [0]": "api_key compared",
    }
    legit = [
        "FETCH_VERSION = 17",  # not a member name
        "NONE = 7",  # a member name with another member's number
        "def f():\n    FETCH = 1",  # a local
        "send(c, 9000, 0)",  # not a known key: a test of unknown keys
        "send(c, key, 3)",
        'x = {"api_key": key, "version": 3}',
        "0 <= api_key <= 0x7FFF",  # a range check
        "r.api_version == 3",
        "(r.api_key, r.api_version) == (key, 3)",
        "[r.api_key, 1] == [key]",  # lengths differ: no element-wise reading
    ]
    for i, code in enumerate([*flagged, *legit]):
        (tmp_path / f"case{i}.py").write_text(code + "\n")
    found = ac.api_number_literals([tmp_path], [tmp_path / "defs.py"], WIRE)
    by_file = {f.path.rsplit("/", 1)[-1]: f.rule for f in found}
    for i, (code, rule) in enumerate(flagged.items()):
        assert rule in by_file.get(f"case{i}.py", ""), code
    for i, code in enumerate(legit, start=len(flagged)):
        assert f"case{i}.py" not in by_file, code


# ---------------------------------------------------------------------------------------------
# sizes


def test_no_hand_written_module_over_600_lines():
    assert len(ac.python_files()) > 100
    assert ac.oversized_modules(600) == []


def test_generated_codec_at_most_115000_lines():
    assert ac.generated_codec_lines() <= 115_000


# ---------------------------------------------------------------------------------------------
# xfails


def test_no_xfail_that_cannot_fail():
    found = ac.non_strict_xfails(ac.ROOT / "tests")
    assert not found, "xfail marks without strict=True (they pass either way): " + repr(found)


def test_the_xfail_checker_finds_marks_in_every_place(tmp_path: Path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "FLAKY = pytest.mark.xfail(strict=False, reason='r')\n"
        "@pytest.mark.xfail(reason='default is not strict')\ndef test_a(): ...\n"
        "@pytest.mark.xfail(strict=True, reason='fine')\ndef test_b(): ...\n"
        "@pytest.mark.parametrize('x', [pytest.param(1, marks=pytest.mark.xfail)])\n"
        "def test_c(x): ...\n"
    )
    names = [(owner, line) for _, owner, line in ac.non_strict_xfails(tmp_path)]
    assert sorted(names) == [("FLAKY", 2), ("test_a", 3), ("test_c", 7)]


# ---------------------------------------------------------------------------------------------
# the newcomer's questions


def test_each_newcomer_question_names_a_file_that_defines_the_answer():
    rows = ac.newcomer_rows((ac.ROOT / "ARCHITECTURE.md").read_text(), "A newcomer")
    assert len(rows) == len(NEWCOMER_TOPICS)
    for topic in NEWCOMER_TOPICS:
        assert [q for q, _, _ in rows if topic.lower() in q.lower()], f"no question on {topic}"
    missing = [
        (q, path, name)
        for q, path, name in rows
        if not (ac.ROOT / path).is_file() or not ac.defines(ac.ROOT / path, name)
    ]
    assert not missing, f"answers that name no definition: {missing}"


# ---------------------------------------------------------------------------------------------
# typing


def test_each_package_carries_a_py_typed_marker():
    data = ac.pyproject()["tool"]["setuptools"].get("package-data", {})
    for name, folder in ac.package_folders().items():
        assert (folder / "py.typed").is_file(), folder
        assert "py.typed" in data.get(name, []), f"{name} does not ship its py.typed"


def test_the_public_api_type_checks(tmp_path: Path):
    pytest.importorskip("mypy", reason="mypy is in the test extras")
    # mypy cannot see through the editable install's import hook: give it the packages under
    # their installed names
    (tmp_path / "kipwire").mkdir()
    for name, folder in ac.package_folders().items():
        (tmp_path / "kipwire" / name.split(".", 1)[1]).symlink_to(folder)
    env = {**os.environ, "MYPYPATH": str(tmp_path)}
    usage = ac.ROOT / "tests" / "typed_public_api.py"
    cmd = [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent"]
    cmd += ["--cache-dir", str(tmp_path / ".mypy_cache"), str(usage)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no issues found in 1 source file" in proc.stdout


def test_no_two_test_modules_share_a_name():
    # pytest imports test modules by their base name (rootdir-relative, no packages): two files
    # with one name stop the whole session at collection
    names: dict[str, list[str]] = {}
    for path in (ac.ROOT / "tests").rglob("*.py"):
        if path.name not in ("conftest.py", "__init__.py"):
            names.setdefault(path.name, []).append(str(path.relative_to(ac.ROOT)))
    assert not {n: p for n, p in names.items() if len(p) > 1}
