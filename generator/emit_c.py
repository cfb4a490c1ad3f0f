"""The second back end: C (CPython C API) decoders and encoders, one function per struct and
version range.

Functions take the Python back end's names and version ranges: the Python emitter is run first,
and each of its parse and default functions becomes one C function of the same name. C has one
namespace per shard, so each message's section defines `F(name)` as `<module>__name` and writes
`F(parse_fetch_topic_v12_v15)` (a debugger shows `fetch_request__parse_fetch_topic_v12_v15`).
Every read goes through the
bounds-checked readers of `codec/_compiled/runtime.h`; a function returns NULL on anything it
cannot read, and the decoder hands the input to the Python parser, which is the reference for
values and errors alike. The encoders (`emit_c_build.py`) do the same the other way: -1 on any
value they do not take as it is, and the Python builder writes it or raises the EncodeError.
"""

from __future__ import annotations

import textwrap
import uuid
import zlib
from pathlib import Path
from typing import Any

from .emit_build import BuildEmitter
from .emit_c_build import CBuild
from .emit_parse import ParseEmitter
from .emitter import READERS, ModuleEmitter, Version, _version_list, kind_of, split_fields
from .layout import WIDTH
from .spec import FieldSpec, MessageSpec, StructSpec, snake_case

SHARDS = 8
_FIXED_READERS = {
    "int8": "kw_int8",
    "int16": "kw_int16",
    "int32": "kw_int32",
    "int64": "kw_int64",
    "uint16": "kw_uint16",
    "uint32": "kw_uint32",
    "float64": "kw_float64",
    "bool": "kw_bool",
    "uuid": "kw_uuid",
}
_INT64_MIN = -(2**63)
_NEW_CONTAINER = "    PyObject *o = kw_container();"


def shard_of(message: str) -> int:
    """The shard a message's decoders live in: stable under adding or removing other messages."""
    return zlib.crc32(message.encode()) % SHARDS


def _c_string(raw: bytes) -> str:
    """A C string literal for `raw` (octal escapes for anything but printable ASCII)."""
    out = []
    for byte in raw:
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _wrap(line: str, indent: str) -> list[str]:
    """`line` (a statement with one call) split after its first `(` when it is too long."""
    if len(line) < WIDTH or "(" not in line:
        return [line]
    head, rest = line.split("(", 1)
    args = [a.strip() for a in rest.rsplit(")", 1)[0].split(",")]
    tail = line[line.rindex(")") :]
    return [head + "(", *(f"{indent}    {a}," for a in args[:-1]), f"{indent}    {args[-1]}{tail}"]


class Shard:
    """One C file of the compiled codec: several messages' decoders, their keys and constants."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.keys: dict[str, str] = {}
        self.consts: dict[tuple[str, Any], str] = {}
        self.const_rows: list[str] = []
        self.blocks: list[str] = []
        self.tables: list[str] = []
        self.messages: list[str] = []

    def key(self, py_name: str) -> str:
        """The C variable holding the interned key `py_name`."""
        if py_name not in self.keys:
            self.keys[py_name] = f"k_{py_name}"
        return self.keys[py_name]

    def const(self, kind: str, value: Any) -> str:
        """The C variable holding an immutable constant made once at import."""
        name = self.consts.get((kind, value))
        if name is None:
            name = self.consts[(kind, value)] = f"c_{len(self.consts)}"
            if kind == "u":
                data, size = f'"{value.hex}"', 32
            elif kind in "if":
                data, size = f'"{value!r}"', len(repr(value))
            else:
                raw = value.encode() if kind == "s" else value
                data, size = _c_string(raw), len(raw)
            self.const_rows.append(f"    {{&{name}, '{kind}', {data}, {size}}},")
        return name

    def source(self) -> str:
        """The shard's C file (without its digest line)."""
        keys = sorted(self.keys.values())
        consts = list(self.consts.values())
        lines = [
            "/* The compiled decoders and encoders of:",
            *textwrap.wrap(
                ", ".join(self.messages), WIDTH - 4, initial_indent=" * ", subsequent_indent=" * "
            ),
            " */",
            "",
            '#include "runtime_tags.h"',
            "",
            "/* A builder's look-up of a key of its struct `o`, counted in `seen`. */",
            "#define KW_GET(key, dflt) kw_get(o, k_##key, dflt, &seen)",
            "",
            *_declare("PyObject *", keys),
            *_declare("PyObject *", consts),
            *self.blocks,
            "",
            "static const kw_key keys[] = {",
            *(f'    {{&{v}, "{k}"}},' for k, v in sorted(self.keys.items())),
            "    {NULL, NULL},",
            "};",
            "",
            "static const kw_const consts[] = {",
            *self.const_rows,
            "    {NULL, 0, NULL, 0},",
            "};",
            "",
            "static const kw_entry *const tables[] = {",
            *(f"    {t}," for t in self.tables),
            "    NULL,",
            "};",
        ]
        return "\n".join(lines) + "\n" + _MODULE_TAIL.replace("SHARD", f"shard_{self.index}")


def _declare(ctype: str, names: list[str]) -> list[str]:
    """`static <ctype>a, *b, ...;` filled into lines under the width."""
    lines: list[str] = []
    line = ""
    for name in names:
        item = name if not line else f", {'*' if ctype.endswith('*') else ''}{name}"
        if line and len(line) + len(item) + 1 >= WIDTH:
            lines.append(line + ";")
            line = ""
            item = name
        line = line + item if line else f"static {ctype}{name}"
    return [*lines, line + ";"] if line else lines


_MODULE_TAIL = """
static PyObject *
decoder(PyObject *self, PyObject *args)
{
    return kw_make_decoder(tables, args);
}

static PyObject *
encoder(PyObject *self, PyObject *args)
{
    return kw_make_encoder(tables, args);
}

static PyMethodDef methods[] = {
    {"decoder", decoder, METH_VARARGS,
     "decoder(message, version, fallback, whole=False): a compiled parser, or None."},
    {"encoder", encoder, METH_VARARGS,
     "encoder(message, version, fallback, into=False): a compiled builder, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "SHARD", "Compiled Kafka message decoders and encoders (generated).",
    -1, methods,
};

PyMODINIT_FUNC
PyInit_SHARD(void)
{
    if (kw_init(keys, consts) < 0 || kw_init_build() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "DIGEST", KW_DIGEST) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
"""


_SIGNATURES = {
    "parse": "static PyObject *{name}(kw_reader *r)",
    "default": "static PyObject *{name}(void)",
    "build": "static int {name}(kw_wbuf *w, PyObject *o)",
}
_KINDS = {"parse": "Parse", "default": "The default", "build": "Build"}


class CMessage:
    """Emits one message's C decoders and encoders into a Shard, named and grouped as the Python
    ones are."""

    def __init__(self, spec: MessageSpec, shard: Shard) -> None:
        self.spec = spec
        self.shard = shard
        self.module = snake_case(spec.name)
        self.em = ModuleEmitter(spec)
        self.parse = ParseEmitter(self.em)
        build = BuildEmitter(self.em)
        valid = spec.valid_versions
        self.versions = [] if valid.empty else list(range(valid.lo, valid.hi + 1))
        self.tops: dict[int, str] = {}
        self.builds: dict[int, str] = {}
        for v in self.versions:  # in emit_module's order, so the entries are the same
            self.tops[v] = self.parse.parser(spec.struct, v)
            self.builds[v] = build.builder(spec.struct, v)
        _, self.names = self.em.finish()
        self.build = CBuild(self)

    def cname(self, token: str) -> str:
        """The C name of the Python entry `token`, inside the message's section."""
        return f"F({self.names[token][1:]})"

    def parser(self, struct: StructSpec, version: int) -> str:
        """The C function parsing `struct` at `version`."""
        return self.cname(self.em.memo[("p", struct.name, version)])

    def emit(self) -> None:
        """Add the message's section (its functions and version table) to the shard."""
        schema = Path(self.spec.source).name
        out = self.shard.blocks
        out += ["", f"/* -- {schema} -- */", "", f"#define F(name) {self.module}__##name"]
        functions = []
        for i, entry in enumerate(self.em.entries):
            if entry.kind in ("parse", "default", "build") and not entry.suffix:
                functions.append((self.cname(f"__E{i}__"), entry))
        for name, entry in functions:
            out.append(_SIGNATURES[entry.kind].format(name=name) + ";")
        for name, entry in functions:
            ver = Version(self.spec, min(entry.versions))
            what = _KINDS[entry.kind]
            out += ["", f"/* {what} {entry.struct.name}, {_version_list(entry.versions)}. */"]
            result, args = _SIGNATURES[entry.kind].split("{name}")
            out += [result.rstrip(), name + args, "{"]
            if entry.kind == "parse":
                out += self.parse_body(entry.struct, ver)
            elif entry.kind == "build":
                out += self.build.body(entry.struct, ver)
            else:
                out += self.default_body(entry.struct, ver)
            out.append("}")
        out += ["", "static const kw_entry F(versions)[] = {"]
        for v in self.versions:
            parse, build = self.cname(self.tops[v]), self.cname(self.builds[v])
            row = f'    {{"{self.spec.name}", {v}, {parse}, {build}}},'
            if len(row) >= WIDTH:
                row = f'    {{"{self.spec.name}", {v},\n     {parse},\n     {build}}},'
            out.append(row)
        out += ["    {NULL, 0, NULL, NULL},", "};", "", "#undef F"]
        self.shard.tables.append(f"{self.module}__versions")
        self.shard.messages.append(self.spec.name)

    def parse_body(self, struct: StructSpec, ver: Version) -> list[str]:
        """The statements of a parse function: fields in wire order, then the tagged section."""
        _, plain, tagged = split_fields(struct, ver)
        if not (plain or tagged or ver.flexible):
            return ["    return kw_container();"]
        lines = [
            "    PyObject *v, *o = kw_container();" if plain or tagged else _NEW_CONTAINER,
            "    if (o == NULL)",
            "        return NULL;",
        ]
        for f in plain:
            lines += self.put(f, ver, self.read(f, ver), "    ")
        for f in tagged:
            lines += self.put(f, ver, self.default_value(f, ver), "    ")
        if ver.flexible:
            lines += self.tag_section(tagged, ver)
        lines += ["    return o;", "fail:", "    Py_DECREF(o);", "    return NULL;"]
        return lines

    def put(self, f: FieldSpec, ver: Version, expr: str, ind: str) -> list[str]:
        """Lines storing `expr` (a new reference or NULL) as field `f` of `o`."""
        return [
            *_wrap(f"{ind}v = {expr};", ind),
            f"{ind}if (kw_put(o, {self.shard.key(f.py_name)}, v) < 0)",
            f"{ind}    goto fail;",
        ]

    def tag_section(self, tagged: list[FieldSpec], ver: Version) -> list[str]:
        """The tagged-field section: known tags read in place, others kept as bytes."""
        lines = [
            "    uint32_t nt, tag;",
            "    Py_ssize_t end;",
            "    if (kw_uvarint(r, &nt) < 0)",
            "        goto fail;",
            "    while (nt--) {",
            "        if (kw_tag_head(r, &tag, &end) < 0)",
            "            goto fail;",
            "        switch (tag) {",
        ]
        for f in tagged:
            lines.append(f"        case {f.tag}:")
            lines += self.put(f, ver, self.read(f, ver), "            ")
            lines += ["            if (r->p != end)", "                goto fail;"]
            lines.append("            break;")
        lines += [
            "        default:",
            "            if (kw_unknown_tag(r, o, tag, end) < 0)",
            "                goto fail;",
            "        }",
            "    }",
        ]
        return lines

    def read(self, f: FieldSpec, ver: Version) -> str:
        """A C expression reading field `f` at `r` (a new reference, or NULL)."""
        kind = kind_of(f)
        if kind in ("string", "bytes"):
            return "kw_" + READERS[(kind, ver.compact(f), ver.nullable(f))][len("read_") :] + "(r)"
        if kind in _FIXED_READERS:
            return f"{_FIXED_READERS[kind]}(r)"
        if kind == "struct":
            sub = self.parser(f.struct, ver.version)
            return f"kw_nullable_struct(r, {sub})" if ver.nullable(f) else f"{sub}(r)"
        elem = f.type.name
        if elem in _FIXED_READERS:
            reader = _FIXED_READERS[elem]
        elif elem in ("string", "bytes"):
            reader = "kw_" + READERS[(elem, ver.flexible, False)][len("read_") :]
        else:
            reader = self.parser(f.struct, ver.version)
        return f"kw_array(r, {int(ver.flexible)}, {int(ver.nullable(f))}, {reader})"

    def default_value(self, f: FieldSpec, ver: Version) -> str:
        """A C expression for the value a tagged field takes when the section leaves it out."""
        if f.type.kind == "struct" and f.default is not None:
            return self.cname(self.parse.defaults(f.struct, ver.version)) + "()"
        return self.literal(f.default)

    def literal(self, value: Any) -> str:
        """A C expression making a fresh (or shared immutable) Python value equal to `value`."""
        if value is None:
            return "Py_NewRef(Py_None)"
        if isinstance(value, bool):
            return f"PyBool_FromLong({int(value)})"
        if isinstance(value, int):
            if value == _INT64_MIN:
                return "PyLong_FromLongLong(INT64_MIN)"
            return f"PyLong_FromLongLong({value}LL)"
        if isinstance(value, float):
            return f"PyFloat_FromDouble({value!r})"
        if isinstance(value, uuid.UUID):
            if value.int == 0:
                return "Py_NewRef(kw_zero_uuid)"
            return self.shared(self.shard.const("u", value))
        if isinstance(value, str):
            return self.shared(self.shard.const("s", value))
        if isinstance(value, bytes):
            return self.shared(self.shard.const("b", value))
        if isinstance(value, list):
            return "PyList_New(0)"
        if isinstance(value, dict):
            return "PyDict_New()"
        raise TypeError(f"{self.spec.name}: no C literal for {value!r}")

    @staticmethod
    def shared(name: str) -> str:
        """A new reference to an immutable constant."""
        return f"Py_NewRef({name})"

    def default_body(self, struct: StructSpec, ver: Version) -> list[str]:
        """A default function: every field of the version at its default, in declaration order."""
        if not struct.fields_in(ver.version):
            return ["    return kw_container();"]
        lines = [
            "    PyObject *v, *o = kw_container();",
            "    if (o == NULL)",
            "        return NULL;",
        ]
        for f in struct.fields_in(ver.version):
            lines += self.put(f, ver, self.default_value(f, ver), "    ")
        lines += ["    return o;", "fail:", "    Py_DECREF(o);", "    return NULL;"]
        return lines


def c_shards(specs: list[MessageSpec]) -> list[Shard]:
    """Every message's decoders, spread over SHARDS files that compile in parallel."""
    shards = [Shard(i) for i in range(SHARDS)]
    for spec in specs:
        if not spec.valid_versions.empty:
            CMessage(spec, shards[shard_of(spec.name)]).emit()
    return shards
