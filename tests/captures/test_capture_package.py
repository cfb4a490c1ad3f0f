"""The package's map and manners: every module listed, no module reaching into another's
private names."""

from __future__ import annotations

import ast
from pathlib import Path

import kipwire.captures as captures

ROOT = Path(captures.__file__).parent
MODULES = sorted(p.stem for p in ROOT.glob("*.py") if not p.stem.startswith("__"))


def test_the_package_docstring_maps_every_module() -> None:
    doc = captures.__doc__ or ""
    missing = [m for m in MODULES if f"`{m}`" not in doc]
    assert not missing, f"captures/__init__.py does not say what these hold: {missing}"


def test_no_module_imports_another_modules_private_names() -> None:
    found = []
    for name in MODULES:
        tree = ast.parse((ROOT / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith("kipwire")
            ):
                found += [f"{name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert not found
