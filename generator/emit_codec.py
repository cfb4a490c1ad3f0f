"""Emits one Python module per message: straight-line parse and build functions per version.

The emitted code is what construct's compiler would produce for the message if every primitive
were inlined: locals instead of a context, one `struct` call per run of fixed-width fields, and
the error path kept out of the fast path (a field index and one try block per struct).

Every function and constant is named after its struct and the versions that share it
(`_parse_fetch_topic_v12_v15`, `_build_fetch_topic_v12_keys`), never after a counter: a change to
one struct renames only that struct's code and its callers', and the diff stays near it.
"""

from __future__ import annotations

import re
import textwrap
import uuid
from collections.abc import Callable
from typing import Any

from .layout import WIDTH, Group, flat_text, keyed, literal_group, render, wrap_call
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

_READERS = {
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
_WRITERS = {key: "write_" + name[len("read_") :] for key, name in _READERS.items()}
# Element type -> codec._wire dict of cached `Struct(f">{n}{code}").unpack_from` by count n.
_ARRAY_UNPACKERS = {
    "int8": "UNPACK_INT8S",
    "int16": "UNPACK_INT16S",
    "int32": "UNPACK_INT32S",
    "int64": "UNPACK_INT64S",
    "uint16": "UNPACK_UINT16S",
    "uint32": "UNPACK_UINT32S",
    "float64": "UNPACK_FLOAT64S",
    "bool": "UNPACK_BOOLS",
}


def module_name(message_name: str) -> str:
    """The module that holds a message's codec."""
    return snake_case(message_name)


def literal(value: Any) -> str:
    """Python source for a default value."""
    if isinstance(value, uuid.UUID):
        return "ZERO_UUID" if value.int == 0 else f"UUID(int={value.int})"
    if isinstance(value, list):
        return "[]"
    if isinstance(value, dict):
        return "{}"
    return repr(value)


class _Version:
    """What one version of the message looks like for a field."""

    def __init__(self, spec: MessageSpec, version: int) -> None:
        self.version = version
        self.flexible = version in spec.flexible_versions

    def compact(self, f: FieldSpec) -> bool:
        if not self.flexible:
            return False
        return f.flexible_versions is None or self.version in f.flexible_versions

    def nullable(self, f: FieldSpec) -> bool:
        return self.version in f.nullable_versions

    def tagged(self, f: FieldSpec) -> bool:
        return self.version in f.tagged_versions


def _kind(f: FieldSpec) -> str:
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
                consts.append(render(source, 0, f"{names[f'__E{i}__']} = "))
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

    # -- parse ------------------------------------------------------------------------------

    def _once(self, kind: str, struct: StructSpec, version: int, emit: Any) -> str:
        """Emit the `kind` function of `struct` at `version` once; later calls reuse its name."""
        key = (kind, struct.name, version)
        if key not in self.memo:
            self.memo[key] = emit(struct, _Version(self.spec, version))
        return self.memo[key]

    def parser(self, struct: StructSpec, version: int) -> str:
        return self._once("p", struct, version, self._parser)

    def _parser(self, struct: StructSpec, ver: _Version) -> str:
        fields, plain, tagged = _split(struct, ver)
        names: list[Any] = []
        body: list[str] = []
        values: list[tuple[str, str]] = []
        for run in _runs(plain):
            idx = len(names)
            if isinstance(run, list):
                names.append(tuple((f.py_name, FIXED_CODES[f.type.name][0], None) for f in run))
                fmt = "".join(FIXED_CODES[f.type.name][0] for f in run)
                size = sum(FIXED_CODES[f.type.name][1] for f in run)
                targets = [f"v{idx}_{i}" for i in range(len(run))]
                unpack = self.fixed(fmt, "unpack_from")
                lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
                body += [f"f = {idx}", f"{lhs} = {unpack}(b, p)", f"p += {size}"]
                for f, t in zip(run, targets, strict=True):
                    if f.type.name == "uuid":
                        self.wire_imports.add("uuid_from_bytes")
                        body.append(f"{t} = uuid_from_bytes({t})")
                    values.append((repr(f.py_name), t))
            else:
                names.append(run.py_name)
                target = f"v{idx}"
                body.append(f"f = {idx}")
                body += self.read_field(run, ver, target)
                values.append((repr(run.py_name), target))
        for f in tagged:
            names.append(f.py_name)
            values.append((repr(f.py_name), self.parse_default(f, ver)))
        # An empty Container filled by item assignment is ~35% cheaper than Container({...}):
        # OrderedDict.__init__ copies a dict argument through its slow generic update path.
        fill = ["o = Container()"] + [f"o[{k}] = {v}" for k, v in values]
        if ver.flexible:
            body.append(f"f = {len(names)}")
            names.append("_tagged_fields")
            body += [
                "nt = b[p]",
                "if nt < 0x80:",
                "    p += 1",
                "else:",
                "    nt, p = read_uvarint(b, p)",
                *fill,
                "if nt:",
                f"    p = {self.tag_parser(struct, tagged, ver)}(b, p, nt, o)",
            ]
            self.use("read_uvarint")
        else:
            body += fill
        body.append("return o, p")
        self.use("decode_failure")
        head = ("def NAME(b, p):", "f = 0")
        fields = self.const("parse", "_fields", struct, ver.version, literal_group(tuple(names)))
        failure = f"decode_failure(x, p, {fields}, f)"
        return self.guarded("parse", struct, ver.version, head, body, failure)

    def tag_parser(self, struct: StructSpec, tagged: list[FieldSpec], ver: _Version) -> str:
        if not tagged:
            self.use("read_unknown_tags")
            return "read_unknown_tags"
        self.use("read_uvarint", "read_unknown_tag", "check_tag_end", "DecodeError", "tag_failure")
        body = [
            "for _ in range(nt):",
            "    t, p = read_uvarint(b, p)",
            "    s, p = read_uvarint(b, p)",
            "    e = p + s",
            "    if e > len(b):",
            "        past = f'{e - len(b)} bytes past the end'",
            "        raise DecodeError(f'tagged field {t} runs {past}', offset=p)",
        ]
        first = True
        for f in tagged:
            body.append(f"    {'if' if first else 'elif'} t == {f.tag}:")
            first = False
            body += ["        " + line for line in self.read_field(f, ver, "v")]
            body += [f"        o[{f.py_name!r}] = v", "        check_tag_end(p, e, t)"]
        unknown = [
            "u = o.get('_unknown_tags')",
            "if u is None:",
            "    u = o['_unknown_tags'] = {}",
            "u[t], p = read_unknown_tag(b, p, s)",
        ]
        if tagged:
            body.append("    else:")
            body += ["        " + line for line in unknown]
        else:
            body += ["    " + line for line in unknown]
        body.append("return p")
        tag_names = literal_group({f.tag: f.py_name for f in tagged})
        names = self.const("tags", "_names", struct, ver.version, tag_names)
        head = ("def NAME(b, p, nt, o):", "t = -1")
        failure = f"tag_failure(x, p, {names}, t)"
        return self.guarded("tags", struct, ver.version, head, body, failure)

    def read_field(self, f: FieldSpec, ver: _Version, target: str) -> list[str]:
        kind = _kind(f)
        nullable = ver.nullable(f)
        if kind in ("string", "bytes"):
            reader = _READERS[(kind, ver.compact(f), nullable)]
            self.use(reader)
            return [f"{target}, p = {reader}(b, p)"]
        if kind in FIXED_CODES:
            code, size = FIXED_CODES[kind]
            lines = [f"{target}, = {self.fixed(code, 'unpack_from')}(b, p)", f"p += {size}"]
            if kind == "uuid":
                self.wire_imports.add("uuid_from_bytes")
                lines.append(f"{target} = uuid_from_bytes({target})")
            return lines
        if kind == "struct":
            sub = self.parser(f.struct, ver.version)
            if nullable:
                return [
                    "if b[p] & 0x80:",
                    f"    {target} = None",
                    "    p += 1",
                    "else:",
                    f"    {target}, p = {sub}(b, p + 1)",
                ]
            return [f"{target}, p = {sub}(b, p)"]
        # array
        length = "read_compact_array_length" if ver.flexible else "read_array_length"
        self.use(length)
        if ver.flexible:
            # One-byte count that fits in what is left: no call. Anything else (longer varint,
            # null, a count past the end) goes through the reader, which also raises.
            lines = [
                "n = b[p] - 1",
                "if 0 <= n < 0x7F and n < len(b) - p:",
                "    p += 1",
                "else:",
                f"    n, p = {length}(b, p, {nullable})",
            ]
        else:
            lines = [f"n, p = {length}(b, p, {nullable})"]
        elem = f.type.name
        if nullable:
            lines += ["if n < 0:", f"    {target} = None", "else:"]
            ind = "    "
        else:
            ind = ""
        if elem in FIXED_CODES and elem != "uuid":
            code, size = FIXED_CODES[elem]
            # One cached struct per element count: half the cost of unpack_from(f'>{n}i', ...).
            unpackers = _ARRAY_UNPACKERS[elem]
            self.wire_imports.add(unpackers)
            lines += [
                f"{ind}{target} = list({unpackers}[n](b, p))",
                f"{ind}p += n * {size}",
            ]
        elif elem == "uuid":
            self.use("read_uuid")
            lines += [
                f"{ind}{target} = []",
                f"{ind}for _ in range(n):",
                f"{ind}    x, p = read_uuid(b, p)",
                f"{ind}    {target}.append(x)",
            ]
        elif elem in ("string", "bytes"):
            reader = _READERS[(elem, ver.flexible, False)]
            self.use(reader)
            lines += [
                f"{ind}{target} = []",
                f"{ind}for _ in range(n):",
                f"{ind}    x, p = {reader}(b, p)",
                f"{ind}    {target}.append(x)",
            ]
        else:
            sub = self.parser(f.struct, ver.version)
            inline = self.inline_element(f.struct, ver)
            if inline is not None:
                self.use("element_failure")
                # Fast path: the element's fields are read right in the loop (no call per
                # element). On any failure the element is parsed again by its own function,
                # which raises the DecodeError with the exact field path and offset.
                # (`q`, `z`: where the array's elements start and how many there are; the
                # element lines may reuse `n` for arrays of their own.)
                lines += [
                    f"{ind}{target} = []",
                    f"{ind}a = {target}.append",
                    f"{ind}q = p",
                    f"{ind}z = n",
                    f"{ind}try:",
                ]
                records = self.fixed_records(f.struct, ver)
                if records is not None:
                    # Elements of one fixed size whose tagged sections are all empty (the usual
                    # case) are unpacked by one struct.iter_unpack over the whole array.
                    size, it, fill = records
                    tag_bytes = f"b[p + {size - 1} : r : {size}]" if ver.flexible else None
                    lines += [
                        f"{ind}    r = p + n * {size}",
                        f"{ind}    if r <= len(b)"
                        + (f" and not any({tag_bytes}):" if tag_bytes else ":"),
                        f"{ind}        for {it} in {self.fixed_iter(f.struct, ver)}(b[p:r]):",
                    ]
                    lines += [f"{ind}            {line}" for line in fill]
                    lines += [f"{ind}            a(c)", f"{ind}        p = r", f"{ind}    else:"]
                    lines.append(f"{ind}        for _ in range(n):")
                    lines += [f"{ind}            {line}" for line in inline]
                    lines.append(f"{ind}            a(c)")
                else:
                    lines.append(f"{ind}    for _ in range(n):")
                    lines += [f"{ind}        {line}" for line in inline]
                    lines.append(f"{ind}        a(c)")
                lines += [
                    f"{ind}except Exception:",
                    f"{ind}    p = element_failure({sub}, b, q, z)",
                    f"{ind}    raise",
                ]
                return lines
            self.use("read_structs")
            lines.append(f"{ind}{target}, p = read_structs(b, p, n, {sub})")
        return lines

    def inline_element(self, struct: StructSpec, ver: _Version) -> list[str] | None:
        """Lines reading one array element into `c`, or None when the struct nests structs.

        Only leaf structs (fixed-width fields, strings, bytes, arrays of those) are inlined, so
        the lines use no loop or element names of their own (`a`, `q`, `z`) that the
        enclosing loop relies on.
        """
        fields = struct.fields_in(ver.version)
        plain = [f for f in fields if not ver.tagged(f)]
        tagged = sorted((f for f in fields if ver.tagged(f)), key=lambda f: f.tag)
        for f in plain:
            if f.type.kind == "struct" or (f.type.kind == "array" and f.struct is not None):
                return None
        body: list[str] = []
        values: list[tuple[str, str]] = []
        for idx, run in enumerate(_runs(plain)):
            if isinstance(run, list):
                fmt = "".join(FIXED_CODES[f.type.name][0] for f in run)
                size = sum(FIXED_CODES[f.type.name][1] for f in run)
                targets = [f"k{idx}_{i}" for i in range(len(run))]
                lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
                body += [f"{lhs} = {self.fixed(fmt, 'unpack_from')}(b, p)", f"p += {size}"]
                for f, t in zip(run, targets, strict=True):
                    if f.type.name == "uuid":
                        self.wire_imports.add("uuid_from_bytes")
                        body.append(f"{t} = uuid_from_bytes({t})")
                    values.append((repr(f.py_name), t))
            else:
                body += self.read_field(run, ver, f"k{idx}")
                values.append((repr(run.py_name), f"k{idx}"))
        for f in tagged:
            values.append((repr(f.py_name), self.parse_default(f, ver)))
        fill = ["c = Container()"] + [f"c[{k}] = {v}" for k, v in values]
        if not ver.flexible:
            return body + fill
        self.use("read_uvarint")
        # Nearly every element has an empty tagged-field section: one byte test on that path.
        return body + [
            *fill,
            "if b[p]:",
            "    nt, p = read_uvarint(b, p)",
            f"    p = {self.tag_parser(struct, tagged, ver)}(b, p, nt, c)",
            "else:",
            "    p += 1",
        ]

    def fixed_records(self, struct: StructSpec, ver: _Version) -> tuple[int, str, list] | None:
        """For a struct of fixed-width fields only: (element size on the wire with an empty
        tagged section, loop targets, lines filling `c`); None for any other struct."""
        fields = struct.fields_in(ver.version)
        plain = [f for f in fields if not ver.tagged(f)]
        if not plain or any(f.type.kind not in FIXED_CODES for f in plain):
            return None
        size = sum(FIXED_CODES[f.type.name][1] for f in plain) + (1 if ver.flexible else 0)
        targets = [f"k{i}" for i in range(len(plain))]
        lines = []
        values = []
        for f, t in zip(plain, targets, strict=True):
            if f.type.name == "uuid":
                self.wire_imports.add("uuid_from_bytes")
                lines.append(f"{t} = uuid_from_bytes({t})")
            values.append((repr(f.py_name), t))
        tagged = sorted((f for f in fields if ver.tagged(f)), key=lambda f: f.tag)
        for f in tagged:
            values.append((repr(f.py_name), self.parse_default(f, ver)))
        lines += ["c = Container()"] + [f"c[{k}] = {v}" for k, v in values]
        it = ", ".join(targets) + ("," if len(targets) == 1 else "")
        return size, it, lines

    def fixed_iter(self, struct: StructSpec, ver: _Version) -> str:
        """A module-level `Struct(...).iter_unpack` for fixed_records (pad byte: empty tags)."""
        plain = [f for f in struct.fields_in(ver.version) if not ver.tagged(f)]
        fmt = "".join(FIXED_CODES[f.type.name][0] for f in plain) + ("x" if ver.flexible else "")
        return self.fixed(fmt, "iter_unpack")

    def parse_default(self, f: FieldSpec, ver: _Version) -> str:
        if f.type.kind == "struct" and f.default is not None:
            return f"{self.defaults(f.struct, ver.version)}()"
        if isinstance(f.default, uuid.UUID):
            self.use("UUID", "ZERO_UUID")
        return literal(f.default)

    def defaults(self, struct: StructSpec, version: int) -> str:
        """A function returning the struct's default value in `version`."""
        ver = _Version(self.spec, version)
        items: list[str | Group] = [
            f"{f.py_name!r}: {self.parse_default(f, ver)}" for f in struct.fields_in(version)
        ]
        src = "def NAME():\n" + render(Group("Container({", items, "})"), 4, "    return ")
        return self.func("default", struct, version, src)

    # -- build ------------------------------------------------------------------------------

    def builder(self, struct: StructSpec, version: int) -> str:
        return self._once("b", struct, version, self._builder)

    def _builder(self, struct: StructSpec, ver: _Version) -> str:
        fields, plain, tagged = _split(struct, ver)
        allowed = [f.py_name for f in fields] + (["_unknown_tags"] if ver.flexible else [])
        absent = {
            f.py_name: (self.absent_default(f), f.ignorable)
            for f in struct.fields
            if ver.version not in f.versions
        }
        self.use("check_keys", "encode_failure")
        names: list[Any] = []
        body = ["g = o.get"]
        for run in _runs(plain):
            idx = len(names)
            body.append(f"f = {idx}")
            if isinstance(run, list):
                names.append(
                    tuple((f.py_name, FIXED_CODES[f.type.name][0], _plain_default(f)) for f in run)
                )
                fmt = "".join(FIXED_CODES[f.type.name][0] for f in run)
                args = []
                for f in run:
                    value = f"g({f.py_name!r}, {self.build_default(f)})"
                    if f.type.name == "uuid":
                        self.use("uuid_bytes")
                        value = f"uuid_bytes({value})"
                    args.append(value)
                body.append(f"w += {self.fixed(fmt, 'pack')}({', '.join(args)})")
            else:
                names.append(run.py_name)
                body.append(f"v = g({run.py_name!r}, {self.build_default(run)})")
                body += self.write_field(run, ver, "w")
        if ver.flexible:
            body.append("t = None")
            for f in tagged:
                body.append(f"f = {len(names)}")
                names.append(f.py_name)
                body += self.write_tagged(f, ver)
            body.append(f"f = {len(names)}")
            names.append("_unknown_tags")
            self.use("write_tags")
            body += [
                "u = g('_unknown_tags')",
                "if t is None and not u:",
                "    w.append(0)",
                "else:",
                "    write_tags(w, t, u)",
            ]
        # The constants are registered after the body's functions, so they sit right above this one.
        v = ver.version
        keys = self.const("build", "_keys", struct, v, literal_group(frozenset(allowed)))
        absent_items = [Group(f"{k!r}: (", [d, repr(i)], ")") for k, (d, i) in absent.items()]
        absent_const = self.const("build", "_absent", struct, v, Group("{", absent_items, "}"))
        fields = self.const("build", "_fields", struct, v, literal_group(tuple(names)))
        check = f"    check_keys(o, {keys}, {absent_const})"
        body[:0] = [f"if not {keys}.issuperset(o):", check]
        head = ("def NAME(o, w):", "f = -1")
        failure = f"encode_failure(x, {fields}, f, o)"
        return self.guarded("build", struct, v, head, body, failure)

    def build_default(self, f: FieldSpec) -> str:
        kind = f.type.kind
        if kind == "array":
            return "None" if f.default is None else "()"
        if kind == "struct":
            return "None" if f.default is None else self.empty()
        if isinstance(f.default, uuid.UUID):
            self.use("UUID", "ZERO_UUID")
        return literal(f.default)

    def absent_default(self, f: FieldSpec) -> str | Group:
        if f.type.kind == "struct" and f.default is not None:
            self.use("StructDefault")
            return self.struct_defaults(f.struct)
        if isinstance(f.default, uuid.UUID):
            self.use("UUID", "ZERO_UUID")
        return literal(f.default)

    def struct_defaults(self, struct: StructSpec) -> Group:
        items: list[str | Group] = []
        for f in struct.fields:
            items.append(keyed(f"{f.py_name!r}: ", self.absent_default(f)))
        return Group("StructDefault({", items, "})")

    def write_field(self, f: FieldSpec, ver: _Version, w: str) -> list[str]:
        kind = _kind(f)
        nullable = ver.nullable(f)
        if kind in ("string", "bytes"):
            writer = _WRITERS[(kind, ver.compact(f), nullable)]
            self.use(writer)
            return [f"{writer}({w}, v)"]
        if kind in FIXED_CODES:
            code = FIXED_CODES[kind][0]
            if kind == "uuid":
                self.use("uuid_bytes")
                return [f"{w} += uuid_bytes(v)"]
            return [f"{w} += {self.fixed(code, 'pack')}(v)"]
        if kind == "struct":
            sub = self.builder(f.struct, ver.version)
            if nullable:
                return [
                    "if v is None:",
                    f"    {w}.append(0xFF)",
                    "else:",
                    f"    {w}.append(1)",
                    f"    {sub}(v, {w})",
                ]
            self.use("null_error")
            return ["if v is None:", "    raise null_error()", f"{sub}(v, {w})"]
        lines = []
        if not nullable:
            self.use("null_error")
            lines += ["if v is None:", "    raise null_error()"]
        elem = f.type.name
        if f.struct is not None:
            self.use("write_structs")
            sub = self.builder(f.struct, ver.version)
            return [*lines, f"write_structs({w}, v, {ver.flexible}, {sub})"]
        self.use("write_array_length")
        lines.append(f"n = write_array_length({w}, v, {ver.flexible})")
        if elem in FIXED_CODES and elem != "uuid":
            self.use("pack")
            lines += ["if n:", f"    {w} += pack(f'>{{n}}{FIXED_CODES[elem][0]}', *v)"]
        elif elem == "uuid":
            self.use("uuid_bytes")
            lines += ["for x in v or ():", f"    {w} += uuid_bytes(x)"]
        elif elem in ("string", "bytes"):
            writer = _WRITERS[(elem, ver.flexible, False)]
            self.use(writer)
            lines += ["for x in v or ():", f"    {writer}({w}, x)"]
        return lines

    def write_tagged(self, f: FieldSpec, ver: _Version) -> list[str]:
        """Kafka writes a tagged field only when it differs from the field's default."""
        # The field's bytes go to their own buffer `tw` (`x` is the element name in array loops).
        inner = ["tw = bytearray()"] + self.write_field(f, ver, "tw")
        append = ["if t is None:", "    t = []", f"t.append(({f.tag}, tw))"]
        kind = f.type.kind
        if kind == "struct" and f.default is not None:
            # Kafka compares a tagged struct with a default-constructed one: compare encodings.
            default_bytes = self.defaults_encoding(f, ver)
            head = [f"v = g({f.py_name!r}, {self.build_default(f)})"]
            return head + inner + [f"if tw != {default_bytes}:"] + ["    " + a for a in append]
        if f.default is None:
            head, cond = f"v = g({f.py_name!r}, None)", "v is not None"
        elif kind == "array":
            # An absent key is the empty default; an explicit None is written (or rejected).
            head, cond = f"v = g({f.py_name!r}, ())", "v is None or len(v) > 0"
        else:
            if isinstance(f.default, uuid.UUID):
                self.use("UUID", "ZERO_UUID")
            head = f"v = g({f.py_name!r}, {literal(f.default)})"
            cond = f"v != {literal(f.default)}"
        return [head, f"if {cond}:"] + ["    " + line for line in inner + append]

    def defaults_encoding(self, f: FieldSpec, ver: _Version) -> str:
        """Source for the bytes of a default struct, computed when the module loads."""
        self.use("default_encoding")
        child = self.builder(f.struct, ver.version)
        encoding = f"default_encoding({child})"
        return self.const("build", "_default_bytes", f.struct, ver.version, encoding)


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


def _plain_default(f: FieldSpec) -> Any:
    return f.default.bytes if isinstance(f.default, uuid.UUID) else f.default


def _split(
    struct: StructSpec, ver: _Version
) -> tuple[list[FieldSpec], list[FieldSpec], list[FieldSpec]]:
    """The fields of a version: all, the untagged in order, the tagged by ascending tag."""
    fields = struct.fields_in(ver.version)
    plain = [f for f in fields if not ver.tagged(f)]
    tagged = sorted((f for f in fields if ver.tagged(f)), key=lambda f: f.tag)
    return fields, plain, tagged


def _runs(fields: list[FieldSpec]) -> list[FieldSpec | list[FieldSpec]]:
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


def _schema_tree(struct: StructSpec) -> Group:
    """Every field's schema attributes, nested for struct fields (the registry's SCHEMA)."""
    items: list[str | Group] = []
    for f in struct.fields:
        attrs = (f.name, str(f.type), str(f.versions), str(f.nullable_versions))
        attrs += (str(f.tagged_versions), f.tag, f.default_text, f.ignorable)
        children = _schema_tree(f.struct) if f.struct is not None else "()"
        items.append(Group("(", [*map(repr, attrs), children], ")", fill=True))
    return Group("(", items, ")", one_tuple=len(items) == 1)


def _docstring(spec: MessageSpec) -> list[str]:
    """The module docstring: what the message is, and the project's own `about` text if any."""
    head = f"{spec.name}: {spec.type}"
    head += f", api key {spec.api_key}" if spec.api_key is not None else ""
    head += f", versions {spec.valid_versions}."
    if not spec.about:
        return [f'"""{head}"""']
    about = spec.about.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return [f'"""{head}', "", *textwrap.wrap(about, WIDTH), '"""']


def emit_module(spec: MessageSpec, schema_file: str, command: str = "build") -> str:
    """The full source of the codec module for one message, as `generator <command>` writes it."""
    em = ModuleEmitter(spec)
    parsers: dict[str, str] = {}
    builders: dict[str, str] = {}
    valid = spec.valid_versions
    versions = [] if valid.empty else list(range(valid.lo, valid.hi + 1))
    for v in versions:
        parsers[str(v)] = em.parser(spec.struct, v)
        builders[str(v)] = em.builder(spec.struct, v)
    blocks, names = em.finish()
    flexible = None if spec.flexible_versions.empty else spec.flexible_versions.lo
    ext = spec.extension_versions
    ext_range = None if ext.empty else (ext.lo, ext.hi)
    lines = [
        f"# Generated by `python -m kipwire.generator {command}` from {schema_file}.",
        "# Do not edit.",
        *_docstring(spec),
        "",
        "from kipwire.codec._runtime import (",
    ]
    lines += [f"    {name}," for name in sorted(em.imports)]
    lines += [")"]
    lines += [f"from kipwire.codec._wire import {name}" for name in sorted(em.wire_imports)]
    lines += [""]
    for key, name in sorted(em.struct_consts.items(), key=lambda kv: kv[1]):
        op, fmt = key.split(":")
        lines.append(f"{name} = Struct('>{fmt}').{op}")
    if em.empty_default:
        # Read-only: a builder only looks keys up in a struct value it was not given.
        lines.append("_EMPTY = {}")
    lines.append("")
    for block in blocks:
        lines += ["", block]
    parse_map = Group("{", [f"{v}: {names[t]}" for v, t in parsers.items()], "}")
    build_map = Group("{", [f"{v}: {names[t]}" for v, t in builders.items()], "}")
    lines += [
        "",
        "",
        f"NAME = {spec.name!r}",
        f"TYPE = {spec.type!r}",
        f"API_KEY = {spec.api_key!r}",
        f"VERSIONS = {(valid.lo, valid.hi) if not valid.empty else None!r}",
        f"FLEXIBLE_FROM = {flexible!r}",
        f"EXTENSION_VERSIONS = {ext_range!r}",
        render(parse_map, 0, "PARSE = "),
        render(build_map, 0, "BUILD = "),
        render(_schema_tree(spec.struct), 0, "SCHEMA = "),
        "",
    ]
    return "\n".join(lines)
