"""Every example in docs/*.md and README.md runs, so the docs cannot drift from the code.

A doc's fenced blocks run in order in a fresh temporary folder: ```python blocks in one namespace
per doc, and the `$ ` lines of ```console / ```sh blocks as commands, with the virtual
environment's bin first on PATH. Lines after a command are its expected output (stdout and stderr
together): `...` inside a line matches any text, a line of just `...` any number of lines, and no
lines at all leaves the output unchecked. A command that exits non-zero must be followed by
`$ echo $?` showing its status. Only quick kipwire commands run here (`python -m kipwire...`,
`kipwire-capture`, `kipwire-broker --help`, a `kipwire-broker serve` that is refused at once and
shows `$ echo $?`); a block with any other command, or one too slow for a test, is marked
```console no-run. A dev broker runs in the background (`$ kipwire-broker serve ...
--control-port N &`) until the doc's end, on a free port that replaces N in the later commands and
their output, so parallel runs never collide; `curl` runs against it (127.0.0.1 only). A capture
decode must say `--engine local`: Spark never starts in these tests. A failure names the doc and
the line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import pytest
from doc_servers import Servers, background_serve

ROOT = Path(__file__).resolve().parents[1]
DOCS_DIR = ROOT / "docs"
DOCS = [*sorted(DOCS_DIR.glob("*.md")), ROOT / "README.md"]
STEP_TIMEOUT = 30  # seconds for one python block or one command
SPARK_TIMEOUT = 180  # seconds for a Spark SQL example: the JVM starts first
SHELL_LANGS = ("console", "sh", "shell", "bash")

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_INLINE_NAME = re.compile(r"`(?P<name>kipwire(?:\.[A-Za-z_]\w*)+)")
_TEST_REFERENCE = re.compile(r"tests/[\w/]+\.py::\w+")
_DECODE_COMMANDS = (("kipwire-capture", "decode"), ("python", "-m", "kipwire.captures", "decode"))


class DocExampleError(AssertionError):
    """An example in a doc that failed: the message names the doc and the line."""


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, options (`no-run`), text, and where its text starts."""

    path: Path
    line: int
    lang: str
    options: tuple[str, ...]
    text: str

    @property
    def where(self) -> str:
        """`doc:line` of the block's first line of text."""
        return f"{_shown(self.path)}:{self.line}"


@dataclass
class Command:
    """A `$ ` line of a console block (with its `\\` continuations) and the output shown after."""

    line: int
    argv: list[str]
    expected: list[str] = field(default_factory=list)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def extract_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, in order."""
    blocks = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, words = m["fence"], m["info"].split()
        start = i + 1
        i = start
        while i < len(lines) and not (
            lines[i].strip().startswith(fence) and set(lines[i].strip()) == {fence[0]}
        ):
            i += 1
        if i == len(lines):
            raise DocExampleError(f"{_shown(path)}:{start}: code block never closed")
        lang = words[0] if words else ""
        blocks.append(Block(path, start + 1, lang, tuple(words[1:]), "\n".join(lines[start:i])))
        i += 1
    return blocks


def parse_commands(block: Block) -> list[Command]:
    """The commands of a console block with the output each shows."""
    commands: list[Command] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            start, text = i, line[2:]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            try:
                argv = shlex.split(text, comments=True)
            except ValueError as exc:
                where = _where(block, start)
                raise DocExampleError(f"{where}: cannot split `{text}`: {exc}") from None
            commands.append(Command(block.line + start, argv))
        elif commands:
            commands[-1].expected.append(line.rstrip())
        elif line.strip():
            raise DocExampleError(f"{_where(block, i)}: output shown before any `$ ` command")
        i += 1
    for command in commands:
        while command.expected and not command.expected[-1]:
            command.expected.pop()
    return commands


def _where(block: Block, offset: int) -> str:
    return f"{_shown(block.path)}:{block.line + offset}"


def refusal(argv: list[str], follows: list[str] | None = None) -> str | None:
    """Why a command may not run in the doc tests, or None when it may (`follows`: the next)."""
    if argv == ["echo", "$?"]:
        return None
    program = argv[0] if argv else ""
    if program == "python":
        allowed = argv[1:2] == ["-m"] and argv[2:3] != [] and argv[2].split(".")[0] == "kipwire"
    elif program == "kipwire-broker":
        allowed = (
            bool({"-h", "--help", "--version"} & set(argv))
            or background_serve(argv)
            or (argv[1:2] == ["serve"] and follows == ["echo", "$?"])  # refused at once
        )
    elif program == "curl":
        urls = [a for a in argv[1:] if "://" in a]
        allowed = bool(urls) and all(u.startswith("http://127.0.0.1:") for u in urls)
    else:
        allowed = program == "kipwire-capture"
    if not allowed:
        return (
            "only `python -m kipwire...`, `kipwire-capture`, `kipwire-broker --help`, a "
            "background `kipwire-broker serve ... --control-port N &` and `curl` to it run in "
            "the doc tests; mark the block ```console no-run"
        )
    decodes = any(tuple(argv[: len(c)]) == c for c in _DECODE_COMMANDS)
    pairs = set(zip(argv, argv[1:], strict=False))
    if decodes and ("--engine", "local") not in pairs and "--engine=local" not in argv:
        return "a capture decode here must say --engine local (Spark never starts in doc tests)"
    return None


def output_matches(expected: list[str], actual: str) -> bool:
    """Whether the output fits the lines shown, `...` eliding text in a line or whole lines."""
    parts = []
    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(map(re.escape, line.split("..."))) + r"[ \t]*\n")
    text = "".join(f"{line.rstrip()}\n" for line in actual.splitlines())
    return re.fullmatch("".join(parts), text) is not None


@contextlib.contextmanager
def _time_limit(seconds: float, what: str) -> Iterator[None]:
    """Raise TimeoutError in a block that runs longer than `seconds` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise TimeoutError(f"{what} did not finish in {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_python(block: Block, namespace: dict) -> None:
    # Blank lines in front keep the doc's own line numbers in a traceback.
    code = compile("\n" * (block.line - 1) + block.text + "\n", str(block.path), "exec")
    try:
        with _time_limit(STEP_TIMEOUT, f"the python block at {block.where}"):
            exec(code, namespace)
    except Exception:
        raise DocExampleError(
            f"{block.where}: the python block failed:\n{traceback.format_exc(limit=-3)}"
        ) from None


def _command_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # stdout and stderr interleave in the order written, as in a terminal
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "100"
    env.pop("PYTHONPATH", None)
    return env


def _run_console(block: Block, cwd: Path, servers: Servers | None = None) -> None:
    servers = servers if servers is not None else Servers()
    commands = parse_commands(block)
    for n, command in enumerate(commands):
        follows = commands[n + 1].argv if n + 1 < len(commands) else None
        why = refusal(command.argv, follows)
        if why is not None:
            raise DocExampleError(f"{_shown(block.path)}:{command.line}: {why}")
    status: int | None = None
    env = _command_env()
    for n, command in enumerate(commands):
        where = f"{_shown(block.path)}:{command.line}"
        shown = shlex.join(command.argv)
        if command.argv[0] == "kipwire-broker" and background_serve(command.argv):
            servers.start(command.argv, where, cwd, env)
            status = 0
            continue
        if command.argv[0] == "curl" and shutil.which("curl") is None:
            pytest.skip(f"{where}: curl is not installed")
        argv = [servers.rewrite(a) for a in command.argv]
        expected = [servers.rewrite(line) for line in command.expected]
        if command.argv == ["echo", "$?"]:
            if status is None:
                raise DocExampleError(f"{where}: `echo $?` with no command before it")
            output, status = f"{status}\n", 0
        else:
            try:
                proc = subprocess.run(
                    argv,
                    cwd=cwd,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=STEP_TIMEOUT,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise DocExampleError(
                    f"{where}: `{shown}` did not finish in {STEP_TIMEOUT} s"
                ) from None
            except OSError as exc:
                raise DocExampleError(f"{where}: `{shown}` did not start: {exc}") from None
            output, status = proc.stdout, proc.returncode
            follows = commands[n + 1].argv if n + 1 < len(commands) else None
            if status != 0 and follows != ["echo", "$?"]:
                raise DocExampleError(
                    f"{where}: `{shown}` exited {status} (show it with `$ echo $?` if meant):"
                    f"\n{output}"
                )
        if expected and not output_matches(expected, output):
            raise DocExampleError(
                f"{where}: `{shown}` printed:\n{output}\nbut the doc shows:\n"
                + "\n".join(command.expected)
            )


def run_doc(path: Path, workdir: Path) -> int:
    """Run the examples of one doc in `workdir` (the current directory); how many ran."""
    namespace: dict = {"__name__": "doc_example"}
    saved_path = list(sys.path)
    saved_modules = set(sys.modules)
    servers = Servers()
    ran = 0
    try:
        for block in extract_blocks(path):
            if "no-run" in block.options:
                continue
            if block.lang == "python":
                _run_python(block, namespace)
                ran += 1
            elif block.lang in SHELL_LANGS and "$ " in block.text:
                _run_console(block, workdir, servers)
                ran += 1
    finally:
        servers.stop()
        sys.path[:] = saved_path
        # modules a doc imported from its own folder (a compiled package) go with the folder
        for name in set(sys.modules) - saved_modules:
            origin = getattr(sys.modules[name], "__file__", None)
            if origin and Path(origin).resolve().is_relative_to(workdir.resolve()):
                del sys.modules[name]
    return ran


@pytest.mark.parametrize("doc", DOCS, ids=_shown)
def test_examples_in_the_doc_run(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run_doc(doc, tmp_path)  # raises DocExampleError, naming the line, for a failing example


@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java, which is not installed")
@pytest.mark.requires("java")
def test_the_spark_sql_queries_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """captures.md's `python no-run spark` blocks, run after the doc's examples made the data."""
    doc = DOCS_DIR / "captures.md"
    spark_blocks = [b for b in extract_blocks(doc) if b.lang == "python" and "spark" in b.options]
    assert spark_blocks, "docs/captures.md shows no Spark SQL example"
    monkeypatch.chdir(tmp_path)
    run_doc(doc, tmp_path)
    for block in spark_blocks:
        code = compile("\n" * (block.line - 1) + block.text + "\n", str(block.path), "exec")
        with _time_limit(SPARK_TIMEOUT, f"the Spark block at {block.where}"):
            exec(code, {"__name__": "doc_example"})


@pytest.mark.parametrize("name", ["codec.md", "captures.md"])
def test_the_tours_teach_by_running_examples(name: str) -> None:
    blocks = [b for b in extract_blocks(DOCS_DIR / name) if "no-run" not in b.options]
    assert sum(b.lang == "python" for b in blocks) >= 5
    assert sum(b.lang == "console" and "$ " in b.text for b in blocks) >= 3


def test_docs_index_links_every_doc_and_the_readme_links_the_index() -> None:
    index = (DOCS_DIR / "README.md").read_text(encoding="utf-8")
    linked = {m["target"].split("#")[0] for m in _LINK.finditer(index)}
    assert {"codec.md", "captures.md"} <= linked
    assert {p.name for p in DOCS_DIR.glob("*.md")} - {"README.md"} <= linked
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/README.md" in {m["target"] for m in _LINK.finditer(readme)}


def _anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a doc's headings: lower case, punctuation dropped, dashes."""
    anchors, fenced = set(), False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#+ (.+)$", line)):
            anchors.add(re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-"))
    return anchors


def test_relative_links_lead_to_files_and_headings() -> None:
    broken = []
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in _LINK.finditer(line):
                target, _, anchor = m["target"].partition("#")
                if re.match(r"[a-z]+:", target):
                    continue  # a URL
                linked = doc.parent / target if target else doc
                if not linked.exists() or (anchor and anchor not in _anchors(linked)):
                    broken.append(f"{_shown(doc)}:{n}: {m['target']}")
    assert broken == []


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_kipwire_name_in_the_prose_exists() -> None:
    missing = []
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            missing += [
                f"{_shown(doc)}:{n}: {m['name']}"
                for m in _INLINE_NAME.finditer(line)
                if not _resolves(m["name"])
            ]
    assert missing == []


def _test_defined(reference: str) -> bool:
    """Whether `tests/...py::test_name` names a test function defined in that file."""
    path, _, name = reference.partition("::")
    test_file = ROOT / path
    if not test_file.is_file():
        return False
    text = test_file.read_text(encoding="utf-8")
    return re.search(rf"^\s*(?:async\s+)?def {re.escape(name)}\(", text, re.MULTILINE) is not None


def test_every_test_the_docs_cite_exists() -> None:
    missing, cited = [], 0
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in _TEST_REFERENCE.finditer(line):
                cited += 1
                if not _test_defined(m[0]):
                    missing.append(f"{_shown(doc)}:{n}: {m[0]}")
    assert cited > 0 and missing == []
    # the check itself: a test that is not there is caught
    assert not _test_defined("tests/test_docs.py::test_that_was_never_written")


def test_the_kip_notes_cover_every_rule_with_a_test() -> None:
    rows = {}
    for line in (DOCS_DIR / "kip-notes.md").read_text(encoding="utf-8").splitlines():
        if row := re.match(r"\| ([A-I]\.\d+) \|", line):
            rows[row[1]] = line
    # kip-rules.md numbers its rules 1-34 across sections A-I
    sections = {"A": 3, "B": 8, "C": 11, "D": 19, "E": 26, "F": 30, "G": 31, "H": 33, "I": 34}
    rules, first = [], 1
    for letter, last in sections.items():
        rules += [f"{letter}.{n}" for n in range(first, last + 1)]
        first = last + 1
    assert sorted(rows) == sorted(rules)
    assert [r for r in rules if not _TEST_REFERENCE.search(rows[r])] == []


def test_the_kip_notes_show_the_story_real_kafka_recorded() -> None:
    recorded = ROOT / "tests" / "realkafka" / "data" / "kip966_kafka_4_1.json"
    steps = json.loads(recorded.read_text(encoding="utf-8"))["steps"]
    text = (DOCS_DIR / "kip-notes.md").read_text(encoding="utf-8")
    shown = re.findall(
        r"^\| ([^|]+) \| ([^|]+) \| (-?\d+) \| ([^|]*) \| ([^|]*) \| ([^|]*) \|$",
        text,
        re.MULTILINE,
    )

    def ids(cell: str) -> list[int]:
        return [int(n) for n in cell.split(",") if n.strip()]

    assert [
        {
            "step": step,
            "action": action,
            "after": {
                "leader": int(leader),
                "isr": ids(isr),
                "elr": ids(elr),
                "last_known_elr": ids(last),
            },
        }
        for step, action, leader, isr, elr, last in shown
    ] == steps


def test_the_presets_table_is_what_the_presets_set() -> None:
    from kipwire.mockbroker import Semantics

    presets = [
        Semantics.KAFKA_3_9,
        Semantics.KAFKA_4_0,
        Semantics.KAFKA_4_1,
        Semantics.KAFKA_4_4,
        Semantics.KIP,
    ]
    rows = {}
    for line in (DOCS_DIR / "mockbroker.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 7:
            rows[cells[0].strip("`")] = cells[2:]
    flags = [f.name for f in dataclasses.fields(Semantics) if f.name != "name"]
    assert rows == {f: [str(getattr(p, f)) for p in presets] for f in flags}


def _documented_columns(text: str, table: str) -> list[tuple[str, str]]:
    """(column, type) rows of the Markdown table under the heading that names `table`."""
    heading = re.search(rf"^#+ .*`{table}`.*$", text, re.MULTILINE)
    assert heading is not None, f"docs/captures.md has no heading naming `{table}`"
    rows = []
    for line in text[heading.end() :].lstrip("\n").splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if re.fullmatch(r"`\w+`", cells[0]):
            rows.append((cells[0].strip("`"), cells[1].strip("`")))
    return rows


def _arrow_type(t: object) -> str:
    import pyarrow as pa

    if pa.types.is_list(t):
        return f"list<{t.value_type}>"
    return str(t)


def test_capture_table_columns_are_documented_as_the_schema_defines_them() -> None:
    schema = pytest.importorskip("kipwire.captures.engines.schema")
    text = (DOCS_DIR / "captures.md").read_text(encoding="utf-8")
    for name, table in schema.TABLES.items():
        assert _documented_columns(text, name) == [(f.name, _arrow_type(f.type)) for f in table]


def test_every_difference_kind_of_compare_is_documented() -> None:
    model = pytest.importorskip("kipwire.captures.comparing.model")
    text = (DOCS_DIR / "captures.md").read_text(encoding="utf-8")
    kinds = model.FUNCTIONAL_KINDS + model.INFORMATIONAL_KINDS
    assert [k for k in kinds if f"`{k}`" not in text] == []


# The harness itself: a doc that is wrong must fail, and say where.


def _doc(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "example.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_failing_python_block_names_the_doc_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    doc = _doc(tmp_path, "# t\n\n```python\nx = 1\n```\n\ntext\n\n```python\nassert x == 2\n```\n")
    with pytest.raises(DocExampleError, match=r"example\.md:10: the python block failed") as err:
        run_doc(doc, tmp_path)
    assert 'example.md", line 10' in str(err.value)


def test_command_output_is_compared_with_ellipses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    command = "$ python -m kipwire.codec describe NoOpRecord"
    right = f"```console\n{command}\nNoOpRecord (...): ...\n```\n"
    assert run_doc(_doc(tmp_path, right), tmp_path) == 1
    wrong = right.replace("NoOpRecord (", "NoOpRecords (")
    with pytest.raises(DocExampleError, match=r"example\.md:2: .* printed"):
        run_doc(_doc(tmp_path, wrong), tmp_path)


def test_a_failing_command_must_show_its_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    command = "$ python -m kipwire.codec describe NoSuchRecord\nunknown message ...\n"
    with pytest.raises(DocExampleError, match=r"example\.md:2: .* exited 2"):
        run_doc(_doc(tmp_path, f"```console\n{command}```\n"), tmp_path)
    shown = f"```console\n{command}$ echo $?\n2\n```\n"
    assert run_doc(_doc(tmp_path, shown), tmp_path) == 1


def test_commands_that_are_not_kipwires_or_start_spark_are_refused() -> None:
    assert refusal(["python", "-m", "kipwire.codec", "describe", "NoOpRecord"]) is None
    decode = ["kipwire-capture", "decode", "a.pcap", "--out", "o"]
    assert refusal([*decode, "--engine", "local"]) is None
    assert "--engine local" in refusal(decode)
    assert "no-run" in refusal(["spark-submit", "x.py"])
    assert "no-run" in refusal(["kipwire-broker", "serve"])
