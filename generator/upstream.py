"""`import-upstream`: the project's schema files as the version union of upstream schema folders.

Each message found in the given folders becomes one file holding every version any folder
defines. Only facts are written (names, types, version ranges, tags, defaults, flags); upstream
`about` text and comments are left behind. Where two folders define the same version they must
agree on the wire, except that a released folder (`--release`) wins over a pre-release snapshot;
the result is checked against every folder, version by version. Project-owned extension files
(`extensions/` beside the output by default) are merged in last, with `withdrawn.tsv` there.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .jsonc import loads
from .spec import FieldSpec, MessageSpec, SchemaError, parse_message
from .versions import NONE, OPEN, Versions
from .wire import describe_difference, renames, signature


class UpstreamError(ValueError):
    """The upstream folders cannot be merged: names the message, and the version or field."""


@dataclass(eq=False)  # sources are compared by identity
class Source:
    """One schema file from one folder."""

    path: Path
    rank: int  # position of its folder on the command line: later folders are newer
    doc: dict
    spec: MessageSpec
    release: bool = False  # from a folder of a Kafka release, not a pre-release snapshot
    valid: Versions = field(init=False)  # the versions it contributes (see check_agreement)

    def __post_init__(self) -> None:
        self.valid = self.spec.valid_versions


_FIELD_ORDER = ("name", "type", "versions", "nullableVersions", "taggedVersions", "tag",
                "flexibleVersions", "default", "ignorable", "mapKey", "entityType", "zeroCopy",
                "fields")  # fmt: skip


def load_sources(dirs: list[Path], releases: int = 0) -> dict[str, list[Source]]:
    """Every `*.json` under `dirs` (recursively), parsed and grouped by message name.

    The last `releases` folders hold a Kafka release's files; the others are snapshots.
    """
    grouped: dict[str, list[Source]] = {}
    for rank, top in enumerate(dirs):
        release = rank >= len(dirs) - releases
        if not top.is_dir():
            raise UpstreamError(f"{top}: not a directory")
        for path in sorted(top.rglob("*.json")):
            doc, spec = _read(path)
            same = grouped.setdefault(spec.name, [])
            if any(s.rank == rank for s in same):
                raise UpstreamError(f"{spec.name} is defined twice under {top}")
            same.append(Source(path, rank, doc, spec, release))
    return grouped


def _read(path: Path) -> tuple[dict, MessageSpec]:
    try:
        doc = loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise UpstreamError(f"{path}: not valid JSON: {e}") from None
    return doc, parse_message(doc, str(path))


def unstable_versions(groups: dict[str, list[Source]]) -> dict[tuple[int, int], int]:
    """(folder rank, apiKey) -> the version that folder marks as its unstable latest."""
    # Only request files carry the flag; the response of the same version is just as provisional.
    return {
        (s.rank, s.spec.api_key): s.valid.hi
        for sources in groups.values()
        for s in sources
        if s.spec.type == "request" and s.spec.latest_version_unstable and not s.valid.empty
    }


def check_agreement(
    name: str, sources: list[Source], unstable: dict[tuple[int, int], int]
) -> list[str]:
    """Fail when two sources define one stable version with different wire formats.

    An unstable latest version may still change, so a later folder's definition of it replaces
    the earlier one (which then stops covering it); a released definition replaces a pre-release
    snapshot's the same way. The returned notes say where that happened.
    """
    notes = []
    for a, b in itertools.combinations(sorted(sources, key=lambda s: s.rank), 2):
        for v in _iter(a.valid.intersect(b.valid)):
            sa, sb = signature(a.spec, v), signature(b.spec, v)
            if sa == sb:
                continue
            difference = describe_difference(sa, sb)
            renamed = renames(sa, sb)
            if renamed:
                # Names are not on the wire: upstream renamed a field, the later name wins.
                for path, new in renamed:
                    _rename(a.spec, path, new)
                    notes.append(f"{name}: {path} of {a.path} is {new} in {b.path}: renamed")
                continue
            if unstable.get((a.rank, a.spec.api_key)) == v == a.valid.hi:
                a.valid = Versions(a.valid.lo, v - 1) if v > a.valid.lo else NONE
                notes.append(
                    f"{name} v{v}: unstable in {a.path}, replaced by {b.path} ({difference})"
                )
                break
            if a.release != b.release:
                snapshot, shipped = (b, a) if a.release else (a, b)
                _drop(name, snapshot, v, f"differs from what shipped ({difference})")
                notes.append(f"{name} v{v}: {snapshot.path} replaced by release {shipped.path}")
                if snapshot.valid.empty or v > snapshot.valid.lo:
                    break
                continue
            raise UpstreamError(f"{name} v{v}: {a.path} and {b.path} disagree: {difference}")
    return notes


def _drop(name: str, source: Source, v: int, why: str) -> None:
    """Stop `source` covering version `v`, which must be its oldest or newest."""
    valid = source.valid
    if v == valid.lo == valid.hi:
        source.valid = NONE
    elif v == valid.hi:
        source.valid = Versions(valid.lo, v - 1)
    elif v == valid.lo:
        source.valid = Versions(v + 1, valid.hi)
    else:
        raise UpstreamError(f"{name} v{v} of {source.path} {why}, inside its versions {valid}")


def _rename(spec: MessageSpec, path: str, new: str) -> None:
    """Rename the field at dotted `path` of `spec` (struct objects are shared, as in the file)."""
    *parents, old = path.split(".")
    fields = spec.fields
    for part in parents:
        fields = next(f for f in fields if f.name == part).struct.fields
    next(f for f in fields if f.name == old).name = new


def merge(name: str, sources: list[Source], withdrawn: Versions = NONE) -> dict:
    """One schema document holding the union of the sources' versions."""
    # Oldest first, so that the newest source has the last word on non-wire facts.
    live = sorted((s for s in sources if not s.valid.empty), key=lambda s: (s.valid.hi, s.rank))
    if not live:
        raise UpstreamError(f"{name}: no source defines any version")
    valid = _union(name, "validVersions", [s.valid for s in live])
    ctx = _Context(name, valid.hi, [s for s in live if s.valid.hi == valid.hi])
    for key in ("type", "apiKey"):
        values = {json.dumps(s.doc.get(key)) for s in live}
        if len(values) > 1:
            raise UpstreamError(f"{name}: sources disagree on {key}: {sorted(values)}")
    head = live[-1].spec
    out: dict[str, Any] = {}
    if head.api_key is not None:
        out["apiKey"] = head.api_key
    out["type"] = head.type
    # Listeners are not wire facts; keep every one any source names, newest first.
    listeners = [x for s in reversed(live) for x in s.spec.listeners]
    if listeners:
        out["listeners"] = list(dict.fromkeys(listeners))
    out["name"] = name
    out["validVersions"] = str(valid)
    out["flexibleVersions"] = ctx.render(
        "flexibleVersions", [(s, s.spec.flexible_versions) for s in live]
    )
    deprecated = ctx.render("deprecatedVersions", [(s, s.spec.deprecated_versions) for s in live])
    if deprecated != "none":
        out["deprecatedVersions"] = deprecated
    if not withdrawn.empty:
        out["withdrawnVersions"] = str(withdrawn)
    # The newest folder has the last word: a snapshot's unstable v5 may be a release's stable one.
    if max(ctx.newest, key=lambda s: s.rank).spec.latest_version_unstable:
        out["latestVersionUnstable"] = True
    extension = _union(name, "extensionVersions", [s.spec.extension_versions for s in live])
    if not extension.empty:
        out["extensionVersions"] = str(extension)
    out["fields"] = ctx.fields([(s, s.doc.get("fields", []), s.spec.fields) for s in live], name)
    commons = [(s, {c["name"]: c for c in s.doc.get("commonStructs", [])}) for s in live]
    structs = []
    for cname in _merge_order([list(c) for _, c in reversed(commons)]):
        having = [(s, c[cname]) for s, c in commons if cname in c]
        structs.append(
            {
                "name": cname,
                "versions": ctx.render(
                    f"{cname}.versions", [(s, s.spec.structs[cname].versions) for s, _ in having]
                ),
                "fields": ctx.fields(
                    [(s, raw["fields"], s.spec.structs[cname].fields) for s, raw in having], cname
                ),
            }
        )
    if structs:
        out["commonStructs"] = structs
    return out


class _Context:
    """Merging state of one message: its name and newest version, for rendering ranges."""

    def __init__(self, name: str, hi: int, newest: list[Source]) -> None:
        self.name, self.hi, self.newest = name, hi, newest

    def render(self, what: str, ranges: list[tuple[Source, Versions]]) -> str:
        """The union of the ranges cut to each source's versions; `N+` if the newest says so."""
        union = _union(self.name, what, [r.intersect(s.valid) for s, r in ranges])
        if union.empty:
            return "none"
        open_ended = union.hi == self.hi and any(
            s in self.newest and r.hi == OPEN for s, r in ranges
        )
        return f"{union.lo}+" if open_ended else str(union)

    def fields(self, entries: list[tuple[Source, list[dict], list[FieldSpec]]], where: str) -> list:
        """Merge the field lists of one struct as the sources declare it."""
        for _, raws, specs in entries:
            if len(raws) != len(specs):  # the parser keeps declaration order, one for one
                raise UpstreamError(f"{self.name}: {where}: field lists out of step")
        order = _merge_order([[f.name for f in specs] for _, _, specs in reversed(entries)])
        out = []
        for fname in order:
            items = [
                (s, raw, f)
                for s, raws, specs in entries
                for raw, f in zip(raws, specs, strict=True)
                if f.name == fname
            ]
            merged = self.field(items, f"{where}.{fname}")
            if merged is not None:
                out.append(merged)
        return out

    def field(self, items: list[tuple[Source, dict, FieldSpec]], where: str) -> dict | None:
        """One field merged over the sources that declare it; None if no version has it."""
        present = [(s, raw, f) for s, raw, f in items if not f.versions.intersect(s.valid).empty]
        if not present:
            return None  # declared, but outside every source's validVersions: never on the wire
        _, raw_new, f_new = present[-1]
        for attr, value in (
            ("type", lambda f: str(f.type)),
            ("tag", lambda f: f.tag),
            ("flexibleVersions", lambda f: f.flexible_versions),
            ("default", _default_value),
        ):
            seen = {repr(value(f)) for _, _, f in present}
            if len(seen) > 1:
                raise UpstreamError(f"{self.name}: {where}: sources disagree on {attr}: {seen}")
        if len({"fields" in raw for _, raw, _ in present}) > 1:
            raise UpstreamError(f"{self.name}: {where}: struct is inline in some sources only")
        out: dict[str, Any] = {"name": f_new.name, "type": str(f_new.type)}
        out["versions"] = self.render(f"{where}.versions", [(s, f.versions) for s, _, f in present])
        nullable = self.render(
            f"{where}.nullableVersions", [(s, f.nullable_versions) for s, _, f in present]
        )
        if nullable != "none":
            out["nullableVersions"] = nullable
        if f_new.tag is not None:
            out["taggedVersions"] = self.render(
                f"{where}.taggedVersions", [(s, f.tagged_versions) for s, _, f in present]
            )
            out["tag"] = f_new.tag
        if f_new.flexible_versions is not None:
            out["flexibleVersions"] = str(f_new.flexible_versions)
        if f_new.default_text != "":
            out["default"] = f_new.default_text
        if f_new.ignorable:
            out["ignorable"] = True
        if f_new.map_key:
            out["mapKey"] = True
        if f_new.entity_type is not None:
            out["entityType"] = f_new.entity_type
        if f_new.zero_copy:
            out["zeroCopy"] = True
        if "fields" in raw_new:
            entries = [(s, raw["fields"], f.struct.fields) for s, raw, f in present]
            out["fields"] = self.fields(entries, where)
        return {k: out[k] for k in _FIELD_ORDER if k in out}


def verify(name: str, doc: dict, sources: list[Source]) -> MessageSpec:
    """Parse the merged document and check it against every source, version by version."""
    try:
        merged = parse_message(doc, f"merged {name}")
    except SchemaError as e:
        raise UpstreamError(f"{name}: the merged schema is invalid: {e}") from None
    for s in sources:
        for v in _iter(s.valid):
            want, got = signature(s.spec, v), signature(merged, v)
            if want != got:
                raise UpstreamError(
                    f"{name} v{v}: merged schema differs from {s.path}: "
                    + describe_difference(want, got)
                )
    return merged


def load_extensions(
    folder: Path, rank: int, upstream: dict[str, list[Source]], notes: list[str] | None = None
) -> None:
    """Add the project's files in `folder`: extension versions, or whole messages none defines."""
    notes = [] if notes is None else notes
    for path in sorted(folder.glob("*.json")):
        doc, spec = _read(path)
        ext = spec.extension_versions
        if ext.empty and spec.name not in upstream:
            # A format Kafka ships in code but not as a schema file (control record key/value).
            upstream[spec.name] = [Source(path, rank, doc, spec)]
            continue
        if not ext.empty and ext == spec.valid_versions and ext.lo == 0:
            _add_extension_api(path, Source(path, rank, doc, spec), upstream, notes)
            continue
        if ext.empty or spec.valid_versions != ext:
            raise UpstreamError(
                f"{path}: an extension file defines only its extensionVersions "
                f"(validVersions {spec.valid_versions}, extensionVersions {ext})"
            )
        shipped = [s.valid.hi for s in upstream.get(spec.name, []) if not s.valid.empty]
        if not shipped:
            raise UpstreamError(f"{path}: extends {spec.name}, which no upstream folder defines")
        if ext.lo <= max(shipped):
            raise UpstreamError(
                f"{path}: extension v{ext} of {spec.name} collides with shipped versions "
                f"(up to v{max(shipped)})"
            )
        upstream[spec.name].append(Source(path, rank, doc, spec))


def _add_extension_api(
    path: Path, ext: Source, upstream: dict[str, list[Source]], notes: list[str]
) -> None:
    """A message only a KIP defines, under an API key no upstream folder uses.

    A pre-release snapshot may hold a draft of it (GetReplicaLogInfo was merged to trunk and
    reverted before any release): the project's definition replaces the draft. A release that
    ships the message, or any upstream use of the key, is refused.
    """
    name, key = ext.spec.name, ext.spec.api_key
    drafts = upstream.get(name, [])
    shipped = [s for s in drafts if s.release]
    if shipped:
        raise UpstreamError(f"{path}: {name} is shipped by {shipped[0].path}: not an extension")
    users = sorted(
        str(s.path)
        for sources in upstream.values()
        for s in sources
        if s.spec.api_key == key and s.spec.type == ext.spec.type and s.spec.name != name
    )
    if key is not None and users:
        raise UpstreamError(f"{path}: apiKey {key} of {name} is used upstream by {users[0]}")
    for draft in drafts:
        notes.append(f"{name}: the draft in {draft.path} is replaced by the extension {path}")
    upstream[name] = [ext]


def load_withdrawn(path: Path, upstream: dict[str, list[Source]]) -> dict[str, Versions]:
    """`withdrawn.tsv` (message, versions, why): early-access versions no release keeps."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if not line.strip():
            continue
        name, text, *_ = line.split("\t")
        versions = Versions.parse(text)
        sources = upstream.get(name)
        if not sources:
            raise UpstreamError(f"{path}: {name} is not defined upstream")
        released = [s.valid.lo for s in sources if s.release and not s.valid.empty]
        if not released or versions.hi >= min(released):
            raise UpstreamError(f"{path}: {name} v{versions} is in a release folder's versions")
        out[name] = versions
    return out


def render_json(doc: dict) -> str:
    """The bytes written for one schema document: stable and diff-friendly."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def import_upstream(
    dirs: list[Path],
    out: Path,
    extensions: Path | None = None,
    notes: list[str] | None = None,
    releases: list[Path] | None = None,
) -> list[str]:
    """Write one merged schema per message found under `dirs` into `out`; return the names.

    `releases` are folders of Kafka releases, newer than every folder of `dirs`: where they
    disagree with a pre-release snapshot, the release wins.
    """
    notes = [] if notes is None else notes
    releases = releases or []
    sources = load_sources([*dirs, *releases], len(releases))
    ext_dir = out / "extensions" if extensions is None else extensions
    withdrawn: dict[str, Versions] = {}
    if ext_dir.is_dir():
        load_extensions(ext_dir, len(dirs) + len(releases), sources, notes)
        if (ext_dir / "withdrawn.tsv").is_file():
            withdrawn = load_withdrawn(ext_dir / "withdrawn.tsv", sources)
    unstable = unstable_versions(sources)
    docs = {}
    for name in sorted(sources):
        notes.extend(check_agreement(name, sources[name], unstable))
        docs[name] = merge(name, sources[name], withdrawn.get(name, NONE))
        verify(name, docs[name], sources[name])
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, doc in docs.items():
        fname = f"{name}.json"
        (out / fname).write_text(render_json(doc), encoding="utf-8")
        written.append(fname)
    return written


def import_errors(tsv: Path, out: Path) -> str:
    """Write `errors.tsv` (code, name, retriable) from Kafka's error table; return its name."""
    rows = [line.split("\t") for line in tsv.read_text(encoding="utf-8").splitlines() if line]
    header = rows[0]
    try:
        cols = [header.index(c) for c in ("code", "name", "retriable")]
    except ValueError:
        raise UpstreamError(f"{tsv}: needs columns code, name, retriable") from None
    lines = ["\t".join(row[i] for i in cols) for row in rows]
    (out / "errors.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "errors.tsv"


def main(argv: list[str] | None = None) -> int:
    """CLI: `import-upstream DIR... [--release DIR]... [--out DIR] [--extensions DIR] ...`."""
    parser = argparse.ArgumentParser(
        prog="python -m kipwire.generator import-upstream",
        description="Write the version union of Kafka schema folders as the project's schemas.",
    )
    parser.add_argument("dirs", nargs="+", type=Path, help="schema folders, oldest first")
    parser.add_argument(
        "--release",
        type=Path,
        action="append",
        default=[],
        help="a folder of a Kafka release (newer than DIR...); it wins over pre-release snapshots",
    )
    parser.add_argument("--out", type=Path, default=Path("jsonschemas"))
    parser.add_argument(
        "--extensions", type=Path, help="project extension files (default: OUT/extensions)"
    )
    parser.add_argument("--errors", type=Path, help="Kafka's error table to copy the facts of")
    args = parser.parse_args(argv)
    try:
        notes: list[str] = []
        written = import_upstream(args.dirs, args.out, args.extensions, notes, args.release)
        for note in notes:
            print(f"import-upstream: note: {note}")
        if args.errors:
            written.append(import_errors(args.errors, args.out))
    except (UpstreamError, SchemaError) as e:
        print(f"import-upstream: {e}", file=sys.stderr)
        return 1
    stale = sorted(p.name for p in args.out.glob("*.json") if p.name not in written)
    for name in stale:
        print(f"import-upstream: warning: {args.out / name} was not produced by this run")
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def _default_value(f: FieldSpec) -> Any:
    return "null" if f.default_text == "null" else f.default


def _iter(v: Versions) -> range:
    return range(v.lo, v.hi + 1) if not v.empty else range(0)


def _union(name: str, what: str, ranges: list[Versions]) -> Versions:
    """The union of ranges, which must be one contiguous range."""
    spans = sorted((r.lo, r.hi) for r in ranges if not r.empty)
    if not spans:
        return NONE
    lo, hi = spans[0]
    for a, b in spans[1:]:
        if a > hi + 1:
            raise UpstreamError(
                f"{name}: {what}: versions {hi + 1}-{a - 1} are missing between "
                f"the sources' ranges {[str(r) for r in ranges]}"
            )
        hi = max(hi, b)
    return Versions(lo, hi)


def _merge_order(lists: list[list[str]]) -> list[str]:
    """Names of every list, keeping each list's order: the first list leads."""
    result: list[str] = []
    for names in lists:
        for i, n in enumerate(names):
            if n in result:
                continue
            # A name missing so far goes right after its predecessor in its own list.
            before = next((names[j] for j in range(i - 1, -1, -1) if names[j] in result), None)
            result.insert(0 if before is None else result.index(before) + 1, n)
    return result
