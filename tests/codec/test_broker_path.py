"""What a broker needs from the codec: protocol error codes for bad input, zero-copy decoding."""

from __future__ import annotations

import pytest

from kipwire import codec
from kipwire.codec.records import build_batch


def _produce(version: int) -> bytes:
    records = build_batch([{"key": b"k", "value": b"v" * 64, "headers": [], "timestamp": 1}])
    body = {
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": records}]},
        ],
    }
    return codec.encode_request(codec.ApiKey.PRODUCE, version, body, correlation_id=5)


def test_error_codes_match_kafkas_table() -> None:
    assert codec.DecodeError.error_code == codec.ErrorCode.INVALID_REQUEST
    assert codec.UnknownApiError.error_code == codec.ErrorCode.INVALID_REQUEST
    assert codec.UnsupportedVersionError.error_code == codec.ErrorCode.UNSUPPORTED_VERSION
    assert codec.ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable
    assert not codec.ErrorCode.UNSUPPORTED_VERSION.retriable


def test_unsupported_version_is_reported_with_its_code() -> None:
    frame = bytearray(_produce(9))
    frame[2:4] = (999).to_bytes(2, "big")
    with pytest.raises(codec.UnsupportedVersionError) as info:
        codec.decode_request(bytes(frame))
    assert info.value.error_code == codec.ErrorCode.UNSUPPORTED_VERSION
    assert info.value.path == "request_api_version"


def test_unknown_api_key() -> None:
    frame = bytearray(_produce(9))
    frame[0:2] = (30000).to_bytes(2, "big")
    with pytest.raises(codec.UnknownApiError, match="unknown API key 30000"):
        codec.decode_request(bytes(frame))


def test_memoryview_input_leaves_records_as_views_of_the_frame() -> None:
    frame = _produce(9)
    view = memoryview(frame)
    req = codec.decode_request(view)
    records = req.body["topic_data"][0]["partition_data"][0]["records"]
    assert isinstance(records, memoryview)
    assert records.obj is frame  # a view into the caller's buffer, not a copy
    assert (
        bytes(records)
        == codec.decode_request(frame).body["topic_data"][0]["partition_data"][0]["records"]
    )


def test_build_into_appends_without_an_intermediate_copy() -> None:
    out = bytearray(b"\x00\x00\x00\x00")
    codec.message("ApiVersionsRequest", 3).build_into(
        {"client_software_name": "a", "client_software_version": "b"}, out
    )
    assert bytes(out[4:]) == codec.message("ApiVersionsRequest", 3).build(
        {"client_software_name": "a", "client_software_version": "b"}
    )


def test_api_versions_answer_to_a_version_newer_than_the_schemas_is_read_as_v0() -> None:
    # KIP-511: the broker cannot speak the client's version, so it answers in v0.
    api_versions = codec.ApiKey.API_VERSIONS
    v0 = codec.encode_response(
        api_versions,
        0,
        {
            "error_code": codec.ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": api_versions, "min_version": 0, "max_version": 4}],
        },
        correlation_id=7,
    )
    resp = codec.decode_response(v0, api_versions, 99)
    assert (resp.api_version, resp.correlation_id) == (0, 7)
    assert resp.body["api_keys"][0]["max_version"] == 4
    with pytest.raises(codec.UnsupportedVersionError):
        codec.decode_response(v0, codec.ApiKey.METADATA, 99)
