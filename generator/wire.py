"""The wire format of one message version as a comparable value, to check two schemas agree."""

from __future__ import annotations

from typing import Any, NamedTuple

from .spec import FieldSpec, MessageSpec, StructSpec


class FieldSig(NamedTuple):
    """What one field contributes to the wire format of one version."""

    name: str
    type: str
    nullable: bool
    tag: int | None
    default: Any
    compact: bool | None  # string/bytes only: compact encoding, after field-level flexibleVersions
    fields: tuple[FieldSig, ...] | None  # the struct's own fields, for struct and struct-array


class Signature(NamedTuple):
    """The wire format of one message version."""

    flexible: bool
    fields: tuple[FieldSig, ...]


def signature(spec: MessageSpec, version: int) -> Signature:
    """The canonical, hashable wire description of `spec` at `version`."""
    if version not in spec.valid_versions:
        raise ValueError(f"{spec.name} has no version {version} (valid {spec.valid_versions})")
    flexible = version in spec.flexible_versions
    return Signature(flexible, _struct(spec.struct, version, flexible))


def _struct(struct: StructSpec, version: int, flexible: bool) -> tuple[FieldSig, ...]:
    present = [_field(f, version, flexible) for f in struct.fields_in(version)]
    # Tagged fields are written in tag order whatever order the file declares them in.
    regular = [f for f in present if f.tag is None]
    tagged = sorted((f for f in present if f.tag is not None), key=lambda f: f.tag)
    return tuple(regular + tagged)


def _field(f: FieldSpec, version: int, flexible: bool) -> FieldSig:
    kind = f.type.kind
    compact = None
    if kind in ("string", "bytes"):
        own = f.flexible_versions
        compact = flexible if own is None else version in own
    nested = _struct(f.struct, version, flexible) if f.struct is not None else None
    return FieldSig(
        name=f.name,
        type=str(f.type),
        nullable=version in f.nullable_versions,
        tag=f.tag if version in f.tagged_versions else None,
        default=_default(f),
        compact=compact,
        fields=nested,
    )


def _default(f: FieldSpec) -> Any:
    # Compare values, not spellings: "0x7fffffff" and "2147483647", true and "true" are equal.
    if f.default_text == "null":
        return None
    if f.type.kind in ("array", "struct", "bytes", "records"):
        return ""  # the only non-null default these kinds have is "empty"
    return f.default


def describe_difference(a: Signature, b: Signature) -> str:
    """A short human description of the first difference between two signatures ("" if none)."""
    if a.flexible != b.flexible:
        return f"flexible {a.flexible} vs {b.flexible}"
    return _fields_difference(a.fields, b.fields, "")


def _fields_difference(a: tuple[FieldSig, ...], b: tuple[FieldSig, ...], path: str) -> str:
    names_a, names_b = [f.name for f in a], [f.name for f in b]
    if names_a != names_b:
        return f"fields of {path or 'message'}: {names_a} vs {names_b}"
    for fa, fb in zip(a, b, strict=True):
        where = f"{path}.{fa.name}" if path else fa.name
        for attr in ("type", "nullable", "tag", "default", "compact"):
            va, vb = getattr(fa, attr), getattr(fb, attr)
            if va != vb or type(va) is not type(vb):
                return f"{where}: {attr} {va!r} vs {vb!r}"
        if (fa.fields is None) != (fb.fields is None):
            return f"{where}: struct vs not a struct"
        if fa.fields is not None:
            inner = _fields_difference(fa.fields, fb.fields, where)
            if inner:
                return inner
    return ""


def renames(a: Signature, b: Signature) -> list[tuple[str, str]] | None:
    """If `a` and `b` differ only in field names: (path in `a`, new name) pairs; else None."""
    if _anonymous(a.fields) != _anonymous(b.fields) or a.flexible != b.flexible:
        return None
    found: list[tuple[str, str]] = []
    _collect_renames(a.fields, b.fields, "", found)
    return found


def _anonymous(fields: tuple[FieldSig, ...] | None) -> tuple | None:
    if fields is None:
        return None
    return tuple(f._replace(name="", fields=_anonymous(f.fields)) for f in fields)


def _collect_renames(
    a: tuple[FieldSig, ...], b: tuple[FieldSig, ...], path: str, found: list[tuple[str, str]]
) -> None:
    for fa, fb in zip(a, b, strict=True):
        where = f"{path}.{fa.name}" if path else fa.name
        if fa.name != fb.name:
            found.append((where, fb.name))
        if fa.fields is not None:
            _collect_renames(fa.fields, fb.fields, where, found)
