"""wire.signature: what makes two schema versions the same bytes on the wire, and what does not."""

from __future__ import annotations

import pytest

from kipwire.generator.spec import MessageSpec, parse_message
from kipwire.generator.wire import describe_difference, renames, signature


def message(fields: list[dict], valid: str = "0-3", flexible: str = "2+") -> MessageSpec:
    """A small request schema around `fields`."""
    doc = {
        "apiKey": 1000,
        "type": "request",
        "name": "TinyRequest",
        "validVersions": valid,
        "flexibleVersions": flexible,
        "fields": fields,
    }
    return parse_message(doc, "test")


def field(name: str = "A", type: str = "int32", versions: str = "0+", **extra) -> dict:
    """One field, with schema keys passed through."""
    return {"name": name, "type": type, "versions": versions, **extra}


def sig(fields: list[dict], version: int = 3, **kw):
    return signature(message(fields, **kw), version)


def test_identical_schemas_have_equal_hashable_signatures():
    a = sig([field(), field("B", "string")])
    b = sig([field(), field("B", "string")])
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1


def test_field_names_types_and_order_matter():
    base = sig([field("A"), field("B")])
    assert base != sig([field("B"), field("A")])
    assert base != sig([field("A"), field("C")])
    assert base != sig([field("A"), field("B", "int64")])


def test_only_fields_present_in_the_version_count():
    fields = [field("A"), field("B", versions="2+")]
    assert sig(fields, 1) == sig([field("A")], 1)
    assert sig(fields, 2) != sig([field("A")], 2)


def test_nullable_in_this_version_matters():
    plain = [field("S", "string")]
    nullable = [field("S", "string", nullableVersions="3+")]
    assert sig(plain, 2) == sig(nullable, 2)
    assert sig(plain, 3) != sig(nullable, 3)
    assert "nullable False vs True" in describe_difference(sig(plain, 3), sig(nullable, 3))


def test_tag_numbers_and_taggedness_matter():
    t0 = [field("T", taggedVersions="2+", tag=0)]
    untagged = [field("T")]
    swapped_a = [field("T", taggedVersions="2+", tag=0), field("U", taggedVersions="2+", tag=1)]
    swapped_b = [field("T", taggedVersions="2+", tag=1), field("U", taggedVersions="2+", tag=0)]
    assert sig(swapped_a) != sig(swapped_b)
    assert sig(t0) != sig(untagged)
    # A tag written as a string upstream is the same tag.
    assert sig(t0) == sig([field("T", taggedVersions="2+", tag="0")])
    # Before the field is tagged it is a regular field.
    assert sig([field("T", taggedVersions="3+", tag=0)], 2) == sig(untagged, 2)


def test_tagged_fields_are_compared_in_tag_order_not_declaration_order():
    ab = [field("A", taggedVersions="2+", tag=0), field("B", taggedVersions="2+", tag=1)]
    ba = [ab[1], ab[0]]
    assert sig(ab) == sig(ba)


def test_defaults_compare_by_value_not_spelling():
    assert sig([field(default="0x7fffffff")]) == sig([field(default="2147483647")])
    assert sig([field(default="-1")]) != sig([field(default="0")])
    assert sig([field(default="")]) == sig([field(default="0")])
    assert sig([field("B", "bool", default=True)]) == sig([field("B", "bool", default="true")])
    assert sig([field("B", "bool", default="true")]) != sig([field("B", "bool")])


def test_null_default_differs_from_empty_for_structs_and_strings():
    def s(**kw):
        return field("S", "Sub", nullableVersions="0+", fields=[field("X")], **kw)

    assert sig([s(default="null")]) != sig([s()])
    assert sig([field("N", "string", nullableVersions="0+", default="null")]) != sig(
        [field("N", "string", nullableVersions="0+")]
    )


def test_message_flexibility_is_part_of_the_signature():
    assert sig([field()], 2) != sig([field()], 2, flexible="3+")
    assert sig([field()], 3) == sig([field()], 3, flexible="3+")


def test_field_level_flexible_versions_change_string_encoding():
    compact = [field("C", "string")]
    classic = [field("C", "string", flexibleVersions="none")]
    assert sig(compact, 3) != sig(classic, 3)
    # Below the message's flexible versions both are classic strings.
    assert sig(compact, 1) == sig(classic, 1)


def test_struct_fields_are_compared_recursively():
    def topics(inner: list[dict]) -> list[dict]:
        return [field("Topics", "[]Topic", fields=inner)]

    a = sig(topics([field("P"), field("Q", nullableVersions="0+", type="string")]))
    b = sig(topics([field("P"), field("Q", type="string")]))
    assert a != b
    assert describe_difference(a, b) == "Topics.Q: nullable True vs False"


def test_struct_type_name_is_part_of_the_signature():
    a = sig([field("T", "[]Topic", fields=[field("P")])])
    b = sig([field("T", "[]Other", fields=[field("P")])])
    assert a != b


def test_version_outside_valid_versions_is_an_error():
    with pytest.raises(ValueError, match="no version 4"):
        signature(message([field()]), 4)


def test_describe_difference_is_empty_only_for_equal_signatures():
    a, b = sig([field()]), sig([field(), field("B")])
    assert describe_difference(a, a) == ""
    assert describe_difference(a, b).startswith("fields of message")
    assert describe_difference(sig([field()], 1), sig([field()], 2)) == "flexible False vs True"


def test_renames_finds_name_only_differences():
    old = sig([field("T", "[]Topic", fields=[field("CandidateId"), field("X")])])
    new = sig([field("T", "[]Topic", fields=[field("ReplicaId"), field("X")])])
    assert renames(old, new) == [("T.CandidateId", "ReplicaId")]
    assert renames(old, old) == []
    other_type = sig([field("T", "[]Topic", fields=[field("ReplicaId", "int64"), field("X")])])
    assert renames(old, other_type) is None
