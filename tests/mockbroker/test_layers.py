"""The mock runtime's imports point down: node -> serve pipeline -> handlers -> broker state.

Read from the source by AST, every import counted (TYPE_CHECKING and function-level ones too; a
package's `__init__` is a module, its own modules importing it are not counted). The controller
package (`mockbroker/controller/`) is left to its own tests.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mockbroker"
#: The modules above the handlers: nothing below them may import them.
UPPER = {"cluster", "sync_cluster", "broker_node", "controller_node", "serve", "pytest_plugin"}
LOWER_PACKAGES = ("handlers", "broker", "coordinators")
MAX_CYCLE = 4


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


def _imports() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if name else []
        if not is_package:
            here = here[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                elif node.module and node.module.startswith("kipwire.mockbroker"):
                    base = []
                    node.module = node.module.removeprefix("kipwire.mockbroker").lstrip(".")
                else:
                    continue
                module = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{module}.{alias.name}" if module else alias.name
                    targets.append(sub if sub in modules else module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("kipwire.mockbroker."):
                        targets.append(alias.name.removeprefix("kipwire.mockbroker."))
            for target in targets:
                if target not in modules or target == name:
                    continue
                if modules[target][1] and name.startswith(f"{target}."):
                    continue  # a package's own modules importing its __init__
                edges[name].add(target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _subpackage(module: str) -> str:
    return module.split(".")[0] if "." in module else "(top)"


def test_no_import_cycle_spans_more_than_four_modules_or_two_subpackages():
    edges = _imports()
    for cycle in _cycles(edges):
        if all(m.startswith("controller.") or m == "controller" for m in cycle):
            continue
        assert len(cycle) <= MAX_CYCLE, cycle
        assert len({_subpackage(m) for m in cycle}) <= 2, cycle


def test_handlers_and_broker_state_never_import_the_nodes_or_the_cluster():
    edges = _imports()
    upward = {
        (module, target)
        for module, targets in edges.items()
        if module.split(".")[0] in LOWER_PACKAGES
        for target in targets
        if target in UPPER
    }
    assert upward == set()


def test_the_graph_reader_sees_the_layers():
    # the checks above would pass on an empty graph: the arrows they rely on are there
    edges = _imports()
    assert {"serve", "handlers", "broker.state"} <= edges["broker_node"]
    assert "broker.partition" in edges["handlers.registry"]
    assert "faults" in edges["serve"]
