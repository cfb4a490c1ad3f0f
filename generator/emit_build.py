"""Emits build functions: straight-line writes of one struct, shared by the versions that agree.

A builder checks the dict's keys once (a set test; unknown keys and fields the version lacks are
refused by `check_keys`), packs each run of fixed-width fields in one `struct` call, and writes
tagged fields only when they differ from their default, as Kafka does.
"""

from __future__ import annotations

import uuid
from typing import Any

from .emitter import (
    FIXED_CODES,
    WRITERS,
    ModuleEmitter,
    Version,
    fixed_runs,
    kind_of,
    literal,
    split_fields,
)
from .layout import Group, keyed, literal_group
from .spec import FieldSpec, StructSpec


class BuildEmitter:
    """Emits the build functions of one message module into its ModuleEmitter."""

    def __init__(self, em: ModuleEmitter) -> None:
        self.em = em

    def builder(self, struct: StructSpec, version: int) -> str:
        """The name of the function that builds `struct` at `version` (emitted on first use)."""
        return self.em.once("b", struct, version, self._builder)

    def _builder(self, struct: StructSpec, ver: Version) -> str:
        fields, plain, tagged = split_fields(struct, ver)
        allowed = [f.py_name for f in fields] + (["_unknown_tags"] if ver.flexible else [])
        absent = {
            f.py_name: (self.absent_default(f), f.ignorable)
            for f in struct.fields
            if ver.version not in f.versions
        }
        self.em.use("check_keys", "encode_failure")
        names: list[Any] = []
        body = ["g = o.get"]
        for run in fixed_runs(plain):
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
                        self.em.use("uuid_bytes")
                        value = f"uuid_bytes({value})"
                    args.append(value)
                body.append(f"w += {self.em.fixed(fmt, 'pack')}({', '.join(args)})")
            else:
                names.append(run.py_name)
                body.append(f"v = g({run.py_name!r}, {self.build_default(run)})")
                body += self.write_field(run, ver, "w")
        if ver.flexible:
            body += ["t = None"] if tagged else []
            for f in tagged:
                body.append(f"f = {len(names)}")
                names.append(f.py_name)
                body += self.write_tagged(f, ver)
            body.append(f"f = {len(names)}")
            names.append("_unknown_tags")
            self.em.use("write_tags")
            # `t` collects the tagged fields that differ from their defaults, if the struct has any.
            empty = "t is None and not u" if tagged else "not u"
            body += [
                "u = g('_unknown_tags')",
                f"if {empty}:",
                "    w.append(0)",
                "else:",
                f"    write_tags(w, {'t' if tagged else 'None'}, u)",
            ]
        # The constants are registered after the body's functions, so they sit right above this one.
        v = ver.version
        keys = self.em.const("build", "_keys", struct, v, literal_group(frozenset(allowed)))
        absent_items = [Group(f"{k!r}: (", [d, repr(i)], ")") for k, (d, i) in absent.items()]
        absent_const = self.em.const("build", "_absent", struct, v, Group("{", absent_items, "}"))
        fields = self.em.const("build", "_fields", struct, v, literal_group(tuple(names)))
        check = f"    check_keys(o, {keys}, {absent_const})"
        body[:0] = [f"if not {keys}.issuperset(o):", check]
        head = ("def NAME(o, w):", "f = -1")
        failure = f"encode_failure(x, {fields}, f, o)"
        return self.em.guarded("build", struct, v, head, body, failure)

    def build_default(self, f: FieldSpec) -> str:
        """Source for the value a builder writes for a key the dict leaves out."""
        kind = f.type.kind
        if kind == "array":
            return "None" if f.default is None else "()"
        if kind == "struct":
            return "None" if f.default is None else self.em.empty()
        if isinstance(f.default, uuid.UUID):
            self.em.use("UUID", "ZERO_UUID")
        return literal(f.default)

    def absent_default(self, f: FieldSpec) -> str | Group:
        """Source for the default a version that lacks the field accepts in its place."""
        if f.type.kind == "struct" and f.default is not None:
            self.em.use("StructDefault")
            return self.struct_defaults(f.struct)
        if isinstance(f.default, uuid.UUID):
            self.em.use("UUID", "ZERO_UUID")
        return literal(f.default)

    def struct_defaults(self, struct: StructSpec) -> Group:
        """A StructDefault literal: every field of `struct` at its default."""
        items: list[str | Group] = []
        for f in struct.fields:
            items.append(keyed(f"{f.py_name!r}: ", self.absent_default(f)))
        return Group("StructDefault({", items, "})")

    def write_field(self, f: FieldSpec, ver: Version, w: str) -> list[str]:
        """Lines writing the value `v` of one untagged field to the buffer named `w`."""
        kind = kind_of(f)
        nullable = ver.nullable(f)
        if kind in ("string", "bytes"):
            writer = WRITERS[(kind, ver.compact(f), nullable)]
            self.em.use(writer)
            return [f"{writer}({w}, v)"]
        if kind in FIXED_CODES:
            code = FIXED_CODES[kind][0]
            if kind == "uuid":
                self.em.use("uuid_bytes")
                return [f"{w} += uuid_bytes(v)"]
            return [f"{w} += {self.em.fixed(code, 'pack')}(v)"]
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
            self.em.use("null_error")
            return ["if v is None:", "    raise null_error()", f"{sub}(v, {w})"]
        # A null where the version allows none is refused by write_array_length.
        self.em.use("write_array_length")
        lines = [f"n = write_array_length({w}, v, {ver.flexible}, {nullable})"]
        elem = f.type.name
        if elem in FIXED_CODES and elem != "uuid":
            self.em.use("pack")
            lines += ["if n:", f"    {w} += pack(f'>{{n}}{FIXED_CODES[elem][0]}', *v)"]
        elif elem == "uuid":
            self.em.use("uuid_bytes")
            lines += ["for x in v or ():", f"    {w} += uuid_bytes(x)"]
        elif elem in ("string", "bytes"):
            writer = WRITERS[(elem, ver.flexible, False)]
            self.em.use(writer)
            lines += ["for x in v or ():", f"    {writer}({w}, x)"]
        else:
            # Inlined per call site, not a shared helper: one call target per loop keeps
            # CPython's call specialisation (a helper calling many builders loses it, ~4%).
            sub = self.builder(f.struct, ver.version)
            self.em.use("at_index", "EncodeError")
            lines += [
                "for i, x in enumerate(v or ()):",
                "    try:",
                f"        {sub}(x, {w})",
                "    except EncodeError as y:",
                "        raise at_index(y, i) from None",
            ]
        return lines

    def write_tagged(self, f: FieldSpec, ver: Version) -> list[str]:
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
                self.em.use("UUID", "ZERO_UUID")
            head = f"v = g({f.py_name!r}, {literal(f.default)})"
            cond = f"v != {literal(f.default)}"
        return [head, f"if {cond}:"] + ["    " + line for line in inner + append]

    def defaults_encoding(self, f: FieldSpec, ver: Version) -> str:
        """Source for the bytes of a default struct, computed when the module loads."""
        self.em.use("default_encoding")
        child = self.builder(f.struct, ver.version)
        encoding = f"default_encoding({child})"
        return self.em.const("build", "_default_bytes", f.struct, ver.version, encoding)


def _plain_default(f: FieldSpec) -> Any:
    return f.default.bytes if isinstance(f.default, uuid.UUID) else f.default
