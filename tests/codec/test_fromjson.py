"""codec.from_json: `to_json` output (through real JSON text) builds the same bytes again, for
every message and version; unknown and camel-case keys are refused with the right name."""

from __future__ import annotations

import base64
import json
import os
import uuid

import pytest
from codec_strategies import spec, values, versions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipwire import codec
from kipwire.codec import fromjson
from kipwire.generator.spec import snake_case

ALL = sorted(codec.MESSAGES)
SETTINGS = settings(
    max_examples=int(os.environ.get("KIPWIRE_EXAMPLES", "3")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _through_json(name: str, version: int, data: bytes) -> bytes:
    m = codec.message(name, version)
    text = json.dumps(codec.to_json(m.parse(data)))
    return m.build(codec.from_json(name, version, json.loads(text)))


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(data=st.data())
def test_json_round_trip(name: str, data: st.DataObject) -> None:
    for version in versions(name):
        value = data.draw(values(name, version), label=f"v{version}")
        wire = codec.message(name, version).build(value)
        assert _through_json(name, version, wire) == wire, f"{name} v{version}"


def test_records_uuids_and_unknown_tags_come_back() -> None:
    topic_id = uuid.uuid4()
    body = {
        "topics": [
            {
                "topic_id": topic_id,
                "partitions": [{"partition": 0, "fetch_offset": 5, "_unknown_tags": {9: b"x"}}],
            }
        ],
        "_unknown_tags": {200: b"\x00\x01"},
    }
    wire = codec.message("FetchRequest", 15).build(body)
    as_json = codec.to_json(codec.message("FetchRequest", 15).parse(wire))
    kafka_text = base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()
    assert as_json["topics"][0]["topic_id"] == kafka_text
    value = codec.from_json("FetchRequest", 15, as_json)
    assert value["topics"][0]["topic_id"] == topic_id
    assert value["topics"][0]["partitions"][0]["_unknown_tags"] == {9: b"x"}
    assert value["_unknown_tags"] == {200: b"\x00\x01"}
    assert codec.message("FetchRequest", 15).build(value) == wire


def test_records_are_base64() -> None:
    from kipwire.codec.records import build_batch

    records = build_batch([{"key": b"k", "value": b"v", "headers": [], "timestamp": 1}])
    body = {"topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}]}
    wire = codec.message("ProduceRequest", 9).build(body)
    assert _through_json("ProduceRequest", 9, wire) == wire


@pytest.mark.parametrize(
    "text",
    [
        "AAAAAAAAAAAAAAAAAAAAAQ",  # Kafka's base64url form (22 characters)
        "00000000-0000-0000-0000-000000000001",  # canonical
    ],
)
def test_uuid_text_forms(text: str) -> None:
    value = codec.from_json("MetadataRequest", 12, {"topics": [{"topic_id": text, "name": None}]})
    assert value["topics"][0]["topic_id"] == uuid.UUID(int=1)


@pytest.mark.parametrize(
    ("obj", "message", "path"),
    [
        ({"MaxWaitMs": 5}, "unknown field 'MaxWaitMs' (did you mean 'max_wait_ms'?)", "MaxWaitMs"),
        ({"max_wait": 5}, "unknown field 'max_wait' (did you mean 'max_wait_ms'?)", "max_wait"),
        ({"zzz": 5}, "unknown field 'zzz'", "zzz"),
        (
            {"topics": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "Partitions": []}]},
            "unknown field 'Partitions' (did you mean 'partitions'?)",
            "topics[0].Partitions",
        ),
        (
            {"topics": [{"topic_id": "nope"}]},
            "'nope' is not a uuid (Kafka's 22-character base64url, or the canonical form)",
            "topics[0].topic_id",
        ),
        (
            {"_unknown_tags": {"9": "!!"}},
            "expected bytes as a base64 string, got '!!'",
            "_unknown_tags[9]",
        ),
        ({"topics": {}}, "expected a JSON array, got dict", "topics"),
    ],
)
def test_from_json_refuses_with_the_field(obj: dict, message: str, path: str) -> None:
    with pytest.raises(codec.EncodeError) as e:
        codec.from_json("FetchRequest", 15, obj)
    assert e.value.reason == message
    assert e.value.path == path


def test_build_names_the_key_meant() -> None:
    with pytest.raises(codec.EncodeError) as e:
        codec.message("FetchRequest", 15).build({"MaxWaitMs": 100})
    assert e.value.reason == "unknown field 'MaxWaitMs' (did you mean 'max_wait_ms'?)"
    with pytest.raises(codec.EncodeError) as e:
        codec.message("FetchRequest", 15).build({"topics": [{"partitions": [{"Partition": 1}]}]})
    assert e.value.reason == "unknown field 'Partition' (did you mean 'partition'?)"
    assert e.value.path == "topics[0].partitions[0].Partition"


def test_from_json_names_an_unknown_message() -> None:
    with pytest.raises(KeyError, match="FetchRequest"):
        codec.from_json("Fetch", 15, {})
    with pytest.raises(codec.UnsupportedVersionError):
        codec.from_json("FetchRequest", 99, {})


def test_python_names_follow_the_generator() -> None:
    """fromjson's name rule is the generator's, for every field of every message."""

    def walk(fields: tuple) -> None:
        for name, *_, children in fields:
            assert fromjson._SNAKE.sub("_", name).lower() == snake_case(name), name
            walk(children)

    for name in ALL:
        walk(codec.messages.registry.module(name).SCHEMA)
    assert spec("FetchRequest").struct.fields[0].py_name == "cluster_id"
