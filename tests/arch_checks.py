"""Checks of the architecture's rules over the source files (AST and text only, nothing imported
from the checked modules), reusable by any test: the import graph, API numbers outside the
codec, module sizes, non-strict xfails and the newcomer's table in ARCHITECTURE.md.

Each check returns its findings as readable strings; a test asserts the list is empty.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "codec" / "messages"
NOT_PACKAGES = {"tests", "benchmarks", "jsonschemas", "docs", "build", "dist"}


def pyproject() -> dict:
    """The checkout's pyproject.toml."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def rel(path: Path) -> str:
    """A path as the checkout names it (unchanged when outside the checkout)."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def hand_written(path: Path) -> bool:
    """Whether a file is written by hand (not the generated codec, not a venv or a build)."""
    if not path.is_relative_to(ROOT):
        return True
    parts = path.relative_to(ROOT).parts
    if not parts or parts[0].startswith(".") or parts[0] in ("build", "dist"):
        return False
    generated = path == GENERATED or GENERATED in path.parents
    return not generated and not parts[0].endswith(".egg-info")


def python_files(*folders: Path) -> list[Path]:
    """The hand-written .py files under `folders` (all of the checkout when none are given)."""
    out: list[Path] = []
    for folder in folders or (ROOT,):
        for here, dirs, files in os.walk(folder):
            # prune the venv, caches and the generated codec instead of walking them
            dirs[:] = sorted(d for d in dirs if hand_written(Path(here, d)))
            out.extend(Path(here, f) for f in sorted(files) if f.endswith(".py"))
    return out


@functools.cache
def parse(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once per run whichever check asks first."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


_NODES: dict[int, list[ast.AST]] = {}


def nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of a tree, outside in (`ast.walk`'s order), listed once per tree."""
    key = id(tree)
    if key not in _NODES:
        _NODES[key] = list(ast.walk(tree))
    return _NODES[key]


def package_folders() -> dict[str, Path]:
    """`kipwire.x` -> its folder: pyproject's package-dir, plus any top-level folder with an
    `__init__.py` it does not list yet (a new package such as demo/)."""
    dirs = pyproject().get("tool", {}).get("setuptools", {}).get("package-dir", {})
    found = {name: ROOT / folder for name, folder in dirs.items() if name}
    listed = set(found.values())
    for init in sorted(ROOT.glob("*/__init__.py")):
        folder = init.parent
        if folder not in listed and folder.name not in NOT_PACKAGES:
            found[f"kipwire.{folder.name}"] = folder
    return found


# ---------------------------------------------------------------------------------------------
# the import graph


@dataclass
class Module:
    """One hand-written module of a package: its dotted name, file and whether it is a package."""

    name: str
    path: Path
    is_package: bool

    @property
    def package(self) -> str:
        """The (sub-)package the module belongs to: itself for an `__init__`."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


@dataclass
class Edge:
    """An import of `target` by `source`, with the line that says it."""

    source: str
    target: str
    line: int
    text: str


@dataclass
class ImportGraph:
    """The modules and the imports among them."""

    modules: dict[str, Module]
    edges: list[Edge] = field(default_factory=list)

    def successors(self) -> dict[str, set[str]]:
        """Module name -> the modules it imports."""
        out: dict[str, set[str]] = {m: set() for m in self.modules}
        for e in self.edges:
            out[e.source].add(e.target)
        return out


def package_modules() -> dict[str, Module]:
    """Every hand-written module of the packages, by dotted name (`codec/messages` left out)."""
    mods: dict[str, Module] = {}
    for pkg, folder in package_folders().items():
        for path in python_files(folder):
            rel = path.relative_to(folder).with_suffix("")
            parts = [pkg, *rel.parts]
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join(parts)
            mods[name] = Module(name, path, is_package)
    return mods


def _resolve_from(mod: Module, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = mod.package.split(".")
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imported(mod: Module, node: ast.AST, known: set[str]) -> Iterator[tuple[str, str]]:
    """(module, import text) for each known module an import statement names: `from p import m`
    names module p.m when that is a module, else p; `import a.b.c` names a.b.c (a parent's
    `__init__` only when no deeper known module matches)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                yield name, f"import {alias.name}"
    elif isinstance(node, ast.ImportFrom):
        base = _resolve_from(mod, node)
        where = "." * node.level + (node.module or "")
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in known or base in known:
                yield (sub if sub in known else base), f"from {where} import {alias.name}"


def import_graph(modules: dict[str, Module] | None = None) -> ImportGraph:
    """Every import among the modules: top-level, function-level and TYPE_CHECKING ones alike,
    except a module's import of the `__init__` of a package that contains it."""
    modules = package_modules() if modules is None else modules
    graph = ImportGraph(modules)
    known = set(modules)
    for mod in modules.values():
        tree = parse(mod.path)
        for node in nodes(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            seen = set()
            for target, text in _imported(mod, node, known):
                if target in seen or target == mod.name or mod.name.startswith(target + "."):
                    continue  # once per statement; not itself or a package it lives in
                seen.add(target)
                graph.edges.append(Edge(mod.name, target, node.lineno, text))
    return graph


def strongly_connected(succ: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components (Tarjan, iterative), each sorted; singletons included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, iter(sorted(succ[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(succ[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    out.append(sorted(comp))
    return out


def import_cycles(graph: ImportGraph) -> list[list[str]]:
    """Every import cycle, as the set of modules that import each other (a strongly connected
    component of two or more modules): the way the issue counts "a cycle of 29 modules"."""
    return [c for c in strongly_connected(graph.successors()) if len(c) > 1]


def describe_cycle(graph: ImportGraph, cycle: list[str]) -> str:
    """A cycle as its modules, sub-packages and the import lines that join them."""
    members = set(cycle)
    packages = sorted({graph.modules[m].package for m in cycle})
    out = [f"{len(cycle)} modules in {len(packages)} sub-packages ({', '.join(packages)}):"]
    out.append("  modules: " + ", ".join(cycle))
    for e in sorted(graph.edges, key=lambda e: (e.source, e.line)):
        if e.source in members and e.target in members:
            where = rel(graph.modules[e.source].path)
            out.append(f"  {where}:{e.line}: {e.text}  -> {e.target}")
    return "\n".join(out)


def oversized_cycles(graph: ImportGraph, max_modules: int = 4, max_packages: int = 2) -> list[str]:
    """The cycles over `max_modules` modules or `max_packages` sub-packages, described."""
    bad = []
    for cycle in import_cycles(graph):
        packages = {graph.modules[m].package for m in cycle}
        if len(cycle) > max_modules or len(packages) > max_packages:
            bad.append(describe_cycle(graph, cycle))
    return bad


# ---------------------------------------------------------------------------------------------
# module sizes


def line_count(path: Path) -> int:
    """Lines in a file, as `wc -l` counts them."""
    return path.read_bytes().count(b"\n")


def oversized_modules(limit: int = 600) -> list[str]:
    """Hand-written modules over `limit` lines, anywhere in the checkout."""
    return [f"{rel(p)}: {n} lines" for p in python_files() if (n := line_count(p)) > limit]


def generated_codec_lines() -> int:
    """Lines of the generated codec (`codec/messages/`)."""
    return sum(line_count(p) for p in GENERATED.rglob("*.py"))


# ---------------------------------------------------------------------------------------------
# xfails that cannot fail


def _is_xfail_mark(f: ast.AST) -> bool:
    """`pytest.mark.xfail` (any `*.mark.xfail`) or a bare imported `xfail`."""
    if isinstance(f, ast.Attribute) and f.attr == "xfail":
        return isinstance(f.value, ast.Attribute) and f.value.attr == "mark"
    return isinstance(f, ast.Name) and f.id == "xfail"


def _strict(call: ast.Call) -> bool:
    for kw in call.keywords:
        if kw.arg == "strict":
            return isinstance(kw.value, ast.Constant) and kw.value.value is True
    return _ini_xfail_strict()


def _ini_xfail_strict() -> bool:
    ini = pyproject().get("tool", {}).get("pytest", {}).get("ini_options", {})
    return str(ini.get("xfail_strict", "false")).lower() in ("true", "1")


def _owner(tree: ast.Module, line: int) -> str:
    """The innermost function or class (decorators included) or module-level assignment
    whose lines hold `line`."""
    spans = []
    for node in nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            spans.append((start, node.end_lineno or start, node.name))
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            name = ",".join(t.id for t in targets if isinstance(t, ast.Name))
            spans.append((node.lineno, node.end_lineno or node.lineno, name))
    holding = [(end - start, name) for start, end, name in spans if start <= line <= end]
    return min(holding)[1] if holding else "<module>"


def non_strict_xfails(folder: Path) -> list[tuple[str, str, int]]:
    """(file, enclosing test or module-level name, line) of each xfail mark that is not strict:
    such a test passes whether or not what it checks holds."""
    found = []
    for path in python_files(folder):
        tree = parse(path)
        called = {id(n.func) for n in nodes(tree) if isinstance(n, ast.Call)}
        for node in nodes(tree):
            if isinstance(node, ast.Call):
                loose = _is_xfail_mark(node.func) and not _strict(node)
            else:  # a bare `pytest.mark.xfail`, as in `pytest.param(..., marks=...)`
                loose = id(node) not in called and _is_xfail_mark(node) and not _ini_xfail_strict()
            if loose:
                found.append((rel(path), _owner(tree, node.lineno), node.lineno))
    return found


# ---------------------------------------------------------------------------------------------
# the newcomer's table


TABLE_ROW = re.compile(
    r"^\|\s*(?P<q>[^|]+?)\s*\|\s*`?(?P<path>[\w./-]+\.py)`?\s*\|\s*`?(?P<name>[\w.]+)`?\s*\|$"
)


def newcomer_rows(markdown: str, heading: str) -> list[tuple[str, str, str]]:
    """(question, path, name) of each `| question | path.py | name |` row in the section of a
    markdown text whose heading starts with `heading`."""
    rows, inside = [], False
    for line in markdown.splitlines():
        if line.startswith("#"):
            inside = line.lstrip("#").strip().startswith(heading)
        elif inside and (m := TABLE_ROW.match(line.strip())):
            rows.append((m["q"], m["path"], m["name"]))
    return rows


def defines(path: Path, dotted: str) -> bool:
    """Whether a module defines `name` (a function, class or assigned name at its top level) or
    `Class.member` (a method or attribute of a class defined there)."""
    scope: Iterable[ast.stmt] = parse(path).body
    *outer, last = dotted.split(".")
    for part in outer:
        cls = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None)
        if cls is None:
            return False
        scope = cls.body
    return last in _names_bound(scope)


def _names_bound(body: Iterable[ast.stmt]) -> set[str]:
    names = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


# ---------------------------------------------------------------------------------------------
# API keys and error codes as bare numbers

KEY_FIELDS = ("api_key", "error_code")


@dataclass(frozen=True)
class WireNames:
    """The members of `ApiKey` and `ErrorCode` (name -> number): a number counts as a key or
    code only when it is one of these (an unknown key such as 9000 in a test is just a number)."""

    api_keys: dict[str, int]
    error_codes: dict[str, int]

    def values(self, kind: str) -> set[int]:
        """The numbers of one kind, "api_key" or "error_code"."""
        return set((self.api_keys if kind == "api_key" else self.error_codes).values())

    def value_of(self, name: str) -> int | None:
        """The number of a member name of either enum, else None."""
        return self.api_keys.get(name, self.error_codes.get(name))


@dataclass(frozen=True)
class Literal:
    """An int literal that stands for an API key or error code, where it is and why it is one."""

    path: str
    line: int
    rule: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.text}"


def _int(node: ast.AST | None) -> int | None:
    """The value of an int literal (a negative one too), else None; bools are not ints here."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _key_field(node: ast.AST) -> str | None:
    """Which key field ("api_key", "error_code") `x.api_key`, `x["error_code"]` or a name reads."""
    if isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        name = node.slice.value
    elif isinstance(node, ast.Name):
        name = node.id
    else:
        return None
    return name if name in KEY_FIELDS else None


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    names = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    return names[1:] if method and not static and names else names


def api_key_positions(files: Iterable[Path]) -> dict[str, int]:
    """Function name -> the position of its `api_key` parameter, for every function of the
    tree that has one (methods counted without `self`); names whose definitions disagree on
    the position are left out, so a call is judged only by what every definition says."""
    seen: dict[str, set[int | None]] = {}
    for path in files:
        methods: set[int] = set()
        for fn in nodes(parse(path)):  # outside in: a class before its methods
            if isinstance(fn, ast.ClassDef):
                methods.update(id(f) for f in fn.body)
            elif isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                params = _params(fn, id(fn) in methods)
                pos = params.index("api_key") if "api_key" in params else None
                seen.setdefault(fn.name, set()).add(pos)
    return {name: next(iter(p)) for name, p in seen.items() if len(p) == 1 and None not in p}


def _call_name(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


class _LiteralFinder(ast.NodeVisitor):
    """Walks one module and collects the literals the rules flag."""

    def __init__(self, rel: str, lines: list[str], wire: WireNames, positions: dict[str, int]):
        self.rel, self.lines, self.wire, self.positions = rel, lines, wire, positions
        self.found: list[Literal] = []

    def known(self, kind: str, node: ast.AST | None) -> bool:
        """Whether `node` is an int literal naming a known API key / error code (`kind`)."""
        value = _int(node)
        return value is not None and value in self.wire.values(kind)

    def flag(self, node: ast.AST, rule: str) -> None:
        text = self.lines[node.lineno - 1].strip()
        self.found.append(Literal(self.rel, node.lineno, rule, text))

    def bindings(self, body: list[ast.stmt]) -> None:
        """`FETCH = 1`, `FETCH: int = 1`, `PRODUCE, FETCH = 0, 1` at module or class level."""
        for node in body:
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign):
                pairs = [(node.target, node.value)]
            else:
                continue
            for target, value in pairs:
                if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                    pairs.extend(zip(target.elts, value.elts, strict=False))
                elif (
                    isinstance(target, ast.Name)
                    and _int(value) is not None
                    and self.wire.value_of(target.id) == _int(value)
                ):
                    self.flag(node, f"name {target.id} bound to a number")

    def visit_Module(self, node: ast.Module) -> None:
        self.bindings(node.body)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bindings(node.body)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        for kw in node.keywords:
            if kw.arg in KEY_FIELDS and self.known(kw.arg, kw.value):
                self.flag(node, f"{kw.arg}= a number")
        name = _call_name(node)
        pos = self.positions.get(name) if name else None
        given = node.args[pos] if pos is not None and pos < len(node.args) else None
        starred = any(isinstance(a, ast.Starred) for a in node.args[: pos or 0])
        if given is not None and not starred and self.known("api_key", given):
            self.flag(node, f"{name}() given an API key as a number")
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and k.value in KEY_FIELDS and self.known(k.value, v):
                self.flag(v, f'"{k.value}": a number')
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            self.compare(left, op, right)
            left = right
        self.generic_visit(node)

    def compare(self, left: ast.AST, op: ast.cmpop, right: ast.AST) -> None:
        displays = ast.Tuple | ast.List | ast.Set
        if isinstance(left, displays) and isinstance(right, displays):
            if len(left.elts) == len(right.elts):  # element-wise, as == compares them
                for a, b in zip(left.elts, right.elts, strict=True):
                    self.compare(a, op, b)
            return
        comprehensions = ast.ListComp | ast.SetComp | ast.GeneratorExp
        for made, shown in ((left, right), (right, left)):
            if isinstance(made, comprehensions) and isinstance(shown, displays):
                for x in shown.elts:  # `{(r["error_code"],) for r in rows} == {(35,)}`
                    self.compare(made.elt, op, x)
                return
        if not isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn | ast.Is | ast.IsNot):
            return  # an order comparison checks a range, it does not name a key
        for key, other in ((left, right), (right, left)):
            kind = _key_field(key)
            if kind is None:
                continue
            if isinstance(op, ast.In | ast.NotIn) and other is right:
                items = other.elts if isinstance(other, ast.Tuple | ast.List | ast.Set) else []
                if any(self.known(kind, x) for x in items):
                    self.flag(key, f"{kind} compared with numbers")
            elif self.known(kind, other):
                self.flag(key, f"{kind} compared with a number")


def api_number_literals(
    folders: Iterable[Path], definitions: Iterable[Path], wire: WireNames
) -> list[Literal]:
    """The literals in `folders` that stand for API keys or error codes (`definitions`: the
    files whose functions say which parameter is an API key)."""
    positions = api_key_positions(definitions)
    found: list[Literal] = []
    for folder in folders:
        for path in python_files(folder):
            source = path.read_text(encoding="utf-8")
            finder = _LiteralFinder(rel(path), source.splitlines(), wire, positions)
            finder.visit(parse(path))
            found.extend(finder.found)
    return sorted(set(found), key=lambda f: (f.path, f.line, f.rule))
