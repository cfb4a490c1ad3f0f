"""The package's map and manners: every module listed, no module reaching into another's
private names, and stages whose imports point down only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import kipwire.captures as captures

ROOT = Path(captures.__file__).parent
# top-level modules by name, a stage's modules as `stage.module`
MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for p in ROOT.rglob("*.py")
    if not p.stem.startswith("__")
)
# each stage may import the stages before it in this list, never one after it
STAGES = ["reading", "decoding", "engines", "comparing", "replaying"]
ALLOWED = {
    "reading": set(),
    "decoding": {"reading"},
    "engines": {"reading", "decoding"},
    "comparing": {"decoding"},
    # replay.pcapng is written with the stdlib-only facade
    "replaying": {"reading", "decoding", "engines", "comparing", "pcap"},
}


def _imports(path: Path) -> list[ast.ImportFrom | ast.Import]:
    """Every import statement of a module, at any depth (function-level and TYPE_CHECKING too)."""
    tree = ast.parse(path.read_text())
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _targets(path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The absolute module names an import statement names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not node.level:
        return [node.module or ""]
    package = ["kipwire", "captures", *path.relative_to(ROOT).parent.parts]
    package = package[: len(package) - node.level + 1]
    return [".".join([*package, *filter(None, [node.module])])]


def test_the_package_docstring_maps_every_module() -> None:
    doc = captures.__doc__ or ""
    missing = [m for m in MODULES if f"`{m}`" not in doc]
    assert not missing, f"captures/__init__.py does not say what these hold: {missing}"


def test_no_module_imports_another_modules_private_names() -> None:
    found = []
    for name in MODULES:
        for node in _imports(ROOT / f"{name.replace('.', '/')}.py"):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith("kipwire")
            ):
                found += [f"{name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert not found


def test_stages_import_only_the_stages_before_them() -> None:
    wrong = []
    for stage in STAGES:
        for path in sorted((ROOT / stage).glob("*.py")):
            for node in _imports(path):
                for target in _targets(path, node):
                    parts = target.split(".")
                    if parts[:2] != ["kipwire", "captures"]:
                        continue
                    head = parts[2] if len(parts) > 2 else ""
                    if head != stage and head not in ALLOWED[stage]:
                        wrong.append(f"{stage}/{path.name} imports {target}")
    assert wrong == []


def test_the_reading_stage_and_pcap_import_without_construct_pyarrow_or_pyspark() -> None:
    reading = [f"kipwire.captures.{m}" for m in MODULES if m.startswith("reading.") or m == "pcap"]
    code = "import sys\nfor n in ('construct', 'pyarrow', 'pyspark'):\n    sys.modules[n] = None\n"
    code += "".join(f"import {m}\n" for m in reading)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(reading) >= 8


def test_the_face_names_resolve_lazily() -> None:
    code = (
        "import sys, kipwire.captures as c\n"
        "assert not any(n.split('.')[0] in ('pyarrow', 'pyspark') for n in sys.modules)\n"
        "from kipwire.captures import compare, decode_capture, pcap, write_report\n"
        "print(compare.__module__, decode_capture.__module__, pcap.__name__,"
        " write_report.__module__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [
        "kipwire.captures.comparing.compare",
        "kipwire.captures.decoding.pipeline",
        "kipwire.captures.pcap",
        "kipwire.captures.comparing.compare",
    ]
