"""`diff-upstream`: what a Kafka release's schema files change against the project's schemas.

Reads a folder of Kafka's schema files (searched recursively) or a jar that carries them
(kafka-clients keeps them under `common/message/`), and compares each message with the one of the
same name in `jsonschemas/` (or `--against DIR`): API keys Kafka numbers differently, new API keys
and messages, new versions (with what each adds), versions whose wire format differs, fields
renamed without a byte changing, and versions the release no longer defines. The project's own
extension versions are left out of the comparison: Kafka never ships them. Exit status 0 when
nothing differs, 1 when something does, 2 when the input cannot be read.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .jsonc import loads
from .spec import MessageSpec, SchemaError, parse_message
from .versions import NONE, Versions
from .wire import describe_difference, renames, signature


@dataclass
class Report:
    """The differences found, by kind; each entry is one line of the printed report."""

    renumbered: list[str] = field(default_factory=list)
    new_keys: list[str] = field(default_factory=list)
    new_messages: list[str] = field(default_factory=list)
    new_versions: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    SECTIONS = (
        ("renumbered", "API keys that mean another API (renumbered or renamed)"),
        ("new_keys", "new API keys"),
        ("new_messages", "new messages"),
        ("new_versions", "new versions"),
        ("changed", "versions whose wire format differs"),
        ("renamed", "fields renamed (same bytes)"),
        ("dropped", "versions the upstream no longer defines (kept by the project)"),
    )

    @property
    def empty(self) -> bool:
        """True when upstream and the project agree on everything compared."""
        return not any(getattr(self, attr) for attr, _ in self.SECTIONS)

    def render(self) -> str:
        """The report as text: one titled section per kind of difference found."""
        out = []
        for attr, title in self.SECTIONS:
            lines = getattr(self, attr)
            if lines:
                out.append(f"{title} ({len(lines)}):")
                out += [f"  {line}" for line in lines]
        return "\n".join(out) + "\n" if out else "no differences\n"


def read_upstream(source: Path) -> dict[str, MessageSpec]:
    """Every schema file in a folder (recursively) or a jar, parsed, by message name."""
    texts: list[tuple[str, str]] = []
    if source.is_dir():
        texts = [(str(p), p.read_text(encoding="utf-8")) for p in sorted(source.rglob("*.json"))]
    elif zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as jar:
            texts = [
                (f"{source}!{n}", jar.read(n).decode("utf-8"))
                for n in sorted(jar.namelist())
                if n.endswith(".json") and "/message/" in f"/{n}"
            ]
    else:
        raise SchemaError(str(source), "", "neither a folder nor a jar of schema files")
    specs: dict[str, MessageSpec] = {}
    for where, text in texts:
        try:
            doc = loads(text)
        except ValueError as e:
            raise SchemaError(where, "", f"not valid JSON: {e}") from None
        spec = parse_message(doc, where)
        specs[spec.name] = spec
    if not specs:
        raise SchemaError(str(source), "", "holds no schema files")
    return specs


def read_project(folder: Path) -> dict[str, MessageSpec]:
    """The project's schemas (the top level of `folder`), by message name."""
    specs = {}
    for path in sorted(folder.glob("*.json")):
        spec = parse_message(loads(path.read_text(encoding="utf-8")), str(path))
        specs[spec.name] = spec
    return specs


def _shipped(spec: MessageSpec) -> Versions:
    """The versions of a project message that are not the project's own extension."""
    valid, ext = spec.valid_versions, spec.extension_versions
    if ext.empty:
        return valid
    return NONE if ext.lo <= valid.lo else Versions(valid.lo, ext.lo - 1)


def _span(v: Versions) -> str:
    return "none" if v.empty else (f"v{v.lo}" if v.lo == v.hi else f"v{v.lo}-v{v.hi}")


def _requests(specs: dict[str, MessageSpec]) -> dict[int, str]:
    """API key -> request name; of two names for one key, the one with the newer versions."""
    best: dict[int, MessageSpec] = {}
    for s in specs.values():
        if s.type == "request" and s.api_key is not None and not _shipped(s).empty:
            held = best.get(s.api_key)
            if held is None or (s.valid_versions.hi, s.name) > (held.valid_versions.hi, held.name):
                best[s.api_key] = s
    return {k: s.name for k, s in best.items()}


def compare(upstream: dict[str, MessageSpec], project: dict[str, MessageSpec]) -> Report:
    """What `upstream` changes against `project`."""
    report = Report()
    theirs_keys, ours_keys = _requests(upstream), _requests(project)
    for key in sorted(theirs_keys):
        name = theirs_keys[key]
        if key not in ours_keys:
            report.new_keys.append(f"{key} {name.removesuffix('Request')}")
        elif ours_keys[key] != name:
            report.renumbered.append(
                f"{key}: {ours_keys[key].removesuffix('Request')} in the project, "
                f"{name.removesuffix('Request')} upstream"
            )
    for name in sorted(upstream):
        theirs = upstream[name]
        ours = project.get(name)
        valid = theirs.valid_versions
        if ours is None:
            key = "" if theirs.api_key is None else f", apiKey {theirs.api_key}"
            report.new_messages.append(f"{name} ({theirs.type}{key}, {_span(valid)})")
            continue
        if ours.api_key != theirs.api_key:
            report.renumbered.append(
                f"{name}: apiKey {ours.api_key} in the project, {theirs.api_key} upstream"
            )
        _compare_versions(name, theirs, ours, report)
    return report


def _compare_versions(name: str, theirs: MessageSpec, ours: MessageSpec, report: Report) -> None:
    valid, mine = theirs.valid_versions, _shipped(ours)
    if valid.empty:
        return
    for v in range(valid.lo, valid.hi + 1):
        want = signature(theirs, v)
        if mine.empty or v > mine.hi:
            before = signature(theirs, v - 1) if v - 1 in valid else None
            if before is None and not mine.empty and v - 1 == mine.hi:
                before = signature(ours, v - 1)
            what = ""
            if before is not None:
                what = f": {describe_difference(before, want) or f'the same bytes as v{v - 1}'}"
            report.new_versions.append(f"{name} v{v}{what}")
            continue
        if v < mine.lo:
            report.new_versions.append(f"{name} v{v} (older than the project's oldest)")
            continue
        got = signature(ours, v)
        if got == want:
            continue
        renamed = renames(got, want)
        if renamed:
            for path, new in renamed:
                report.renamed.append(f"{name} v{v}: {path} is {new} upstream")
        else:
            report.changed.append(f"{name} v{v}: {describe_difference(got, want)}")
    if not mine.empty and (mine.lo < valid.lo or mine.hi > valid.hi):
        gone = [v for v in range(mine.lo, mine.hi + 1) if v not in valid]
        report.dropped.append(f"{name} {_span(Versions(gone[0], gone[-1]))}" if gone else name)


def main(argv: list[str] | None = None) -> int:
    """CLI: `diff-upstream SOURCE [--against DIR]`."""
    parser = argparse.ArgumentParser(
        prog="python -m kipwire.generator diff-upstream",
        description="Show what a Kafka release's schema files change against the project's.",
    )
    parser.add_argument("source", type=Path, help="a folder of Kafka's schema files, or a jar")
    default = Path(__file__).resolve().parent.parent / "jsonschemas"
    parser.add_argument(
        "--against", type=Path, default=default, help="the schemas to compare with (jsonschemas/)"
    )
    args = parser.parse_args(argv)
    try:
        upstream = read_upstream(args.source)
        if not args.against.is_dir():
            raise SchemaError(str(args.against), "", "not a folder")
        report = compare(upstream, read_project(args.against))
    except (SchemaError, OSError, zipfile.BadZipFile) as e:
        print(f"diff-upstream: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(report.render())
    return 0 if report.empty else 1
