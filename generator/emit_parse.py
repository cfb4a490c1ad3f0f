"""Emits parse functions: straight-line reads of one struct, shared by the versions that agree.

The code is what construct's compiler would produce if every primitive were inlined: locals
instead of a context, one `struct` call per run of fixed-width fields, arrays of small structs read
in the enclosing loop, and the error path kept out of the fast path (a field index and one try
block per struct; on failure the element is read again by its own function for the exact path).
"""

from __future__ import annotations

import uuid
from typing import Any

from .emitter import (
    ARRAY_UNPACKERS,
    FIXED_CODES,
    READERS,
    ModuleEmitter,
    Version,
    fixed_runs,
    kind_of,
    literal,
    split_fields,
)
from .layout import Group, literal_group, render
from .spec import FieldSpec, StructSpec


class ParseEmitter:
    """Emits the parse functions of one message module into its ModuleEmitter."""

    def __init__(self, em: ModuleEmitter) -> None:
        self.em = em

    def parser(self, struct: StructSpec, version: int) -> str:
        """The name of the function that parses `struct` at `version` (emitted on first use)."""
        return self.em.once("p", struct, version, self._parser)

    def _parser(self, struct: StructSpec, ver: Version) -> str:
        fields, plain, tagged = split_fields(struct, ver)
        names: list[Any] = []
        body: list[str] = []
        values: list[tuple[str, str]] = []
        for run in fixed_runs(plain):
            idx = len(names)
            if isinstance(run, list):
                names.append(tuple((f.py_name, FIXED_CODES[f.type.name][0], None) for f in run))
                fmt = "".join(FIXED_CODES[f.type.name][0] for f in run)
                size = sum(FIXED_CODES[f.type.name][1] for f in run)
                targets = [f"v{idx}_{i}" for i in range(len(run))]
                unpack = self.em.fixed(fmt, "unpack_from")
                lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
                # The function starts with f = 0: the first field needs no line of its own.
                body += [f"f = {idx}"] if idx else []
                body += [f"{lhs} = {unpack}(b, p)", f"p += {size}"]
                for f, t in zip(run, targets, strict=True):
                    if f.type.name == "uuid":
                        self.em.wire_imports.add("uuid_from_bytes")
                        body.append(f"{t} = uuid_from_bytes({t})")
                    values.append((repr(f.py_name), t))
            else:
                names.append(run.py_name)
                target = f"v{idx}"
                body += [f"f = {idx}"] if idx else []
                body += self.read_field(run, ver, target)
                values.append((repr(run.py_name), target))
        for f in tagged:
            names.append(f.py_name)
            values.append((repr(f.py_name), self.parse_default(f, ver)))
        # An empty Container filled by item assignment is ~35% cheaper than Container({...}):
        # OrderedDict.__init__ copies a dict argument through its slow generic update path.
        fill = ["o = Container()"] + [f"o[{k}] = {v}" for k, v in values]
        if ver.flexible:
            body += [f"f = {len(names)}"] if names else []
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
            self.em.use("read_uvarint")
        else:
            body += fill
        body.append("return o, p")
        self.em.use("decode_failure")
        head = ("def NAME(b, p):", "f = 0")
        fields = self.em.const("parse", "_fields", struct, ver.version, literal_group(tuple(names)))
        failure = f"decode_failure(x, p, {fields}, f)"
        return self.em.guarded("parse", struct, ver.version, head, body, failure)

    def tag_parser(self, struct: StructSpec, tagged: list[FieldSpec], ver: Version) -> str:
        """The name of the function that reads the tagged-field section of `struct`."""
        if not tagged:
            self.em.use("read_unknown_tags")
            return "read_unknown_tags"
        self.em.use(
            "read_uvarint", "read_unknown_tag", "check_tag_end", "DecodeError", "tag_failure"
        )
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
        names = self.em.const("tags", "_names", struct, ver.version, tag_names)
        head = ("def NAME(b, p, nt, o):", "t = -1")
        failure = f"tag_failure(x, p, {names}, t)"
        return self.em.guarded("tags", struct, ver.version, head, body, failure)

    def read_field(self, f: FieldSpec, ver: Version, target: str) -> list[str]:
        """Lines reading one field at `p` into the local named `target`."""
        kind = kind_of(f)
        nullable = ver.nullable(f)
        if kind in ("string", "bytes"):
            reader = READERS[(kind, ver.compact(f), nullable)]
            self.em.use(reader)
            return [f"{target}, p = {reader}(b, p)"]
        if kind in FIXED_CODES:
            code, size = FIXED_CODES[kind]
            lines = [f"{target}, = {self.em.fixed(code, 'unpack_from')}(b, p)", f"p += {size}"]
            if kind == "uuid":
                self.em.wire_imports.add("uuid_from_bytes")
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
        self.em.use(length)
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
            unpackers = ARRAY_UNPACKERS[elem]
            self.em.wire_imports.add(unpackers)
            lines += [
                f"{ind}{target} = list({unpackers}[n](b, p))",
                f"{ind}p += n * {size}",
            ]
        elif elem == "uuid":
            self.em.use("read_uuid")
            lines += [
                f"{ind}{target} = []",
                f"{ind}for _ in range(n):",
                f"{ind}    x, p = read_uuid(b, p)",
                f"{ind}    {target}.append(x)",
            ]
        elif elem in ("string", "bytes"):
            reader = READERS[(elem, ver.flexible, False)]
            self.em.use(reader)
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
                self.em.use("element_failure")
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
            # Inlined per call site for the same reason as the builders' element loops.
            self.em.use("at_index", "DecodeError")
            lines += [
                f"{ind}{target} = []",
                f"{ind}a = {target}.append",
                f"{ind}for i in range(n):",
                f"{ind}    try:",
                f"{ind}        x, p = {sub}(b, p)",
                f"{ind}    except DecodeError as y:",
                f"{ind}        raise at_index(y, i) from None",
                f"{ind}    a(x)",
            ]
        return lines

    def inline_element(self, struct: StructSpec, ver: Version) -> list[str] | None:
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
        for idx, run in enumerate(fixed_runs(plain)):
            if isinstance(run, list):
                fmt = "".join(FIXED_CODES[f.type.name][0] for f in run)
                size = sum(FIXED_CODES[f.type.name][1] for f in run)
                targets = [f"k{idx}_{i}" for i in range(len(run))]
                lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
                body += [f"{lhs} = {self.em.fixed(fmt, 'unpack_from')}(b, p)", f"p += {size}"]
                for f, t in zip(run, targets, strict=True):
                    if f.type.name == "uuid":
                        self.em.wire_imports.add("uuid_from_bytes")
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
        self.em.use("read_uvarint")
        # Nearly every element has an empty tagged-field section: one byte test on that path.
        return body + [
            *fill,
            "if b[p]:",
            "    nt, p = read_uvarint(b, p)",
            f"    p = {self.tag_parser(struct, tagged, ver)}(b, p, nt, c)",
            "else:",
            "    p += 1",
        ]

    def fixed_records(self, struct: StructSpec, ver: Version) -> tuple[int, str, list] | None:
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
                self.em.wire_imports.add("uuid_from_bytes")
                lines.append(f"{t} = uuid_from_bytes({t})")
            values.append((repr(f.py_name), t))
        tagged = sorted((f for f in fields if ver.tagged(f)), key=lambda f: f.tag)
        for f in tagged:
            values.append((repr(f.py_name), self.parse_default(f, ver)))
        lines += ["c = Container()"] + [f"c[{k}] = {v}" for k, v in values]
        it = ", ".join(targets) + ("," if len(targets) == 1 else "")
        return size, it, lines

    def fixed_iter(self, struct: StructSpec, ver: Version) -> str:
        """A module-level `Struct(...).iter_unpack` for fixed_records (pad byte: empty tags)."""
        plain = [f for f in struct.fields_in(ver.version) if not ver.tagged(f)]
        fmt = "".join(FIXED_CODES[f.type.name][0] for f in plain) + ("x" if ver.flexible else "")
        return self.em.fixed(fmt, "iter_unpack")

    def parse_default(self, f: FieldSpec, ver: Version) -> str:
        """Source for the value of a tagged field the section leaves out."""
        if f.type.kind == "struct" and f.default is not None:
            return f"{self.defaults(f.struct, ver.version)}()"
        if isinstance(f.default, uuid.UUID):
            self.em.use("UUID", "ZERO_UUID")
        return literal(f.default)

    def defaults(self, struct: StructSpec, version: int) -> str:
        """A function returning the struct's default value in `version`."""
        ver = Version(self.em.spec, version)
        items: list[str | Group] = [
            f"{f.py_name!r}: {self.parse_default(f, ver)}" for f in struct.fields_in(version)
        ]
        src = "def NAME():\n" + render(Group("Container({", items, "})"), 4, "    return ")
        return self.em.func("default", struct, version, src)
