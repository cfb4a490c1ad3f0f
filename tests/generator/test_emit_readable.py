"""Generated code a human can read: names from content, stable diffs, short lines, about text."""

from __future__ import annotations

import difflib
import json
import re
import shutil
from pathlib import Path

from kipwire.generator.build import generate
from kipwire.generator.layout import WIDTH

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = ROOT / "codec" / "messages"
FUNCTION_NAME = re.compile(r"_(parse|tags|build|default)_[a-z0-9_]+?_v\d+(_v\d+)?")
TOP_LEVEL_NAME = re.compile(r"(?:def )?(\w+)")


def test_every_generated_function_is_named_after_its_struct_and_versions() -> None:
    checked = 0
    for path in sorted(MESSAGES.glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("def "):
                continue
            name = line[4 : line.index("(")]
            match = FUNCTION_NAME.fullmatch(name)
            assert match, f"{path.name}: {name}"
            lo = re.search(r"_v(\d+)(?:_v\d+)?$", name).group(1)
            hi = name.rsplit("_v", 1)[1]
            comment = lines[i - 1]
            # "# Parse FetchTopic, versions 12-15." names the versions the function serves
            versions = f"version {lo}" if lo == hi else rf"versions {lo}\b.*\b{hi}"
            assert re.fullmatch(rf"# [A-Z].*, {versions}\.", comment), (
                f"{path.name}: {name} has no comment naming its struct and versions: {comment!r}"
            )
            checked += 1
    assert checked > 1000


def test_fetch_request_functions_say_what_they_handle() -> None:
    source = (MESSAGES / "fetch_request.py").read_text(encoding="utf-8")
    assert (
        "# Parse FetchRequest, versions 15-16.\ndef _parse_fetch_request_v15_v16(b, p):" in source
    )
    assert re.search(r"# Parse FetchTopic, versions? [\d-]+\.\ndef _parse_fetch_topic_v", source)
    assert "PARSE = {\n    0: _parse_fetch_request_v0_v2,\n" in source


def test_generated_lines_fit_the_line_length() -> None:
    for path in sorted(MESSAGES.glob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert len(line) <= WIDTH, f"{path.name}:{n} is {len(line)} characters"


def _owners(source: str) -> list[str]:
    """The top-level definition each line belongs to (a comment belongs to the def below it)."""
    lines = source.splitlines()
    owners = [""] * len(lines)
    current = ""
    for i, line in enumerate(lines):
        if line[:1].isalpha() or line.startswith("_"):
            match = TOP_LEVEL_NAME.match(line)
            assert match is not None
            current = match.group(1)
        owners[i] = current
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("#") and i + 1 < len(lines):
            owners[i] = owners[i + 1]
    return owners


def _changed_owners(old: str, new: str) -> set[str]:
    old_owners, new_owners = _owners(old), _owners(new)
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    changed = set()
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag != "equal":
            changed.update(old_owners[a0:a1])
            changed.update(new_owners[b0:b1])
    return changed


def _defs(source: str) -> set[str]:
    return set(re.findall(r"^def (\w+)\(", source, re.M))


def test_adding_a_tagged_field_to_one_struct_changes_only_that_struct(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    shutil.copy(ROOT / "jsonschemas" / "FetchRequest.json", schemas)
    before = generate([schemas])["fetch_request.py"]

    doc = json.loads((schemas / "FetchRequest.json").read_text(encoding="utf-8"))
    topics = next(f for f in doc["fields"] if f["name"] == "Topics")
    assert topics["type"] == "[]FetchTopic"
    topics["fields"].append(
        {
            "name": "LagHint",
            "type": "int64",
            "versions": "12+",
            "taggedVersions": "12+",
            "tag": 0,
            "default": "-1",
        }
    )
    (schemas / "FetchRequest.json").write_text(json.dumps(doc), encoding="utf-8")
    after = generate([schemas])["fetch_request.py"]

    assert "lag_hint" in after and "lag_hint" not in before
    changed = _changed_owners(before, after)
    assert changed, "the new field must show in the generated code"
    outside = {o for o in changed if "fetch_topic" not in o and o != "SCHEMA"}
    assert not outside, f"a FetchTopic field changed code of other structs: {sorted(outside)}"
    assert _defs(before) <= _defs(after), "no function was renamed or removed"
    # FetchTopic's first tagged field gives it a tagged-field reader of its own.
    assert _defs(after) - _defs(before) == {"_tags_fetch_topic_v12_v18"}


def test_a_new_version_split_renames_only_the_struct_and_its_callers(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    shutil.copy(ROOT / "jsonschemas" / "FetchRequest.json", schemas)
    before = generate([schemas])["fetch_request.py"]
    doc = json.loads((schemas / "FetchRequest.json").read_text(encoding="utf-8"))
    forgotten = next(f for f in doc["fields"] if f["name"] == "ForgottenTopicsData")
    # A field in v16+ only splits ForgottenTopic's parse and build functions at 16.
    forgotten["fields"].append({"name": "Reason", "type": "string", "versions": "16+"})
    (schemas / "FetchRequest.json").write_text(json.dumps(doc), encoding="utf-8")
    after = generate([schemas])["fetch_request.py"]

    gone, added = _defs(before) - _defs(after), _defs(after) - _defs(before)
    assert gone and added
    renamed = {re.sub(r"_v\d+(_v\d+)?$", "", name) for name in gone | added}
    assert renamed <= {
        "_parse_forgotten_topic",
        "_parse_fetch_request",
        "_build_forgotten_topic",
        "_build_fetch_request",
    }, renamed
    assert _changed_owners(before, after) - {"SCHEMA"} <= {
        o
        for o in _owners(before) + _owners(after)
        if "forgotten_topic" in o or "fetch_request" in o
    } | {"PARSE", "BUILD"}


def test_build_and_compile_output_say_which_command_wrote_them() -> None:
    folder = [ROOT / "jsonschemas"]
    built = generate(folder)
    compiled = generate(folder, command="compile")
    for name in ("__init__.py", "_index.py", "_enums.py", "fetch_request.py"):
        assert built[name].startswith("# Code generated by python -m kipwire.generator build.")
        assert compiled[name].startswith("# Code generated by python -m kipwire.generator compile.")
    committed = (MESSAGES / "fetch_request.py").read_text(encoding="utf-8")
    assert committed == built["fetch_request.py"]


def test_every_generated_file_is_marked_generated() -> None:
    # The convention tools recognise (Go's, which GitHub and linters also read): first line.
    marker = re.compile(r"^# Code generated .* DO NOT EDIT\.$")
    files = sorted(MESSAGES.glob("*.py"))
    assert len(files) > 200
    for path in files:
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        assert marker.match(first), f"{path.name}: {first!r}"
    attributes = (ROOT / ".gitattributes").read_text(encoding="utf-8").splitlines()
    assert "codec/messages/** linguist-generated=true" in attributes


def test_the_projects_own_about_text_is_emitted(tmp_path: Path) -> None:
    schema = {
        "apiKey": 1000,
        "type": "request",
        "name": "NoteRequest",
        "validVersions": "0-1",
        "flexibleVersions": "1+",
        "about": 'Asks the mock broker to write a note """ into its log.',
        "fields": [
            {"name": "Text", "type": "string", "versions": "0+", "about": "What to write. " * 20},
            {"name": "Level", "type": "int8", "versions": "0+"},
        ],
    }
    (tmp_path / "NoteRequest.json").write_text(json.dumps(schema), encoding="utf-8")
    source = generate([tmp_path])["note_request.py"]
    assert "Asks the mock broker to write a note" in source
    assert "#   Text: What to write." in source
    assert "Level:" not in source  # no about, no comment
    assert max(map(len, source.splitlines())) <= WIDTH
    namespace: dict = {}
    exec(compile(source, "note_request.py", "exec"), namespace)  # the escaped quotes still parse
    assert "write a note" in namespace["__doc__"]
    without = generate([ROOT / "jsonschemas"])["fetch_request.py"]
    assert without.splitlines()[2] == '"""FetchRequest: request, api key 1, versions 0-18."""'
