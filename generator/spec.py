"""The schema model: messages, structs and fields, parsed and checked as Kafka's generator does."""

from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .jsonc import loads
from .versions import NONE, OPEN, Versions

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
FIXED_TYPES = {*INT_RANGES, "bool", "float64", "uuid"}
VARIABLE_TYPES = {"string", "bytes", "records"}
PRIMITIVES = FIXED_TYPES | VARIABLE_TYPES
NULLABLE_KINDS = {"string", "bytes", "records", "array", "struct"}
MESSAGE_TYPES = {"request", "response", "header", "metadata", "data", "coordinator-key",
                 "coordinator-value"}  # fmt: skip

_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """Kafka's CamelCase name in snake_case: `KRaftVersion` -> `k_raft_version`."""
    return _SNAKE.sub("_", name).lower()


class SchemaError(ValueError):
    """A schema file Kafka's generator would reject, naming the file and the field."""

    def __init__(self, source: str, where: str, message: str) -> None:
        self.source, self.where = source, where
        super().__init__(f"{source}: {where}: {message}" if where else f"{source}: {message}")


@dataclass
class FieldType:
    """A field's type: a primitive, a struct, or an array of either."""

    name: str
    is_array: bool = False

    @property
    def is_struct(self) -> bool:
        """True when the (element) type is a struct."""
        return self.name not in PRIMITIVES

    @property
    def kind(self) -> str:
        """`array`, `struct`, or the primitive's own name."""
        if self.is_array:
            return "array"
        return "struct" if self.is_struct else self.name

    def __str__(self) -> str:
        return ("[]" if self.is_array else "") + self.name


@dataclass
class FieldSpec:
    """One field of a struct, with every attribute the schema format defines."""

    name: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions = NONE
    tagged_versions: Versions = NONE
    tag: int | None = None
    flexible_versions: Versions | None = None
    default: Any = None
    default_text: str = ""
    ignorable: bool = False
    map_key: bool = False
    entity_type: str | None = None
    zero_copy: bool = False
    about: str = ""
    struct: StructSpec | None = None

    @property
    def py_name(self) -> str:
        """The snake_case key of this field in decoded values."""
        return snake_case(self.name)

    @property
    def tagged(self) -> bool:
        """True when the field is a tagged field in some version."""
        return self.tag is not None


@dataclass
class StructSpec:
    """A named list of fields (the message body, an inline struct or a common struct)."""

    name: str
    versions: Versions
    fields: list[FieldSpec]

    def fields_in(self, version: int) -> list[FieldSpec]:
        """The fields present in `version`, in declaration order."""
        return [f for f in self.fields if version in f.versions]


@dataclass
class MessageSpec:
    """A whole schema file."""

    name: str
    type: str
    valid_versions: Versions
    flexible_versions: Versions
    struct: StructSpec
    api_key: int | None = None
    deprecated_versions: Versions = NONE
    latest_version_unstable: bool = False
    listeners: list[str] = field(default_factory=list)
    about: str = ""
    structs: dict[str, StructSpec] = field(default_factory=dict)
    source: str = ""
    # Versions the project adds beyond what Apache Kafka shipped (e.g. KIP-966 ElectLeaders v3).
    extension_versions: Versions = NONE
    # Oldest versions Kafka shipped as early access and then withdrawn (the share-group v0s):
    # still decoded, never advertised.
    withdrawn_versions: Versions = NONE

    @property
    def fields(self) -> list[FieldSpec]:
        """The top-level fields."""
        return self.struct.fields


_MESSAGE_KEYS = {"apiKey", "type", "name", "validVersions", "flexibleVersions",
                 "deprecatedVersions", "latestVersionUnstable", "listeners", "fields",
                 "commonStructs", "about", "extensionVersions", "withdrawnVersions"}  # fmt: skip
_FIELD_KEYS = {"name", "type", "versions", "nullableVersions", "taggedVersions", "tag",
               "flexibleVersions", "default", "ignorable", "mapKey", "entityType", "zeroCopy",
               "about", "fields"}  # fmt: skip


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.common: dict[str, dict] = {}
        self.structs: dict[str, StructSpec] = {}

    def fail(self, where: str, message: str) -> SchemaError:
        return SchemaError(self.source, where, message)

    def versions(self, raw: Any, where: str, key: str, default: Versions | None = None) -> Versions:
        try:
            return Versions.parse(raw, default)
        except ValueError as e:
            raise self.fail(where, f"{key}: {e}") from None

    def message(self, doc: Any) -> MessageSpec:
        if not isinstance(doc, dict):
            raise self.fail("", "a schema file holds one JSON object")
        unknown = set(doc) - _MESSAGE_KEYS
        if unknown:
            raise self.fail("", f"unknown top-level keys {sorted(unknown)}")
        name = doc.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail("", "missing 'name'")
        mtype = doc.get("type")
        if mtype not in MESSAGE_TYPES:
            raise self.fail(name, f"unknown message type {mtype!r}")
        valid = self.versions(doc.get("validVersions"), name, "validVersions")
        flex_raw = doc.get("flexibleVersions")
        if flex_raw is None and not valid.empty:
            raise self.fail(name, "flexibleVersions is required (use 0+ for a new message)")
        flexible = self.versions(flex_raw, name, "flexibleVersions", NONE)
        if not flexible.empty and flexible.hi != OPEN:
            raise self.fail(name, f"flexibleVersions {flexible} must be open-ended (N+)")
        api_key = doc.get("apiKey")
        if api_key is not None and (not isinstance(api_key, int) or not 0 <= api_key <= 0x7FFF):
            raise self.fail(name, f"invalid apiKey {api_key!r}")
        if mtype in ("request", "response") and api_key is None:
            raise self.fail(name, f"a {mtype} needs an apiKey")
        if not isinstance(doc.get("extensionVersions", ""), str):
            raise self.fail(name, "extensionVersions must be a version range string")
        extension = self.versions(doc.get("extensionVersions"), name, "extensionVersions", NONE)
        # An extension may only append versions: every shipped version stays below it, so a
        # shipped key, version or tag can never be redefined by the project.
        if not extension.empty and not (
            valid.covers(extension) and extension.hi == valid.hi and extension.hi != OPEN
        ):
            raise self.fail(
                name, f"extensionVersions {extension} must be the newest of validVersions {valid}"
            )
        withdrawn = self.versions(doc.get("withdrawnVersions"), name, "withdrawnVersions", NONE)
        # Only a message's oldest versions can be withdrawn, and never all of them.
        if not withdrawn.empty and not (
            withdrawn.lo == valid.lo and withdrawn.hi != OPEN and withdrawn.hi < valid.hi
        ):
            raise self.fail(
                name, f"withdrawnVersions {withdrawn} must be the oldest of validVersions {valid}"
            )
        for common in doc.get("commonStructs", []):
            cname = common.get("name")
            if not cname or cname in self.common:
                raise self.fail(name, f"common struct {cname!r} is unnamed or defined twice")
            self.common[cname] = common
        top = self.struct(name, valid, doc.get("fields", []), name, flexible)
        for cname, common in self.common.items():
            if cname not in self.structs:
                cver = self.versions(common.get("versions"), cname, "versions", valid)
                self.structs[cname] = self.struct(cname, cver, common["fields"], cname, flexible)
        return MessageSpec(
            name=name,
            type=mtype,
            valid_versions=valid,
            flexible_versions=flexible,
            struct=top,
            api_key=api_key,
            deprecated_versions=self.versions(
                doc.get("deprecatedVersions"), name, "deprecatedVersions", NONE
            ),
            latest_version_unstable=bool(doc.get("latestVersionUnstable", False)),
            listeners=list(doc.get("listeners", [])),
            about=doc.get("about", ""),
            structs=self.structs,
            source=self.source,
            extension_versions=extension,
            withdrawn_versions=withdrawn,
        )

    def struct(
        self, name: str, versions: Versions, raw_fields: Any, where: str, flexible: Versions
    ) -> StructSpec:
        if not isinstance(raw_fields, list):
            raise self.fail(where, "'fields' must be a list")
        fields = [self.field(raw, where, flexible) for raw in raw_fields]
        seen: set[str] = set()
        tags: dict[int, str] = {}
        for f in fields:
            if f.name in seen:
                raise self.fail(f"{where}.{f.name}", "field name used twice in one struct")
            seen.add(f.name)
            if f.tag is not None:
                if f.tag in tags:
                    raise self.fail(
                        f"{where}.{f.name}", f"tag {f.tag} is also used by {tags[f.tag]}"
                    )
                tags[f.tag] = f.name
        for expected, tag in enumerate(sorted(tags)):
            if tag != expected:
                raise self.fail(where, f"tags must be contiguous from 0: tag {expected} is missing")
        return StructSpec(name, versions, fields)

    def field(self, raw: Any, parent: str, flexible: Versions) -> FieldSpec:
        if not isinstance(raw, dict):
            raise self.fail(parent, "a field must be a JSON object")
        name = raw.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name):
            raise self.fail(parent, f"invalid field name {name!r}")
        where = f"{parent}.{name}"
        unknown = set(raw) - _FIELD_KEYS
        if unknown:
            raise self.fail(where, f"unknown keys {sorted(unknown)}")
        ftype = self.field_type(raw.get("type"), where)
        tagged = self.versions(raw.get("taggedVersions"), where, "taggedVersions", NONE)
        # Kafka lets a tagged field omit `versions`: it then exists exactly where it is tagged.
        versions = self.versions(
            raw.get("versions"), where, "versions", None if tagged.empty else tagged
        )
        nullable = self.versions(raw.get("nullableVersions"), where, "nullableVersions", NONE)
        if not nullable.empty and ftype.kind not in NULLABLE_KINDS:
            raise self.fail(where, f"a {ftype} field cannot be nullable")
        tag = raw.get("tag")
        if isinstance(tag, str) and tag.isdigit():
            tag = int(tag)
        if tag is not None and (not isinstance(tag, int) or isinstance(tag, bool) or tag < 0):
            raise self.fail(where, f"invalid tag {raw.get('tag')!r}")
        if (tag is None) != tagged.empty:
            raise self.fail(where, "tag and taggedVersions must be given together")
        if tag is not None:
            if tagged.hi != OPEN:
                raise self.fail(where, f"taggedVersions {tagged} must be open-ended (N+)")
            if not versions.covers(tagged):
                raise self.fail(where, f"taggedVersions {tagged} lie outside versions {versions}")
            if not flexible.covers(tagged):
                raise self.fail(where, f"tagged in {tagged} but flexibleVersions is {flexible}")
        field_flex = None
        if "flexibleVersions" in raw:
            field_flex = self.versions(raw["flexibleVersions"], where, "flexibleVersions")
            if ftype.kind not in ("string", "bytes"):
                raise self.fail(where, "only string and bytes fields may set flexibleVersions")
        zero_copy = bool(raw.get("zeroCopy", False))
        if zero_copy and ftype.kind != "bytes":
            raise self.fail(where, "zeroCopy applies only to bytes fields")
        struct = None
        if ftype.is_struct:
            struct = self.struct_for(ftype.name, raw, versions, where, flexible)
        elif "fields" in raw:
            raise self.fail(where, f"a {ftype} field cannot have fields")
        spec = FieldSpec(
            name=name,
            type=ftype,
            versions=versions,
            nullable_versions=nullable,
            tagged_versions=tagged,
            tag=tag,
            flexible_versions=field_flex,
            ignorable=_flag(raw.get("ignorable", False)),
            map_key=_flag(raw.get("mapKey", False)),
            entity_type=raw.get("entityType"),
            zero_copy=zero_copy,
            about=raw.get("about", ""),
            struct=struct,
        )
        spec.default_text, spec.default = self.default(raw.get("default"), spec, where)
        return spec

    def field_type(self, raw: Any, where: str) -> FieldType:
        if not isinstance(raw, str) or not raw:
            raise self.fail(where, f"invalid type {raw!r}")
        is_array = raw.startswith("[]")
        name = raw[2:] if is_array else raw
        if name.startswith("[]"):
            raise self.fail(where, f"nested arrays are not supported: {raw}")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name):
            raise self.fail(where, f"invalid type {raw!r}")
        if name[0].islower() and name not in PRIMITIVES:
            raise self.fail(where, f"unknown type {raw!r}")
        if is_array and name == "records":
            raise self.fail(where, "arrays of records are not supported")
        return FieldType(name, is_array)

    def struct_for(
        self, tname: str, raw: dict, versions: Versions, where: str, flexible: Versions
    ) -> StructSpec:
        if "fields" in raw:
            if tname in self.structs or tname in self.common:
                raise self.fail(where, f"struct {tname} is defined more than once")
            self.structs[tname] = StructSpec(tname, versions, [])
            built = self.struct(tname, versions, raw["fields"], where, flexible)
            self.structs[tname] = built
            return built
        if tname in self.structs:
            return self.structs[tname]
        if tname not in self.common:
            raise self.fail(where, f"unknown type {tname}: no inline fields and no common struct")
        common = self.common[tname]
        cver = self.versions(common.get("versions"), tname, "versions", versions)
        self.structs[tname] = StructSpec(tname, cver, [])
        built = self.struct(tname, cver, common.get("fields", []), tname, flexible)
        self.structs[tname] = built
        return built

    def default(self, raw: Any, f: FieldSpec, where: str) -> tuple[str, Any]:
        if isinstance(raw, bool):
            text = "true" if raw else "false"
        elif raw is None:
            text = ""
        elif isinstance(raw, int | float):
            text = str(raw)
        elif isinstance(raw, str):
            text = raw.strip()
        else:
            raise self.fail(where, f"invalid default {raw!r}")
        kind = f.type.kind
        if text == "null":
            if kind not in NULLABLE_KINDS or not f.nullable_versions.covers(f.versions):
                raise self.fail(where, "null is the default but not every version is nullable")
            return text, None
        if kind in INT_RANGES:
            if text == "":
                return text, 0
            try:
                neg = text.startswith("-")
                body = text[1:] if neg else text
                value = int(body[2:], 16) if body.lower().startswith("0x") else int(body, 10)
                value = -value if neg else value
            except ValueError:
                raise self.fail(where, f"invalid {kind} default {text!r}") from None
            lo, hi = INT_RANGES[kind]
            if not lo <= value <= hi:
                raise self.fail(where, f"default {text} is out of range for {kind}")
            return text, value
        if kind == "bool":
            if text in ("", "false"):
                return text, False
            if text == "true":
                return text, True
            raise self.fail(where, f"invalid bool default {text!r}")
        if kind == "float64":
            try:
                return text, float(text) if text else 0.0
            except ValueError:
                raise self.fail(where, f"invalid float64 default {text!r}") from None
        if kind == "string":
            return text, text
        if kind == "uuid":
            if text == "":
                return text, uuid.UUID(int=0)
            try:
                raw_bytes = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
                return text, uuid.UUID(bytes=raw_bytes)
            except ValueError:
                raise self.fail(where, f"invalid uuid default {text!r}") from None
        if text != "":
            raise self.fail(where, f"a {f.type} field can only default to empty or null")
        # A struct's non-null default is the struct with every field at its own default ({}).
        return text, {"array": [], "bytes": b"", "records": b"", "struct": {}}[kind]


def _flag(value: Any) -> bool:
    return value is True or value == "true"


def parse_message(doc: Any, source: str = "<schema>") -> MessageSpec:
    """Build and check a MessageSpec from a parsed schema document."""
    return _Parser(source).message(doc)


def load_message(path: str | Path) -> MessageSpec:
    """Read and check one schema file."""
    path = Path(path)
    try:
        doc = loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise SchemaError(str(path), "", f"not valid JSON: {e}") from None
    return parse_message(doc, str(path))
