"""The schema parser accepts what Kafka's generator accepts and names what it rejects."""

from __future__ import annotations

import uuid

import pytest

from kipwire.generator.jsonc import loads, strip_comments
from kipwire.generator.spec import SchemaError, parse_message, snake_case
from kipwire.generator.versions import NONE, OPEN, Versions


def _msg(fields: list[dict], **top: object) -> dict:
    doc = {
        "apiKey": 99,
        "type": "request",
        "name": "TestRequest",
        "validVersions": "0-3",
        "flexibleVersions": "2+",
        "fields": fields,
    }
    doc.update(top)
    return doc


def _field(name: str, ftype: str, **extra: object) -> dict:
    return {"name": name, "type": ftype, "versions": "0+", **extra}


def test_comments_are_stripped_but_not_inside_strings() -> None:
    text = '{ // line\n "a": "x // not a comment", /* block\n */ "b": "/* kept */" }'
    assert loads(text) == {"a": "x // not a comment", "b": "/* kept */"}
    assert strip_comments('"\\" // still string"') == '"\\" // still string"'


@pytest.mark.parametrize(
    ("text", "expected"),
    [("none", NONE), ("3", Versions(3, 3)), ("1-4", Versions(1, 4)), ("12+", Versions(12, OPEN))],
)
def test_version_ranges(text: str, expected: Versions) -> None:
    assert Versions.parse(text) == expected
    assert str(Versions.parse(text)) == text


@pytest.mark.parametrize("bad", ["4-1", "x", "1-", "+"])
def test_bad_version_ranges(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid version range"):
        Versions.parse(bad)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("KRaftVersion", "k_raft_version"),
        ("LastKnownElr", "last_known_elr"),
        ("LeaderRecoveryState", "leader_recovery_state"),
        ("ClusterId", "cluster_id"),
        ("IsKRaftController", "is_k_raft_controller"),
    ],
)
def test_snake_case(name: str, expected: str) -> None:
    assert snake_case(name) == expected


def test_loose_upstream_forms_are_accepted() -> None:
    spec = parse_message(
        _msg(
            [
                _field("A", "int32", default="0x7fffffff"),
                _field("B", "bool", default=True),
                _field("C", "int64", default=-1),
                _field("D", "string", taggedVersions="2+", tag="0", versions="2+"),
                _field("E", "uuid"),
                _field("F", "float64", default="1.5"),
                _field("G", "[]int32", nullableVersions="0+", default="null"),
            ]
        )
    )
    a, b, c, d, e, f, g = spec.fields
    assert (a.default, b.default, c.default, d.tag) == (0x7FFFFFFF, True, -1, 0)
    assert e.default == uuid.UUID(int=0)
    assert f.default == 1.5
    assert g.default is None


@pytest.mark.parametrize(
    ("fields", "top", "message"),
    [
        ([_field("A", "int32"), _field("A", "int32")], {}, "used twice"),
        (
            [
                _field("A", "int32", taggedVersions="2+", tag=0, versions="2+"),
                _field("B", "int32", taggedVersions="2+", tag=0, versions="2+"),
            ],
            {},
            "tag 0 is also used",
        ),
        (
            [_field("A", "int32", taggedVersions="2+", tag=1, versions="2+")],
            {},
            "contiguous from 0",
        ),
        ([_field("A", "int32", taggedVersions="0+", tag=0)], {}, "flexibleVersions"),
        ([_field("A", "int32", taggedVersions="2-3", tag=0, versions="2+")], {}, "open-ended"),
        ([_field("A", "int32", tag=0)], {}, "given together"),
        ([_field("A", "[][]int32")], {}, "nested arrays"),
        ([_field("A", "int32", nullableVersions="0+")], {}, "cannot be nullable"),
        ([_field("A", "string", default="null")], {}, "not every version is nullable"),
        ([_field("A", "int8", default="300")], {}, "out of range"),
        ([_field("A", "NoSuchStruct")], {}, "unknown type NoSuchStruct"),
        ([_field("A", "int32", flexibleVersions="none")], {}, "only string and bytes"),
        ([_field("A", "int32", zeroCopy=True)], {}, "zeroCopy"),
        ([_field("A", "int32", bogus=1)], {}, "unknown keys"),
        ([_field("A", "int32")], {"flexibleVersions": None}, "flexibleVersions is required"),
        ([_field("A", "int32")], {"type": "bogus"}, "unknown message type"),
    ],
)
def test_rejections_name_file_and_field(fields: list, top: dict, message: str) -> None:
    doc = _msg(fields, **top)
    if top.get("flexibleVersions", 0) is None:
        del doc["flexibleVersions"]
    with pytest.raises(SchemaError, match=message) as info:
        parse_message(doc, "Test.json")
    assert str(info.value).startswith("Test.json: ")


def test_common_structs_and_nullable_struct() -> None:
    spec = parse_message(
        _msg(
            [
                _field("Items", "[]Item"),
                _field("Maybe", "Item", nullableVersions="0+", default="null"),
            ],
            commonStructs=[{"name": "Item", "versions": "0+", "fields": [_field("X", "int16")]}],
        )
    )
    items, maybe = spec.fields
    assert items.type.is_array and items.struct is maybe.struct
    assert [f.name for f in items.struct.fields] == ["X"]
    assert maybe.default is None


def test_tagged_field_may_omit_versions() -> None:
    spec = parse_message(
        _msg([{"name": "A", "type": "int64", "taggedVersions": "2+", "tag": 0, "default": -1}])
    )
    assert spec.fields[0].versions == Versions(2, OPEN)
