"""The C back end's encoders: one C builder per Python build function, named and shared as it is.

A builder writes what the generated Python builder writes, field by field, through the writers of
`codec/_compiled/runtime_build.h`, and returns -1 on anything those do not take as it is (another
type, a value out of range, a key the struct lacks, a null the version refuses): the encoder then
hands the value to the Python builder, which writes the same bytes or raises the EncodeError.
Defaults, tagged-field rules and key checks follow `emit_build.py`, which is the reference.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from .emitter import FIXED_CODES, WRITERS, Version, kind_of, split_fields
from .layout import WIDTH
from .spec import FieldSpec, StructSpec

if TYPE_CHECKING:
    from .emit_c import CMessage

_INT64_MIN = -(2**63)


def _call(head: str, args: list[str], tail: str, indent: str) -> list[str]:
    """`head(args)tail` on one line, or with its arguments on the next when too long."""
    line = f"{indent}{head}({', '.join(args)}){tail}"
    if len(line) < WIDTH:
        return [line]
    return [f"{indent}{head}(", f"{indent}    {', '.join(args)}){tail}"]


class CBuild:
    """Emits the C builders of one message (its CMessage holds the names and the shard)."""

    def __init__(self, message: CMessage) -> None:
        self.m = message

    def builder(self, struct: StructSpec, version: int) -> str:
        """The C function building `struct` at `version`."""
        return self.m.cname(self.m.em.memo[("b", struct.name, version)])

    def body(self, struct: StructSpec, ver: Version) -> list[str]:
        """The statements of a builder: the untagged fields in wire order, then the tags."""
        _, plain, tagged = split_fields(struct, ver)
        lines = ["    PyObject *v;"] if plain or tagged else []
        lines += ["    Py_ssize_t seen = 0;"]
        lines += ["    int d;"] if any(self.wanted(f) for f in tagged) else []
        lines += ["    if (!kw_is_struct(o))", "        return -1;"]
        for f in plain:
            lines.append(f"    v = KW_GET({f.py_name}, {self.absent(f)});")
            lines += self.write(f, ver, "    ")
        if not ver.flexible:
            return [*lines, "    return kw_done(o, seen);"]
        if not tagged:
            return [*lines, "    return kw_w_tags(w, o, seen, NULL);"]
        lines += [f"    kw_tag_entry e[{len(tagged)}];", "    kw_tags t = {w->n, 0, e};"]
        for f in tagged:
            lines += self.tagged(f, ver)
        return [*lines, "    return kw_w_tags(w, o, seen, &t);"]

    def write(self, f: FieldSpec, ver: Version, ind: str) -> list[str]:
        """Lines writing the value `v` of field `f`, returning -1 when a writer does not take it."""
        kind = kind_of(f)
        nullable = int(ver.nullable(f))
        if kind in ("string", "bytes"):
            return [f"{ind}KW_TRY({self.writer(kind, ver.compact(f), bool(nullable))}(w, v));"]
        if kind in FIXED_CODES:
            return [f"{ind}KW_TRY(kw_w_{kind}(w, v));"]
        if kind == "struct":
            sub = self.builder(f.struct, ver.version)
            return _call("KW_TRY(kw_w_struct", ["w", "v", str(nullable), sub], ");", ind)
        elem = f.type.name
        if elem in FIXED_CODES:
            write = f"kw_w_{elem}"
        elif elem in ("string", "bytes"):
            write = self.writer(elem, ver.flexible, False)
        else:
            write = self.builder(f.struct, ver.version)
        args = ["w", "v", str(int(ver.flexible)), str(nullable), write]
        return _call("KW_TRY(kw_w_array", args, ");", ind)

    @staticmethod
    def writer(kind: str, compact: bool, nullable: bool) -> str:
        """The runtime writer of a string or bytes field in this form."""
        return "kw_w_" + WRITERS[(kind, compact, nullable)][len("write_") :]

    @staticmethod
    def wanted(f: FieldSpec) -> bool:
        """True when a tagged field's test for differing from its default is a runtime call."""
        if f.type.kind == "struct" and f.default is not None:
            return False
        return f.default is not None

    def tagged(self, f: FieldSpec, ver: Version) -> list[str]:
        """A tagged field, written only when it differs from its default, as Kafka does."""
        head = [f"    /* tag {f.tag}: {f.py_name} */"]
        head.append(f"    v = KW_GET({f.py_name}, {self.absent(f)});")
        opened = [f"        kw_tag_open(&t, w, {f.tag});", *self.write(f, ver, "        ")]
        if f.type.kind == "struct" and f.default is not None:
            # Kafka compares a tagged struct with a default-constructed one: compare encodings.
            sub = self.builder(f.struct, ver.version)
            return [
                *head,
                "    {",
                f"        static kw_default dflt = {{{sub}, NULL}};",
                *opened,
                "        KW_TRY(kw_tag_close_unless_default(&t, w, &dflt));",
                "    }",
            ]
        if f.default is None:
            test = ["    if (v != Py_None) {"]
        elif f.type.kind == "array":
            test = ["    KW_TRY(d = kw_array_wanted(v));", "    if (d) {"]
        else:
            test = [f"    KW_TRY(d = kw_differs(v, {self.absent(f)}));", "    if (d) {"]
        return [*head, *test, *opened, "        kw_tag_close(&t, w);", "    }"]

    def absent(self, f: FieldSpec) -> str:
        """A borrowed reference to the value the Python builder writes for a missing key."""
        kind = f.type.kind
        if kind == "array":
            return "Py_None" if f.default is None else "kw_empty_tuple"
        if kind == "struct":
            return "Py_None" if f.default is None else "kw_empty_dict"
        return self.constant(f.default)

    def constant(self, value: Any) -> str:
        """A C variable (or singleton) holding the immutable Python value `value`."""
        if value is None:
            return "Py_None"
        if isinstance(value, bool):
            return "Py_True" if value else "Py_False"
        if isinstance(value, uuid.UUID) and value.int == 0:
            return "kw_zero_uuid"
        kinds = {int: "i", float: "f", str: "s", bytes: "b", uuid.UUID: "u"}
        kind = kinds.get(type(value))
        if kind is None:
            raise TypeError(f"{self.m.spec.name}: no C constant for {value!r}")
        return self.m.shard.const(kind, value)
