"""The controller package's shape: rules never reach back into the Controller, and its
imports form no cycle (every import counts, TYPE_CHECKING ones too)."""

from __future__ import annotations

import ast
from pathlib import Path

import kipwire.mockbroker.controller as package

PACKAGE = Path(package.__file__).parent


def _imports(path: Path) -> set[str]:
    """The sibling modules a module imports, relatively, anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {p.stem: p for p in PACKAGE.glob("*.py")}
    # the package's own __init__ is not counted, as the project's cycle rule says
    return {
        name: (_imports(path) & modules.keys()) - {"__init__"}
        for name, path in modules.items()
        if name != "__init__"
    }


def test_no_rule_module_imports_the_controller() -> None:
    importers = sorted(name for name, deps in _graph().items() if "controller" in deps)
    assert importers == []


def test_the_package_has_no_import_cycle() -> None:
    graph = _graph()
    visiting: list[str] = []
    done: set[str] = set()
    cycles: list[list[str]] = []

    def visit(name: str) -> None:
        if name in visiting:
            cycles.append(visiting[visiting.index(name) :] + [name])
            return
        if name in done:
            return
        visiting.append(name)
        for dep in sorted(graph[name]):
            visit(dep)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
    assert graph["apis"] >= {"brokers", "topics", "alter_partition"}  # the walk sees imports
    assert cycles == []


def test_no_module_exceeds_600_lines() -> None:
    long = {
        p.name: n
        for p in PACKAGE.glob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}
