"""Golden byte vectors, worked out by hand from the schemas, for the cases codecs get wrong.

Each vector is written as byte groups with a comment saying what each group is; `hx()` joins
them. Every vector is checked both ways: the value builds to exactly these bytes, and the bytes
parse to the value (with every field of the version present).
"""

from __future__ import annotations

import tracemalloc
import uuid

import pytest

from kipwire import codec

# The compiled decoders and the Python parsers (tests/codec/conftest.py).
pytestmark = pytest.mark.usefixtures("codec_path")

U = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
U_HEX = "00112233 44556677 8899aabb ccddeeff"


def hx(*groups: str) -> bytes:
    """Bytes from hex groups (spaces ignored)."""
    return bytes.fromhex("".join(groups).replace(" ", ""))


def both_ways(name: str, version: int, value: dict, data: bytes) -> dict:
    m = codec.message(name, version)
    assert m.build(value).hex() == data.hex()
    parsed = m.parse(data)
    assert m.build(parsed) == data
    return parsed


# -- FetchRequest v15: ReplicaState is a struct-typed tagged field (tag 1) -------------------------

FETCH15_HEAD = (
    "000001f4",  # max_wait_ms 500
    "00000001",  # min_bytes 1
    "7fffffff",  # max_bytes (default 0x7fffffff)
    "00",  # isolation_level 0
    "00000000",  # session_id 0
    "ffffffff",  # session_epoch -1
    "01",  # topics: compact array, length 0 (+1)
    "01",  # forgotten_topics_data: compact array, length 0
    "01",  # rack_id: compact string "", length 0 (+1)
)
FETCH15 = {"max_wait_ms": 500, "min_bytes": 1}


def test_tagged_struct_at_default_is_omitted() -> None:
    data = hx(*FETCH15_HEAD, "00")  # tagged fields: none
    parsed = both_ways("FetchRequest", 15, FETCH15, data)
    assert parsed["replica_state"] == {"replica_id": -1, "replica_epoch": -1}
    assert parsed["cluster_id"] is None
    # Spelling the default out does not change the bytes.
    explicit = {**FETCH15, "replica_state": {"replica_id": -1, "replica_epoch": -1}}
    assert codec.message("FetchRequest", 15).build(explicit) == data


def test_tagged_struct_away_from_default_is_written() -> None:
    data = hx(
        *FETCH15_HEAD,
        "01",  # one tagged field
        "01",  # tag 1: ReplicaState
        "0d",  # size 13
        "00000003",  # replica_id 3
        "0000000000000007",  # replica_epoch 7
        "00",  # ReplicaState's own (empty) tagged fields
    )
    value = {**FETCH15, "replica_state": {"replica_id": 3, "replica_epoch": 7}}
    both_ways("FetchRequest", 15, value, data)


def test_tagged_struct_one_field_off_default_and_tags_ascending() -> None:
    data = hx(
        *FETCH15_HEAD,
        "02",  # two tagged fields, ascending
        "00 02 02 63",  # tag 0 ClusterId, size 2: compact string "c" (length 1 + 1)
        "01 0d ffffffff 0000000000000007 00",  # tag 1 ReplicaState(-1, 7)
    )
    value = {**FETCH15, "replica_state": {"replica_epoch": 7}, "cluster_id": "c"}
    parsed = both_ways("FetchRequest", 15, value, data)
    assert parsed["replica_state"] == {"replica_id": -1, "replica_epoch": 7}


# -- unknown tags --------------------------------------------------------------------------------

HEARTBEAT4 = (
    "02 67",  # group_id "g"
    "00000001",  # generation_id 1
    "02 6d",  # member_id "m"
    "00",  # group_instance_id null (compact nullable)
)


def test_unknown_tags_are_kept_and_written_back_in_order() -> None:
    data = hx(
        *HEARTBEAT4,
        "02",  # two tagged fields
        "02 00",  # tag 2, size 0
        "05 01 ab",  # tag 5, size 1, byte ab
    )
    value = {
        "group_id": "g",
        "generation_id": 1,
        "member_id": "m",
        "_unknown_tags": {5: b"\xab", 2: b""},  # written ascending whatever the dict order
    }
    parsed = both_ways("HeartbeatRequest", 4, value, data)
    assert parsed["_unknown_tags"] == {2: b"", 5: b"\xab"}


def test_no_unknown_tags_key_when_none() -> None:
    parsed = codec.message("HeartbeatRequest", 4).parse(hx(*HEARTBEAT4, "00"))
    assert "_unknown_tags" not in parsed


def test_unknown_tag_in_nested_struct() -> None:
    m = codec.message("FetchRequest", 13)
    # FetchRequest v13 topics[0]: topic_id, partitions (empty), then tags with unknown tag 7.
    data = hx(
        "ffffffff",  # replica_id -1 (v0-14)
        *FETCH15_HEAD[:6],
        "02",  # topics: one element
        U_HEX,  # topic_id
        "01",  # partitions: empty
        "01 07 02 beef",  # one tagged field: tag 7, size 2, beef
        "01",  # forgotten_topics_data: empty
        "01",  # rack_id ""
        "00",  # no tagged fields at the top
    )
    parsed = m.parse(data)
    assert parsed["topics"][0]["_unknown_tags"] == {7: b"\xbe\xef"}
    assert m.build(parsed) == data


# -- PartitionChangeRecord v2: tag 8 (Directories) is declared before tags 6 and 7 -----------------

PCR_HEAD = ("00000000", U_HEX)  # partition_id 0, topic_id
PCR = {"partition_id": 0, "topic_id": U}  # partition_id defaults to -1


def test_out_of_order_declared_tags_are_written_ascending() -> None:
    d = uuid.UUID(int=1)
    data = hx(
        *PCR_HEAD,
        "04",  # four tagged fields
        "01 04 00000002",  # tag 1 Leader 2
        "06 05 02 00000001",  # tag 6 EligibleLeaderReplicas [1]
        "07 05 02 00000003",  # tag 7 LastKnownElr [3]
        "08 11 02 00000000000000000000000000000001",  # tag 8 Directories [uuid 1], size 17
    )
    value = {
        "topic_id": U,
        "partition_id": 0,
        "directories": [d],
        "last_known_elr": [3],
        "eligible_leader_replicas": [1],
        "leader": 2,
    }
    parsed = both_ways("PartitionChangeRecord", 2, value, data)
    assert parsed["isr"] is None and parsed["leader_recovery_state"] == -1


def test_out_of_order_tags_on_the_wire_parse() -> None:
    # A writer that does not sort (tag 8 before 6) still decodes to the same value.
    data = hx(*PCR_HEAD, "02", "08 01 01", "06 01 01")  # Directories [], ELR []
    parsed = codec.message("PartitionChangeRecord", 2).parse(data)
    assert parsed["directories"] == [] and parsed["eligible_leader_replicas"] == []


def test_compact_null_versus_empty_array() -> None:
    # Tagged nullable array whose default is null: [] differs from the default and is written.
    both_ways("PartitionChangeRecord", 0, {**PCR, "isr": None}, hx(*PCR_HEAD, "00"))
    both_ways(
        "PartitionChangeRecord",
        0,
        {**PCR, "isr": []},
        hx(*PCR_HEAD, "01", "00 01 01"),  # tag 0, size 1, compact length 0 (+1)
    )
    # Untagged nullable compact array: MetadataRequest v12 topics.
    tail = "01 00 00"  # allow_auto_topic_creation true, include_topic_auth_ops false, no tags
    both_ways("MetadataRequest", 12, {"topics": None}, hx("00", tail))  # null: 0
    both_ways("MetadataRequest", 12, {"topics": []}, hx("01", tail))  # empty: 0 + 1
    # Classic nullable array: -1 for null, 0 for empty.
    both_ways("MetadataRequest", 4, {"topics": None}, hx("ffffffff", "01"))
    both_ways("MetadataRequest", 4, {"topics": []}, hx("00000000", "01"))


# -- nullable struct -----------------------------------------------------------------------------

CGH_HEAD = (
    "00000000",  # throttle_time_ms
    "0000",  # error_code
    "00",  # error_message null
    "00",  # member_id null
    "00000001",  # member_epoch 1
    "00000bb8",  # heartbeat_interval_ms 3000
)
CGH = {"member_epoch": 1, "heartbeat_interval_ms": 3000}


def test_nullable_struct_null() -> None:
    data = hx(*CGH_HEAD, "ff", "00")  # assignment: int8 -1 marks null; no tagged fields
    parsed = both_ways("ConsumerGroupHeartbeatResponse", 0, {**CGH, "assignment": None}, data)
    assert parsed["assignment"] is None
    # Any negative marker is null (Kafka reads an int8 and tests < 0).
    assert (
        codec.message("ConsumerGroupHeartbeatResponse", 0).parse(hx(*CGH_HEAD, "80", "00"))[
            "assignment"
        ]
        is None
    )


def test_nullable_struct_present() -> None:
    data = hx(
        *CGH_HEAD,
        "01",  # assignment present: int8 1
        "02",  # topic_partitions: one element
        U_HEX,  # topic_id
        "03 00000000 00000001",  # partitions [0, 1]
        "00",  # element's tagged fields
        "00",  # assignment's tagged fields
        "00",  # top-level tagged fields
    )
    value = {**CGH, "assignment": {"topic_partitions": [{"topic_id": U, "partitions": [0, 1]}]}}
    parsed = both_ways("ConsumerGroupHeartbeatResponse", 0, value, data)
    assert parsed["assignment"]["topic_partitions"][0]["topic_id"] == U


# -- uuid, uint16, float64 -----------------------------------------------------------------------


def test_uuid_accepts_uuid_or_16_bytes() -> None:
    m = codec.message("PartitionChangeRecord", 0)
    assert m.build({**PCR, "topic_id": U.bytes}) == m.build(PCR) == hx(*PCR_HEAD, "00")
    assert isinstance(m.parse(hx(*PCR_HEAD, "00"))["topic_id"], uuid.UUID)
    with pytest.raises(codec.EncodeError):
        m.build({**PCR, "topic_id": b"short"})


def test_uint16() -> None:
    data = hx(
        "0000",  # error_code
        "01",  # topics: empty
        "01",  # one tagged field
        "00 0a",  # tag 0 NodeEndpoints, size 10
        "02",  # one endpoint
        "00000001",  # node_id 1
        "02 68",  # host "h"
        "ffff",  # port 65535: uint16, unsigned
        "00",  # endpoint's tagged fields
    )
    value = {"node_endpoints": [{"node_id": 1, "host": "h", "port": 65535}]}
    both_ways("BeginQuorumEpochResponse", 1, value, data)
    for bad in (65536, -1):
        with pytest.raises(codec.EncodeError):
            codec.message("BeginQuorumEpochResponse", 1).build(
                {"node_endpoints": [{"node_id": 1, "host": "h", "port": bad}]}
            )


def test_float64() -> None:
    data = hx(
        "01",  # entity: empty
        "02 6b",  # key "k"
        "3ff8000000000000",  # value 1.5, IEEE 754 big-endian
        "01",  # remove true
        "00",  # tagged fields
    )
    both_ways("ClientQuotaRecord", 0, {"key": "k", "value": 1.5, "remove": True}, data)


# -- headers -------------------------------------------------------------------------------------


def test_request_header_v0_controlled_shutdown() -> None:
    data = codec.encode_request(
        codec.ApiKey.CONTROLLED_SHUTDOWN, 0, {"broker_id": 1}, correlation_id=5, client_id="x"
    )
    # api key 7, version 0, correlation id 5, and no client id at all; body broker_id 1
    assert data == hx("0007 0000 00000005", "00000001")
    req = codec.decode_request(data)
    assert (req.header_version, req.client_id, req.body["broker_id"]) == (0, None, 1)


def test_request_header_v1() -> None:
    data = codec.encode_request(
        codec.ApiKey.CONTROLLED_SHUTDOWN, 1, {"broker_id": 1}, correlation_id=5, client_id="x"
    )
    assert data == hx("0007 0001 00000005", "0001 78", "00000001")  # classic string "x"
    assert codec.decode_request(data).header_version == 1
    null_id = codec.encode_request(
        codec.ApiKey.CONTROLLED_SHUTDOWN, 1, {"broker_id": 1}, correlation_id=5
    )
    assert null_id == hx("0007 0001 00000005", "ffff", "00000001")  # null client id: -1
    assert codec.decode_request(null_id).client_id is None


def test_request_header_v2() -> None:
    data = codec.encode_request(
        codec.ApiKey.CONTROLLED_SHUTDOWN, 3, {"broker_id": 1}, correlation_id=5, client_id="x"
    )
    assert data == hx(
        "0007 0003 00000005",
        "0001 78",  # client id stays a classic string in header v2
        "00",  # header tagged fields
        "00000001",  # broker_id
        "ffffffffffffffff",  # broker_epoch -1
        "00",  # body tagged fields
    )
    req = codec.decode_request(data)
    assert (req.header_version, req.client_id) == (2, "x")


def test_response_header_v0_and_v1() -> None:
    v0 = codec.encode_response(
        codec.ApiKey.CONTROLLED_SHUTDOWN, 0, {"error_code": codec.ErrorCode.NONE}, correlation_id=5
    )
    assert v0 == hx("00000005", "0000", "00000000")  # correlation id; error, empty array
    v1 = codec.encode_response(
        codec.ApiKey.CONTROLLED_SHUTDOWN, 3, {"error_code": codec.ErrorCode.NONE}, correlation_id=5
    )
    assert v1 == hx("00000005 00", "0000", "01", "00")  # header tags; error, [], tags
    assert codec.decode_response(v1, codec.ApiKey.CONTROLLED_SHUTDOWN, 3).header_version == 1
    assert codec.decode_response(v0, codec.ApiKey.CONTROLLED_SHUTDOWN, 0).header_version == 0


def test_api_versions_response_header_is_always_v0() -> None:
    data = codec.encode_response(codec.ApiKey.API_VERSIONS, 3, {}, correlation_id=5)
    # header v0 (no tagged fields) although v3 is flexible; body: error 0, api_keys [],
    # throttle_time_ms 0, no tagged fields
    assert data == hx("00000005", "0000", "01", "00000000", "00")
    resp = codec.decode_response(data, codec.ApiKey.API_VERSIONS, 3)
    assert (resp.header_version, resp.api_version, resp.correlation_id) == (0, 3, 5)
    assert codec.response_header_version(codec.ApiKey.API_VERSIONS, 3) == 0
    assert codec.request_header_version(codec.ApiKey.API_VERSIONS, 3) == 2


def test_kip511_unsupported_version_parsed_as_v0() -> None:
    # A broker that does not know v3 answers with a v0 body: error 35, api_keys [(18, 0, 3)].
    data = hx("00000005", "0023", "00000001", "0012 0000 0003")
    resp = codec.decode_response(data, codec.ApiKey.API_VERSIONS, 3)
    assert resp.api_version == 0
    assert resp.body["error_code"] == codec.ErrorCode.UNSUPPORTED_VERSION
    assert resp.body["api_keys"] == [
        {"api_key": codec.ApiKey.API_VERSIONS, "min_version": 0, "max_version": 3}
    ]


def test_kip511_error_body_in_requested_version() -> None:
    # UNSUPPORTED_VERSION in a real v3 body (does not fit v0) stays v3.
    data = hx("00000005", "0023", "01", "00000000", "00")
    assert codec.decode_response(data, codec.ApiKey.API_VERSIONS, 3).api_version == 3
    with pytest.raises(codec.DecodeError):
        fits_neither = hx("00000005", "0023", "ff")
        codec.decode_response(fits_neither, codec.ApiKey.API_VERSIONS, 3)


# -- metadata record framing ---------------------------------------------------------------------


def test_record_framing() -> None:
    data = codec.encode_record("PartitionChangeRecord", 0, PCR)
    # frame version 1, api key 5 (PartitionChangeRecord), version 0: unsigned varints
    assert data == hx("01 05 00", *PCR_HEAD, "00")
    assert codec.decode_record(data) == (
        "PartitionChangeRecord",
        0,
        codec.message("PartitionChangeRecord", 0).parse(hx(*PCR_HEAD, "00")),
    )
    for frame in ("00", "02", "8001"):
        with pytest.raises(codec.DecodeError) as e:
            codec.decode_record(hx(frame, "05 00", *PCR_HEAD, "00"))
        assert e.value.offset == 0
    with pytest.raises(codec.DecodeError):
        codec.decode_record(hx("01 7f 00"))  # no record type 127
    with pytest.raises(codec.DecodeError):
        codec.decode_record(data + b"\x00")  # trailing byte
    with pytest.raises(codec.EncodeError):
        codec.encode_record("FetchRequest", 0, {})  # not a metadata record


# -- strings -------------------------------------------------------------------------------------


def test_classic_string_length_limit() -> None:
    m = codec.message("HeartbeatRequest", 0)
    ok = {"group_id": "a" * 32767, "member_id": ""}
    assert m.parse(m.build(ok))["group_id"] == "a" * 32767
    with pytest.raises(codec.EncodeError) as e:
        m.build({"group_id": "a" * 32768, "member_id": ""})
    assert e.value.path == "group_id"
    with pytest.raises(codec.EncodeError):
        m.build({"group_id": "é" * 16384, "member_id": ""})  # 32768 bytes in UTF-8
    # On the wire an int16 length of 0x8000 is -32768: neither a string nor null.
    with pytest.raises(codec.DecodeError) as d:
        m.parse(hx("8000") + b"a" * 32768 + hx("00000000 0000"))
    assert (d.value.path, d.value.offset) == ("group_id", 0)
    # Compact strings have no such limit.
    c = codec.message("HeartbeatRequest", 4)
    assert c.parse(c.build({"group_id": "a" * 40000}))["group_id"] == "a" * 40000


def test_invalid_utf8_is_rejected() -> None:
    m = codec.message("HeartbeatRequest", 0)
    data = hx("0003 61 ff 62", "00000001", "0000")  # group_id "a\xffb"
    with pytest.raises(codec.DecodeError) as e:
        m.parse(data)
    assert e.value.path == "group_id"
    assert e.value.offset == 3  # the 0xff byte
    with pytest.raises(codec.DecodeError):
        codec.message("HeartbeatRequest", 4).parse(hx("03 c3 28", "00000001", "01", "00", "00"))
    with pytest.raises(codec.EncodeError):
        m.build({"group_id": "\ud800"})  # lone surrogate: not encodable as UTF-8


def test_trailing_bytes_are_rejected() -> None:
    m = codec.message("HeartbeatRequest", 4)
    good = m.build({"group_id": "g"})
    with pytest.raises(codec.DecodeError) as e:
        m.parse(good + b"\x00")
    assert e.value.offset == len(good)
    req = codec.encode_request(codec.ApiKey.HEARTBEAT, 4, {"group_id": "g"}, correlation_id=1)
    with pytest.raises(codec.DecodeError) as e:
        codec.decode_request(req + b"\x01\x02")
    assert e.value.offset == len(req)
    resp = codec.encode_response(codec.ApiKey.HEARTBEAT, 4, {}, correlation_id=1)
    with pytest.raises(codec.DecodeError) as e:
        codec.decode_response(resp + b"\x00", codec.ApiKey.HEARTBEAT, 4)
    assert e.value.offset == len(resp)


# -- encode errors -------------------------------------------------------------------------------


def test_non_default_value_in_version_lacking_the_field() -> None:
    m = codec.message("FetchRequest", 14)
    with pytest.raises(codec.EncodeError) as e:
        m.build({"replica_state": {"replica_id": 1}})  # 15+, not ignorable
    assert e.value.path == "replica_state"
    m.build({"replica_state": {"replica_id": -1}})  # at its default: fine
    with pytest.raises(codec.EncodeError) as e:
        codec.message("FetchRequest", 15).build({"replica_id": 3})  # 0-14, not ignorable
    assert e.value.path == "replica_id"
    # Ignorable fields are dropped silently: max_bytes is 3+ and ignorable.
    assert codec.message("FetchRequest", 2).build({"max_bytes": 5}) == codec.message(
        "FetchRequest", 2
    ).build({})
    with pytest.raises(codec.EncodeError) as e:
        codec.message("MetadataRequest", 12).build({"topics": [{"name": "t", "topic_id": 1}]})
    assert e.value.path == "topics[0].topic_id"  # wrong type in a nested element


def test_null_into_non_nullable() -> None:
    with pytest.raises(codec.EncodeError) as e:
        codec.message("HeartbeatRequest", 4).build({"group_id": None})
    assert e.value.path == "group_id"
    with pytest.raises(codec.EncodeError):
        codec.message("MetadataRequest", 0).build({"topics": None})  # nullable only from v1
    with pytest.raises(codec.EncodeError):
        codec.message("HeartbeatRequest", 2).build({"group_instance_id": "x"})  # 3+
    with pytest.raises(codec.EncodeError) as e:  # a uuid packed among fixed-width fields
        codec.message("FetchRequest", 13).build({"topics": [{"topic_id": None}]})
    assert e.value.path == "topics[0].topic_id"
    assert "not nullable" in e.value.reason


def test_unknown_key() -> None:
    with pytest.raises(codec.EncodeError) as e:
        codec.message("HeartbeatRequest", 4).build({"group_id": "g", "bogus": 1})
    assert e.value.path == "bogus"
    with pytest.raises(codec.EncodeError):
        codec.message("HeartbeatRequest", 3).build({"_unknown_tags": {1: b""}})  # not flexible


# -- decode errors: path and offset --------------------------------------------------------------


def _metadata_v1_with_isr(isr_claim: int) -> tuple[bytes, int]:
    """A MetadataResponse v1 whose topics[3].partitions[0].isr_nodes claims `isr_claim`
    elements but has 2; returns the bytes and the offset of that array's first element."""
    m = codec.message("MetadataResponse", 1)
    topic = {"name": "t", "partitions": []}
    part = {"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1, 2]}
    value = {"topics": [topic, topic, topic, {"name": "t", "partitions": [part]}]}
    data = bytearray(m.build(value))
    end = len(data)
    # topics[3] ends with: isr_nodes (4 + 8), offline? (v5+ only), then nothing else in v1
    isr_len_at = end - 8 - 4
    assert data[isr_len_at : isr_len_at + 4] == hx("00000002")
    data[isr_len_at : isr_len_at + 4] = isr_claim.to_bytes(4, "big", signed=True)
    return bytes(data), isr_len_at + 4


def test_decode_error_path_and_offset() -> None:
    data, first = _metadata_v1_with_isr(3)  # claims 3 elements, 2 present
    with pytest.raises(codec.DecodeError) as e:
        codec.message("MetadataResponse", 1).parse(data)
    assert e.value.path == "topics[3].partitions[0].isr_nodes"
    assert e.value.offset == first
    data, first = _metadata_v1_with_isr(-7)  # an impossible length
    with pytest.raises(codec.DecodeError) as e:
        codec.message("MetadataResponse", 1).parse(data)
    assert e.value.path == "topics[3].partitions[0].isr_nodes"
    assert e.value.offset == first - 4  # the length itself


def test_huge_array_claim_fails_at_once() -> None:
    # MetadataResponse v1: brokers array claiming 2^31 - 1 elements, 21 bytes of nothing.
    data = hx("7fffffff") + bytes(21)
    assert len(data) == 25
    tracemalloc.start()
    try:
        with pytest.raises(codec.DecodeError) as e:
            codec.message("MetadataResponse", 1).parse(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert e.value.path == "brokers"
    assert peak < 64 * 1024
