"""What the parse and build emitters share: wire-type tables, and the module's entries.

Every function and constant is named after its struct and the versions that share it
(`_parse_fetch_topic_v12_v15`, `_build_fetch_topic_v12_keys`), never after a counter: a change to
one struct renames only that struct's code and its callers', and the diff stays near it. Equal
code is emitted once: a function serves every version whose wire format it reads or writes.
"""

from __future__ import annotations

import re
import textwrap
import uuid
from collections.abc import Callable
from typing import Any

from .layout import WIDTH, Group, flat_text, render, wrap_call
from .spec import FieldSpec, MessageSpec, SchemaError, StructSpec, snake_case

FIXED_CODES = {
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
    "float64": ("d", 8),
    "bool": ("?", 1),
    "uuid": ("16s", 16),
}

READERS = {
    # (type, compact, nullable) -> reader function in codec._wire
    ("string", False, False): "read_string",
    ("string", False, True): "read_nullable_string",
    ("string", True, False): "read_compact_string",
    ("string", True, True): "read_compact_nullable_string",
    ("bytes", False, False): "read_bytes",
    ("bytes", False, True): "read_nullable_bytes",
    ("bytes", True, False): "read_compact_bytes",
    ("bytes", True, True): "read_compact_nullable_bytes",
}
WRITERS = {key: "write_" + name[len("read_") :] for key, name in READERS.items()}
# Element type -> codec._wire dict of cached `Struct(f">{n}{code}").unpack_from` by count n.
ARRAY_UNPACKERS = {
    "int8": "UNPACK_INT8S",
    "int16": "UNPACK_INT16S",
    "int32": "UNPACK_INT32S",
    "int64": "UNPACK_INT64S",
    "uint16": "UNPACK_UINT16S",
    "uint32": "UNPACK_UINT32S",
    "float64": "UNPACK_FLOAT64S",
    "bool": "UNPACK_BOOLS",
}


def literal(value: Any) -> str:
    """Python source for a default value."""
    if isinstance(value, uuid.UUID):
        return "ZERO_UUID" if value.int == 0 else f"UUID(int={value.int})"
    if isinstance(value, list):
        return "[]"
    if isinstance(value, dict):
        return "{}"
    return repr(value)


class Version:
    """What one version of the message looks like for a field."""

    def __init__(self, spec: MessageSpec, version: int) -> None:
        self.version = version
        self.flexible = version in spec.flexible_versions

    def compact(self, f: FieldSpec) -> bool:
        """True when the field is written in its compact (varint length) form."""
        if not self.flexible:
            return False
        return f.flexible_versions is None or self.version in f.flexible_versions

    def nullable(self, f: FieldSpec) -> bool:
        """True when the field may be null in this version."""
        return self.version in f.nullable_versions

    def tagged(self, f: FieldSpec) -> bool:
        """True when the field is a tagged field in this version."""
        return self.version in f.tagged_versions


def kind_of(f: FieldSpec) -> str:
    """A field's wire kind, records read as bytes."""
    k = f.type.kind
    return "bytes" if k == "records" else k


class _Entry:
    """One emitted function or constant: its kind, its struct, the versions that share it.

    Sources refer to other entries by token until `ModuleEmitter.finish` names each entry
    after its struct and versions (`_parse_fetch_topic_v12_v15`, `_build_fetch_topic_v12_keys`).
    """

    def __init__(self, kind: str, suffix: str, struct: StructSpec, source: str | Group) -> None:
        self.kind = kind
        # "" for a function; for a constant, what it holds ("_keys", "_fields", ...).
        self.suffix = suffix
        self.struct = struct
        self.source = source
        self.versions: set[int] = set()


# What each kind of function does, for its one-line comment.
_KIND_COMMENTS = {
    "parse": "Parse {struct}",
    "tags": "Parse the tagged fields of {struct}",
    "build": "Build {struct}",
    "default": "The default {struct}",
}
_TOKEN = re.compile(r"__E(\d+)__")


class ModuleEmitter:
    """Collects deduplicated functions and constants for one message module."""

    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        self.entries: list[_Entry] = []
        self.by_content: dict[tuple[str, str, str, str], str] = {}
        self.struct_consts: dict[str, str] = {}
        self.empty_default = False
        self.imports: set[str] = {"Container"}
        # Speed helpers taken straight from codec._wire (not re-exported by codec._runtime).
        self.wire_imports: set[str] = set()
        self.memo: dict[tuple[str, str, int], str] = {}

    # -- shared machinery -------------------------------------------------------------------

    def use(self, *names: str) -> None:
        """Import these names from codec._runtime into the module."""
        self.imports.update(names)

    def _entry(
        self, kind: str, suffix: str, struct: StructSpec, version: int, source: str | Group
    ) -> str:
        """Register an entry used at `version` and return its token; equal ones are shared.

        Identity is the kind, the struct and the content (other entries included, by token),
        so an entry's final name, made of its struct and the versions that share it, changes
        only when that struct or one it refers to changes.
        """
        key = (kind, suffix, struct.name, flat_text(source))
        token = self.by_content.get(key)
        if token is None:
            token = f"__E{len(self.entries)}__"
            if isinstance(source, str):
                source = source.replace("NAME", token)
            self.entries.append(_Entry(kind, suffix, struct, source))
            self.by_content[key] = token
        self.entries[int(token[3:-2])].versions.add(version)
        return token

    def func(self, kind: str, struct: StructSpec, version: int, source: str) -> str:
        """A function whose source names itself `NAME`; returns its token."""
        return self._entry(kind, "", struct, version, source)

    def const(
        self, kind: str, suffix: str, struct: StructSpec, version: int, source: str | Group
    ) -> str:
        """A module constant the `kind` function of `struct` reads; returns its token."""
        return self._entry(kind, suffix, struct, version, source)

    def empty(self) -> str:
        """The shared `{}` a builder reads a missing struct field as."""
        self.empty_default = True
        return "_EMPTY"

    def fixed(self, fmt: str, op: str) -> str:
        """The module constant holding `Struct(fmt).<op>` (`unpack_from`, `pack`, ...)."""
        key = f"{op}:{fmt}"
        if key not in self.struct_consts:
            self.use("Struct")
            prefix = {"unpack_from": "_unpack_", "iter_unpack": "_iter_unpack_"}.get(op, "_pack_")
            self.struct_consts[key] = prefix + _format_name(fmt)
        return self.struct_consts[key]

    def guarded(
        self,
        kind: str,
        struct: StructSpec,
        version: int,
        head: tuple[str, str],
        body: list[str],
        failure: str,
    ) -> str:
        """A function whose body runs in one try block; any failure becomes `failure`."""
        signature, init = head
        src = [signature, f"    {init}", "    try:"]
        src += ["        " + line for line in body]
        src += ["    except Exception as x:", f"        raise {failure} from None"]
        return self.func(kind, struct, version, "\n".join(src))

    def finish(self) -> tuple[list[str], dict[str, str]]:
        """The source blocks in definition order, and every token's final name."""
        names = {}
        for i, entry in enumerate(self.entries):
            lo, hi = min(entry.versions), max(entry.versions)
            span = f"v{lo}" if lo == hi else f"v{lo}_v{hi}"
            struct = snake_case(entry.struct.name)
            # StopReplicaTopicV1 at version 2 is `..._topic_v1__v2`, not `..._topic_v1_v2`.
            struct += "_" if re.search(r"_v\d+$", struct) else ""
            names[f"__E{i}__"] = f"_{entry.kind}_{struct}_{span}{entry.suffix}"
        if len(set(names.values())) < len(names):
            twice = sorted(n for n in names.values() if list(names.values()).count(n) > 1)
            raise SchemaError(self.spec.source, self.spec.name, f"struct names clash: {twice}")

        def resolve(text: str) -> str:
            return _TOKEN.sub(lambda m: names[m.group(0)], text)

        blocks: list[str] = []
        consts: list[str] = []
        for i, entry in enumerate(self.entries):
            if entry.suffix:
                source = _resolved(entry.source, resolve)
                text = render(source, 0, f"{names[f'__E{i}__']} = ")
                # A constant computed by a call (a default's encoding) is one long line.
                consts.append(text if "\n" in text else wrap_call(text))
                continue
            assert isinstance(entry.source, str)
            comment = _KIND_COMMENTS[entry.kind].format(struct=entry.struct.name)
            lines = [f"# {comment}, {_version_list(entry.versions)}."]
            if entry.kind == "parse":
                for f in entry.struct.fields:
                    text = textwrap.wrap(f"{f.name}: {f.about}", WIDTH - 6) if f.about else []
                    lines += [("#   " if i == 0 else "#     ") + t for i, t in enumerate(text)]
            lines += [wrap_call(line) for line in resolve(entry.source).split("\n")]
            # A function's constants go just before it; they only call functions above them.
            blocks.append("\n".join([*consts, ""] + lines if consts else lines))
            consts = []
        if consts:
            blocks.append("\n".join(consts))
        return blocks, names

    def once(self, kind: str, struct: StructSpec, version: int, emit: Any) -> str:
        """Emit the `kind` function of `struct` at `version` once; later calls reuse its name."""
        key = (kind, struct.name, version)
        if key not in self.memo:
            self.memo[key] = emit(struct, Version(self.spec, version))
        return self.memo[key]


def _resolved(item: str | Group, resolve: Callable[[str], str]) -> str | Group:
    """`item` with every function token replaced by the function's name."""
    if isinstance(item, str):
        return resolve(item)
    items = [_resolved(i, resolve) for i in item.items]
    return Group(item.open, items, item.close, item.fill, item.one_tuple)


_FORMAT_NAMES = {"b": "i8", "h": "i16", "i": "i32", "q": "i64", "H": "u16", "I": "u32",
                 "d": "f64", "?": "bool", "16s": "uuid", "x": "pad"}  # fmt: skip


def _format_name(fmt: str) -> str:
    """A struct format as a name: `iiq?` -> `i32x2_i64_bool`."""
    codes = re.findall(r"16s|.", fmt)
    parts: list[str] = []
    i = 0
    while i < len(codes):
        j = i
        while j < len(codes) and codes[j] == codes[i]:
            j += 1
        name = _FORMAT_NAMES[codes[i]]
        parts.append(name if j - i == 1 else f"{name}x{j - i}")
        i = j
    return "_".join(parts)


def _version_list(versions: set[int]) -> str:
    """`version 4`, `versions 0-2`, `versions 0-2, 5`."""
    spans: list[list[int]] = []
    for v in sorted(versions):
        if spans and spans[-1][1] == v - 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    text = ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in spans)
    return f"version {text}" if len(versions) == 1 else f"versions {text}"


def split_fields(
    struct: StructSpec, ver: Version
) -> tuple[list[FieldSpec], list[FieldSpec], list[FieldSpec]]:
    """The fields of a version: all, the untagged in order, the tagged by ascending tag."""
    fields = struct.fields_in(ver.version)
    plain = [f for f in fields if not ver.tagged(f)]
    tagged = sorted((f for f in fields if ver.tagged(f)), key=lambda f: f.tag)
    return fields, plain, tagged


def fixed_runs(fields: list[FieldSpec]) -> list[FieldSpec | list[FieldSpec]]:
    """Group consecutive fixed-width fields so each group is one struct call."""
    out: list[FieldSpec | list[FieldSpec]] = []
    for f in fields:
        if f.type.kind in FIXED_CODES:
            if out and isinstance(out[-1], list):
                out[-1].append(f)
            else:
                out.append([f])
        else:
            out.append(f)
    return out
