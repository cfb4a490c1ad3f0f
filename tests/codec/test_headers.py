"""codec.headers: bytes after a body, arguments that are not a frame, the header a failure
carries, and header versions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kipwire import codec
from kipwire.codec import headers

METADATA_REQUEST = {"topics": None, "allow_auto_topic_creation": True}
METADATA_RESPONSE = {
    "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
    "cluster_id": "c",
    "controller_id": 1,
    "topics": [],
}


def _librdkafka_metadata_request() -> bytes:
    """librdkafka 2.16's MetadataRequest v13: three bytes follow the body."""
    frame = codec.encode_request(
        codec.ApiKey.METADATA, 13, METADATA_REQUEST, correlation_id=3, client_id="rdkafka"
    )
    return frame + b"\x00\x00\x00"


def test_trailing_request_bytes_raise_by_default() -> None:
    with pytest.raises(codec.DecodeError, match="3 bytes follow the MetadataRequest body") as e:
        codec.decode_request(_librdkafka_metadata_request())
    assert e.value.header.correlation_id == 3  # a broker can still answer


def test_trailing_request_bytes_ignored_on_request() -> None:
    frame = _librdkafka_metadata_request()
    req = codec.decode_request(frame, trailing="ignore")
    assert (req.api_key, req.api_version, req.correlation_id) == (codec.ApiKey.METADATA, 13, 3)
    assert req.client_id == "rdkafka"
    assert req.body["topics"] is None and req.body["allow_auto_topic_creation"] is True
    assert req.trailing_bytes == 3
    assert codec.decode_request(frame[:-3], trailing="ignore").trailing_bytes == 0


def test_trailing_response_bytes() -> None:
    # librdkafka's mock broker sends one byte after its MetadataResponse v13
    frame = (
        codec.encode_response(codec.ApiKey.METADATA, 13, METADATA_RESPONSE, correlation_id=4)
        + b"\x00"
    )
    with pytest.raises(codec.DecodeError, match="1 bytes follow"):
        codec.decode_response(frame, codec.ApiKey.METADATA, 13)
    resp = codec.decode_response(frame, codec.ApiKey.METADATA, 13, trailing="ignore")
    assert resp.trailing_bytes == 1
    assert resp.correlation_id == 4 and resp.body["cluster_id"] == "c"


def test_an_unsupported_version_carries_the_header() -> None:
    # KIP-511: a client asks for ApiVersions v9; the broker answers v0 to its correlation id
    frame = codec.encode_request(
        codec.ApiKey.API_VERSIONS, 3, {}, correlation_id=12, client_id="new-client"
    )
    frame = frame[:2] + (9).to_bytes(2, "big") + frame[4:]
    with pytest.raises(codec.UnsupportedVersionError) as e:
        codec.decode_request(frame)
    header = codec.RequestHeader(codec.ApiKey.API_VERSIONS, 9, 12, "new-client", len(frame) - 3)
    assert e.value.header == header
    with pytest.raises(codec.UnsupportedVersionError) as e:
        codec.decode_request(frame[:9])  # not even the header decodes
    assert e.value.header is None


def test_trailing_policy_is_checked() -> None:
    with pytest.raises(ValueError, match="'raise' or 'ignore'"):
        codec.decode_request(_librdkafka_metadata_request(), trailing="skip")


@pytest.mark.parametrize("bad", ["abc", None, 42, [1, 2]])
def test_decode_a_value_that_is_not_a_frame(bad: object) -> None:
    with pytest.raises(TypeError, match=r"decode_request\(\) decodes a frame given as bytes"):
        codec.decode_request(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"decode_response\(\) decodes a frame given as bytes"):
        codec.decode_response(bad, 18, 3)  # type: ignore[arg-type]


def test_bytearray_and_memoryview_frames_decode() -> None:
    frame = _librdkafka_metadata_request()[:-3]
    for data in (bytearray(frame), memoryview(frame)):
        assert codec.decode_request(data).correlation_id == 3


def test_header_versions_use_the_enums_not_numbers() -> None:
    """ApiVersions, ControlledShutdown and UNSUPPORTED_VERSION are named, not 18, 7 and 35."""
    tree = ast.parse(Path(headers.__file__).read_text())
    numbers = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert not numbers & {7, 18, 35}
    assert codec.request_header_version(codec.ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    assert codec.request_header_version(codec.ApiKey.CONTROLLED_SHUTDOWN, 1) == 1
    assert codec.response_header_version(codec.ApiKey.API_VERSIONS, 4) == 0
