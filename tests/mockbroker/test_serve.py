"""The serve pipeline's response framing: `encode_frame` writes what `frame(encode_response(...))`
writes, in one buffer."""

from __future__ import annotations

import uuid

import pytest

from kipwire.codec import ApiKey, EncodeError, ErrorCode, encode_response
from kipwire.mockbroker.serve import encode_frame, frame

_PARTITION = {
    "partition_index": 0,
    "error_code": ErrorCode.NONE,
    "high_watermark": 3,
    "last_stable_offset": 3,
    "log_start_offset": 0,
    "records": b"r" * 5000,
}


@pytest.mark.parametrize(
    ("key", "version", "body"),
    [
        (ApiKey.FETCH, 12, {"responses": [{"topic": "t", "partitions": [_PARTITION]}]}),
        (ApiKey.FETCH, 16, {"responses": [{"topic_id": uuid.uuid4(), "partitions": [_PARTITION]}]}),
        # a key of another version: the Python builder's answer, framed alike
        (ApiKey.FETCH, 16, {"responses": [{"topic": "t", "partitions": [_PARTITION]}]}),
        (ApiKey.PRODUCE, 9, {"responses": [{"name": "t", "partition_responses": []}]}),
        (ApiKey.API_VERSIONS, 0, {"error_code": ErrorCode.NONE, "api_keys": []}),
        (ApiKey.API_VERSIONS, 3, {"error_code": ErrorCode.NONE, "api_keys": []}),
    ],
)
def test_encode_frame_writes_the_size_prefixed_response(key, version, body):
    framed = encode_frame(key, version, body, correlation_id=41)
    assert bytes(framed) == frame(encode_response(key, version, body, correlation_id=41))
    assert int.from_bytes(framed[:4], "big") == len(framed) - 4


def test_encode_frame_refuses_what_has_no_codec():
    with pytest.raises(EncodeError):
        encode_frame(ApiKey.FETCH, 999, {}, correlation_id=1)
    with pytest.raises(EncodeError):
        encode_frame(max(ApiKey) + 1, 0, {}, correlation_id=1)
