"""Hypothesis strategies for message values, built from the schema model of each message version.

The strategy for a struct walks the generator's `StructSpec` for one version: every field of that
version with a value of the right type and range, nulls only where the version allows them, tagged
fields sometimes at their default and sometimes not, keys sometimes left out (building fills the
default), and in flexible versions sometimes `_unknown_tags` with tags no field of the struct uses.
`expected()` turns such a value into what `parse` must return: every field present, defaults
filled, nothing else.
"""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from kipwire import codec
from kipwire.generator.spec import FieldSpec, MessageSpec, StructSpec, load_message

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "jsonschemas"
DEV_SCHEMAS = [ROOT.parent / "shared" / "kafka-schemas" / d for d in ("message", "metadata")]

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


@functools.cache
def spec(name: str) -> MessageSpec:
    """The schema model of a message, from the project's schemas (or upstream's when absent)."""
    for folder in [SCHEMAS, *DEV_SCHEMAS]:
        path = folder / f"{name}.json"
        if path.exists():
            return load_message(path)
    raise LookupError(f"no schema file for {name}")


def versions(name: str) -> list[int]:
    """Every version of a message the codec supports."""
    span = codec.MESSAGES[name][3]
    return [] if span is None else list(range(span[0], span[1] + 1))


def is_flexible(name: str, version: int) -> bool:
    """True when `version` of the message uses compact encodings and tagged fields."""
    return version in spec(name).flexible_versions


def _int(kind: str) -> st.SearchStrategy[int]:
    lo, hi = INT_RANGES[kind]
    # Boundaries and small numbers are where encodings break; mix them with the full range.
    return st.one_of(
        st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]),
        st.integers(-3 if lo < 0 else 0, 3),
        st.integers(lo, hi),
    )


def _text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=8),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=4),
        st.sampled_from(["", "topic-a", "é€😀"]),
    )


def primitive(kind: str) -> st.SearchStrategy[Any]:
    """Values of a primitive type."""
    if kind in INT_RANGES:
        return _int(kind)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "string":
        return _text()
    if kind in ("bytes", "records"):
        return st.binary(max_size=12)
    if kind == "uuid":
        return st.one_of(st.just(uuid.UUID(int=0)), st.uuids(version=4))
    raise ValueError(kind)


def default_of(f: FieldSpec, version: int) -> Any:
    """What `parse` returns for a field that is absent (untagged: omitted on build)."""
    kind = f.type.kind
    if f.default is None:
        return None
    if kind == "array":
        return []
    if kind == "struct":
        return default_struct(f.struct, version)
    return f.default


def default_struct(struct: StructSpec, version: int) -> dict:
    """A struct with every field of the version at its default."""
    return {f.py_name: default_of(f, version) for f in struct.fields_in(version)}


def used_tags(struct: StructSpec) -> set[int]:
    """Tags any field of the struct uses in any version."""
    return {f.tag for f in struct.fields if f.tag is not None}


class Builder:
    """Strategies for one message version."""

    def __init__(
        self, name: str, version: int, *, unknown_tags: bool = True, omit_keys: bool = True
    ) -> None:
        self.spec = spec(name)
        self.version = version
        self.flexible = version in self.spec.flexible_versions
        self.unknown_tags = unknown_tags and self.flexible
        self.omit_keys = omit_keys

    def message(self) -> st.SearchStrategy[dict]:
        return self.struct(self.spec.struct, depth=0)

    def field(self, f: FieldSpec, depth: int) -> st.SearchStrategy[Any]:
        kind = f.type.kind
        if kind == "array":
            is_struct = f.type.is_struct
            elem = self.struct(f.struct, depth + 1) if is_struct else primitive(f.type.name)
            value = st.lists(elem, max_size=3 if depth < 2 else 1)
        elif kind == "struct":
            value = self.struct(f.struct, depth + 1)
        else:
            value = primitive(kind)
        if self.version in f.nullable_versions:
            value = st.one_of(st.none(), value)
        if self.version in f.tagged_versions:
            # Tagged fields are written only when not at their default: exercise both.
            value = st.one_of(st.just(default_of(f, self.version)), value)
        return value

    def struct(self, struct: StructSpec, depth: int) -> st.SearchStrategy[dict]:
        fields = struct.fields_in(self.version)
        parts = {f.py_name: self.field(f, depth) for f in fields}
        optional = {}
        if self.unknown_tags:
            free = st.integers(max(used_tags(struct), default=-1) + 1, 300)
            optional["_unknown_tags"] = st.dictionaries(
                free, st.binary(max_size=6), min_size=1, max_size=3
            )
        full = st.fixed_dictionaries(parts, optional=optional)
        if not self.omit_keys or not parts:
            return full
        # Sometimes leave keys out: building fills each with the field's default.
        keys = sorted(parts)
        return st.tuples(full, st.sets(st.sampled_from(keys))).map(_drop)


def _drop(pair: tuple[dict, set]) -> dict:
    value, drop = pair
    return {k: v for k, v in value.items() if k not in drop}


def values(name: str, version: int, **kw: Any) -> st.SearchStrategy[dict]:
    """Values of message `name` at `version`."""
    return Builder(name, version, **kw).message()


def expected(name: str, version: int, value: dict) -> dict:
    """What parsing the encoding of `value` must return."""
    return _expect_struct(spec(name).struct, version, value)


def _expect_struct(struct: StructSpec, version: int, value: dict) -> dict:
    out = {}
    for f in struct.fields_in(version):
        if f.py_name not in value:
            out[f.py_name] = default_of(f, version)
            continue
        v = value[f.py_name]
        if v is None:
            out[f.py_name] = None
        elif f.type.kind == "struct":
            out[f.py_name] = _expect_struct(f.struct, version, v)
        elif f.type.kind == "array" and f.type.is_struct:
            out[f.py_name] = [_expect_struct(f.struct, version, x) for x in v]
        else:
            out[f.py_name] = v
    if value.get("_unknown_tags"):
        out["_unknown_tags"] = dict(value["_unknown_tags"])
    return out


def plain(obj: Any) -> Any:
    """Containers and memoryviews as dicts and bytes, for comparing values."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items() if not str(k).startswith("_io")}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, memoryview | bytearray):
        return bytes(obj)
    return obj
