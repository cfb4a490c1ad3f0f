"""Byte-for-byte agreement with kafka-python 3.0.12's protocol classes, in both directions.

For every request and response API and every version both libraries support, generated values
are encoded by both and must give the same bytes; each library decodes the other's bytes back to
the same value. kafka-python departs from Kafka's own generator in a few places; kipwire follows
Kafka there, and `DEVIATIONS` lists each case with the rule the comparison applies. The tests at
the bottom prove each listed deviation is real (so the table cannot silently go stale).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import uuid
from typing import Any

import pytest
from codec_paths import each_codec_path
from codec_strategies import expected, plain, spec, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipwire import codec
from kipwire.generator.spec import StructSpec

kafka_protocol = pytest.importorskip("kafka.protocol")
pytest.importorskip("kafka.protocol.api_message")

from kafka.protocol.api_message import ApiMessage  # noqa: E402
from kafka.protocol.data_container import DataContainer  # noqa: E402
from kafka.protocol.schemas.fields.codecs import UUID as KpUUID  # noqa: E402
from kafka.protocol.schemas.fields.codecs import BitField  # noqa: E402
from kafka.protocol.schemas.fields.simple import SimpleField  # noqa: E402

# The compiled decoders and the Python parsers (tests/codec/conftest.py); check_agreement runs
# kafka-python once per value and kipwire on both paths itself.
on_both_paths = pytest.mark.usefixtures("codec_path")

ZERO_UUID = uuid.UUID(int=0)

# Where kafka-python 3.0.12 is not Kafka's generator: what it does, what Kafka does, and the rule
# the comparison follows (kipwire always does what Kafka does).
DEVIATIONS = [
    {
        "case": "struct-typed tagged field equal to its default",
        "examples": "FetchRequest.ReplicaState v15+, FetchResponse.CurrentLeader v12+, "
        "ProduceResponse.CurrentLeader v10+, MetadataResponse none",
        "kafka-python": "default of a tagged struct is None; any non-None struct is written",
        "kafka": "compares with a default-constructed struct and omits it when equal",
        "rule": "kafka-python gets None where the value equals the default struct; "
        "a struct kafka-python decodes as None is the default struct",
    },
    {
        "case": "unknown tagged fields",
        "examples": "any flexible struct",
        "kafka-python": "keeps them on decode (as `_<tag>` keys) but drops them on encode",
        "kafka": "keeps them and writes them back (decode -> encode is byte-identical)",
        "rule": "values compared with kafka-python carry no unknown tags; "
        "test_kafka_python_drops_unknown_tags shows the difference",
    },
    {
        "case": "uuid that is all zeros",
        "examples": "MetadataResponse.Topics.TopicId, FetchRequest.Topics.TopicId",
        "kafka-python": "decodes the zero uuid as None (and encodes None as zero)",
        "kafka": "Uuid.ZERO_UUID is a value",
        "rule": "kafka-python's None is the zero uuid",
    },
    {
        "case": "authorized-operations bit fields",
        "examples": "MetadataResponse (Cluster|Topic)AuthorizedOperations, "
        "DescribeClusterResponse.ClusterAuthorizedOperations, "
        "DescribeGroupsResponse.Groups.AuthorizedOperations",
        "kafka-python": "patches the int32 into a set of bit numbers ({31}, i.e. INT32_MIN, "
        "is None)",
        "kafka": "plain int32",
        "rule": "the int32 is converted to kafka-python's set of bits and back",
    },
    {
        "case": "ApiVersionsResponse v1+ with a non-zero error code",
        "examples": "ApiVersionsResponse v1-v4",
        "kafka-python": "decodes the body as v0 whenever error_code != 0",
        "kafka": "parses the requested version and falls back to v0 only when that fails "
        "(brokers answer in v0 only for UNSUPPORTED_VERSION, KIP-511)",
        "rule": "kafka-python's decoding of such bodies is not compared (encoding still is); "
        "codec.decode_response falls back to v0 for UNSUPPORTED_VERSION",
    },
]


def _load_classes() -> dict[str, type]:
    for mod in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
        if ".old" in mod.name or mod.name.endswith("generate_stubs"):
            continue
        importlib.import_module(mod.name)

    def subclasses(c: type):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)

    return {
        c.__name__: c
        for c in subclasses(ApiMessage)
        if c._class_version is None and getattr(c, "_json", None)
    }


KP = _load_classes()
CASES = sorted(KP)


def kp_versions(name: str) -> list[int]:
    lo, hi = KP[name]._valid_versions
    ours = codec.MESSAGES[name][3]
    return list(range(max(lo, ours[0]), min(hi, ours[1]) + 1))


def _is_bitfield(kf: Any) -> bool:
    return isinstance(kf, SimpleField) and kf._type is BitField


def _pairs(kstruct: Any, struct: StructSpec, version: int) -> list[tuple[Any, Any]]:
    """kafka-python's fields of a version with ours: by schema name, else by position (its
    json_patch renames a few, e.g. ClusterAuthorizedOperations -> authorized_operations)."""
    ours = {f.name: f for f in struct.fields}
    pairs = []
    for i, kf in enumerate(kstruct._fields):
        if kf.for_version_q(version):
            f = ours.get(kf._name) or struct.fields[i]
            assert version in f.versions, f"{kf._name} v{version}"
            pairs.append((kf, f))
    return pairs


def to_kp(kstruct: Any, struct: StructSpec, version: int, value: dict, make: Any) -> Any:
    """kafka-python's object for one of our (fully expanded) struct values."""
    kwargs = {}
    for kf, f in _pairs(kstruct, struct, version):
        v = value[f.py_name]
        tagged = version in f.tagged_versions
        if kf.is_struct():
            if v is None or (tagged and v == expected_default(f, version)):
                v = None  # deviation: struct-typed tagged field at its default
            else:
                v = to_kp(kf, f.struct, version, v, data_class(kf))
        elif kf.is_struct_array():
            elem = data_class(kf.array_of)
            v = None if v is None else [to_kp(kf, f.struct, version, x, elem) for x in v]
        elif _is_bitfield(kf):
            bits = BitField.from_32_bit_field(v)  # deviation: authorized operations
            v = None if bits == {31} else bits
        elif isinstance(kf, SimpleField) and kf._type is KpUUID and v == ZERO_UUID:
            v = None  # deviation: zero uuid
        kwargs[kf.name] = v
    return make(version=version, **kwargs)


_CLASSES: dict[int, type] = {}


def data_class(kstruct: Any) -> Any:
    """A container class for a nested kafka-python struct (its compiled encoder reads attributes;
    kafka-python's own nested classes are shared between fields of the same common struct)."""
    cls = _CLASSES.get(id(kstruct))
    if cls is None:
        cls = _CLASSES[id(kstruct)] = type(kstruct.type_str, (DataContainer,), {"_struct": kstruct})
    return cls


def expected_default(f: Any, version: int) -> Any:
    from codec_strategies import default_of

    return default_of(f, version)


def from_kp(kstruct: Any, struct: StructSpec, version: int, obj: Any) -> dict:
    """Our value for kafka-python's decoded object."""
    out: dict[str, Any] = {}
    for kf, f in _pairs(kstruct, struct, version):
        v = getattr(obj, kf.name)
        if kf.is_struct():
            if v is None:
                v = expected_default(f, version) if version in f.tagged_versions else None
            else:
                v = from_kp(kf, f.struct, version, v)
        elif kf.is_struct_array():
            v = None if v is None else [from_kp(kf, f.struct, version, x) for x in v]
        elif _is_bitfield(kf):
            n = BitField.to_32_bit_field({31} if v is None else v)
            v = n - (1 << 32) if n >= 1 << 31 else n
        elif isinstance(kf, SimpleField) and kf._type is KpUUID and v is None:
            v = ZERO_UUID
        elif isinstance(v, memoryview | bytearray):
            v = bytes(v)
        out[f.py_name] = v
    return out


SETTINGS = settings(
    max_examples=int(os.environ.get("KIPWIRE_EXAMPLES", "6")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check_agreement(name: str, version: int, value: dict) -> None:
    """kafka-python encodes and decodes once; kipwire on each codec path against that."""
    cls = KP[name]
    struct = spec(name).struct
    full = expected(name, version, value)
    kp_obj = to_kp(cls._struct, struct, version, full, cls)
    kp_bytes = kp_obj.encode(version=version)
    ours = codec.message(name, version)
    for path in each_codec_path(ours):
        assert ours.build(value) == kp_bytes, f"{name} v{version} ({path}): encodings differ"
        # Each side decodes the other's bytes to the same value (the bytes are the same).
        assert plain(ours.parse(kp_bytes)) == full, f"{name} v{version} ({path})"
    if name == "ApiVersionsResponse" and version > 0 and full["error_code"] != codec.ErrorCode.NONE:
        return  # deviation: kafka-python decodes any error response as v0
    decoded = cls.decode(kp_bytes, version=version)
    assert from_kp(cls._struct, struct, version, decoded) == full


@pytest.mark.parametrize("name", CASES)
@SETTINGS
@given(data=st.data())
def test_bodies_agree(name: str, data: st.DataObject) -> None:
    for version in kp_versions(name):
        value = data.draw(values(name, version, unknown_tags=False), label=f"v{version}")
        check_agreement(name, version, value)


@pytest.mark.parametrize("name", CASES)
def test_default_bodies_agree(name: str) -> None:
    for version in kp_versions(name):
        check_agreement(name, version, {})


@on_both_paths
@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("Request")])
@settings(max_examples=3, deadline=None)
@given(correlation_id=st.integers(-(2**31), 2**31 - 1), client_id=st.text(max_size=10))
def test_request_frames_agree(name: str, correlation_id: int, client_id: str) -> None:
    """Header + body: request header v1/v2 chosen the same way by both."""
    cls = KP[name]
    for version in kp_versions(name):
        full = expected(name, version, {})
        obj = to_kp(cls._struct, spec(name).struct, version, full, cls)
        obj.with_header(correlation_id=correlation_id, client_id=client_id)
        kp_frame = obj.encode(version=version, header=True)
        ours = codec.encode_request(
            cls.API_KEY, version, {}, correlation_id=correlation_id, client_id=client_id
        )
        assert ours == kp_frame, f"{name} v{version}"
        req = codec.decode_request(kp_frame)
        assert (req.correlation_id, req.client_id) == (correlation_id, client_id)


@on_both_paths
@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("Response")])
def test_response_frames_agree(name: str) -> None:
    """Header + body: response header v0/v1 (ApiVersions always v0) chosen the same way."""
    cls = KP[name]
    for version in kp_versions(name):
        full = expected(name, version, {})
        obj = to_kp(cls._struct, spec(name).struct, version, full, cls)
        obj.with_header(correlation_id=0x01020304)
        kp_frame = obj.encode(header=True)
        ours = codec.encode_response(cls.API_KEY, version, {}, correlation_id=0x01020304)
        assert ours == kp_frame, f"{name} v{version}"
        resp = codec.decode_response(kp_frame, cls.API_KEY, version)
        assert resp.correlation_id == 0x01020304


@on_both_paths
def test_every_shared_api_is_compared() -> None:
    """kafka-python's request and response classes all have a counterpart here."""
    assert len(CASES) >= 100
    assert all(kp_versions(n) for n in CASES)


# -- each deviation in the table is real ----------------------------------------------------------


@on_both_paths
def test_kafka_python_writes_default_tagged_struct() -> None:
    cls = KP["FetchRequest"]
    kp_bytes = cls(version=15, replica_state=cls.ReplicaState(version=15)).encode(version=15)
    ours = codec.message("FetchRequest", 15).build({"replica_state": {}})
    # kafka-python writes tag 1 (ReplicaState at -1/-1); Kafka writes no tag at all.
    assert kp_bytes != ours
    assert ours.endswith(b"\x00")
    assert codec.message("FetchRequest", 15).parse(kp_bytes)["replica_state"] == {
        "replica_id": -1,
        "replica_epoch": -1,
    }


@on_both_paths
def test_kafka_python_drops_unknown_tags() -> None:
    ours = codec.message("HeartbeatRequest", 4)
    data = ours.build({"group_id": "g", "_unknown_tags": {9: b"\x2a"}})
    cls = KP["HeartbeatRequest"]
    assert cls.decode(data, version=4).unknown_tags == {"_9": b"\x2a"}  # kept on decode...
    kp_obj = cls(version=4, group_id="g", _9=b"\x2a")
    assert kp_obj.unknown_tags == {"_9": b"\x2a"}
    assert kp_obj.encode() == ours.build({"group_id": "g"}) != data  # ...but lost on encode
    assert ours.build(ours.parse(data)) == data


@on_both_paths
def test_kafka_python_zero_uuid_is_none() -> None:
    data = codec.message("DeleteTopicsRequest", 6).build({"topics": [{"name": "t"}]})
    kp_obj = KP["DeleteTopicsRequest"].decode(data, version=6)
    assert kp_obj.topics[0].topic_id is None
    assert codec.message("DeleteTopicsRequest", 6).parse(data)["topics"][0]["topic_id"] == ZERO_UUID


@on_both_paths
def test_kafka_python_authorized_operations_are_bits() -> None:
    data = codec.message("DescribeClusterResponse", 0).build({"cluster_authorized_operations": 5})
    assert KP["DescribeClusterResponse"].decode(data, version=0).authorized_operations == {0, 2}


@on_both_paths
def test_deviation_table_is_complete() -> None:
    for row in DEVIATIONS:
        assert set(row) == {"case", "examples", "kafka-python", "kafka", "rule"}
