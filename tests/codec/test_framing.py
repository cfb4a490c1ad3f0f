"""codec.framing: size-prefixed frames from any split of a stream, and request header peeks."""

from __future__ import annotations

import struct
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipwire import codec
from kipwire.codec.framing import FrameBuffer, RequestHeader, peek_error_code, peek_request_header


def _framed(*bodies: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(b)) + b for b in bodies)


def _metadata_request(version: int, client_id: str | None = "kcat") -> bytes:
    return codec.encode_request(
        codec.ApiKey.METADATA,
        version,
        {"topics": [{"name": "t"}] if version < 1 else None},
        correlation_id=77,
        client_id=client_id,
    )


def test_byte_at_a_time() -> None:
    bodies = [b"", b"a", b"hello world" * 20, bytes(range(256))]
    buf = FrameBuffer()
    got = []
    for byte in _framed(*bodies):
        buf.feed(bytes([byte]))
        got.extend(bytes(f) for f in buf.frames())
    assert got == bodies
    assert buf.buffered == 0
    assert buf.position == len(_framed(*bodies))


def test_many_frames_in_one_feed_and_a_partial_one() -> None:
    bodies = [bytes([i]) * i for i in range(50)]
    stream = _framed(*bodies)
    buf = FrameBuffer()
    buf.feed(stream + b"\x00\x00\x00\x05ab")
    assert [bytes(f) for f in buf] == bodies
    assert buf.next_frame() is None
    assert buf.buffered == 6
    assert buf.next_frame_size == 5
    assert buf.position == len(stream)
    buf.feed(b"cde")
    assert bytes(buf.next_frame()) == b"abcde"
    assert buf.buffered == 0


def test_frames_are_views_of_the_bytes_fed() -> None:
    stream = _framed(b"x" * 1000, b"y" * 1000)
    buf = FrameBuffer()
    buf.feed(stream)
    first, second = buf.frames()
    assert isinstance(first, memoryview)
    assert first.obj is stream and second.obj is stream
    assert bytes(second) == b"y" * 1000


def test_compact_lets_go_of_a_large_frame_once_it_is_taken() -> None:
    fed = _framed(b"x" * 100_000) + b"\x00\x00\x00\x02a"
    buf = FrameBuffer()
    buf.feed(fed)
    assert len(buf.next_frame()) == 100_000
    held = sys.getrefcount(fed)
    buf.compact()  # taken bytes outnumber those left: only the partial frame is kept
    assert sys.getrefcount(fed) < held  # the buffer no longer holds the large bytes
    assert buf.buffered == 5
    buf.feed(b"b")
    assert bytes(buf.next_frame()) == b"ab"
    few = _framed(b"a", b"b" * 1000)
    buf = FrameBuffer()
    buf.feed(few)
    first = buf.next_frame()
    buf.compact()  # more left than taken: nothing is copied
    assert first.obj is few and buf.next_frame().obj is few


def test_a_mutable_buffer_fed_is_copied() -> None:
    scratch = bytearray(_framed(b"abc"))
    buf = FrameBuffer()
    buf.feed(scratch)
    scratch[4:7] = b"zzz"  # the caller reuses its receive buffer
    assert bytes(buf.next_frame()) == b"abc"


def test_a_frame_over_the_limit_is_refused_before_its_body_arrives() -> None:
    buf = FrameBuffer(max_frame_size=1024)
    buf.feed(_framed(b"ok"))
    buf.feed(struct.pack(">i", 1025) + b"only a little of the body")
    assert bytes(buf.next_frame()) == b"ok"
    with pytest.raises(codec.FrameTooLargeError) as info:
        buf.next_frame()
    assert isinstance(info.value, codec.DecodeError)
    assert "1025" in str(info.value) and "1024" in str(info.value)
    assert (info.value.size, info.value.limit, info.value.offset) == (1025, 1024, 6)
    with pytest.raises(codec.FrameTooLargeError):  # the stream cannot be resynchronised
        buf.next_frame()


def test_a_frame_at_the_limit_is_taken() -> None:
    buf = FrameBuffer(max_frame_size=8)
    buf.feed(_framed(b"12345678"))
    assert bytes(buf.next_frame()) == b"12345678"


def test_a_negative_size_is_an_error() -> None:
    buf = FrameBuffer()
    buf.feed(struct.pack(">i", -3))
    with pytest.raises(codec.DecodeError, match="negative"):
        buf.next_frame()


def test_feed_rejects_a_str() -> None:
    with pytest.raises(TypeError, match="takes bytes"):
        FrameBuffer().feed("abc")  # type: ignore[arg-type]


def test_byte_at_a_time_copies_linearly() -> None:
    # 200 KB fed a byte at a time: a quadratic buffer would copy ~20 GB here and time out.
    body = b"z" * 200_000
    buf = FrameBuffer()
    frames = []
    for i, byte in enumerate(_framed(body)):
        buf.feed(bytes((byte,)))
        if i % 1000 == 0 or i >= 200_000:
            frames.extend(buf.frames())
    assert [bytes(f) for f in frames] == [body]


@settings(max_examples=200, deadline=None)
@given(
    bodies=st.lists(st.binary(max_size=300), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=20),
)
def test_any_split_yields_the_same_frames(bodies: list[bytes], cuts: list[int]) -> None:
    stream = _framed(*bodies)
    points = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    buf = FrameBuffer()
    got = []
    for a, b in zip(points, points[1:], strict=False):
        buf.feed(memoryview(stream)[a:b])
        got.extend(bytes(f) for f in buf.frames())
    assert got == bodies
    assert buf.buffered == 0


# -- peek_request_header ----------------------------------------------------------------------


@pytest.mark.parametrize(("version", "header_version"), [(0, 1), (8, 1), (9, 2), (12, 2)])
def test_peek_matches_the_full_decode(version: int, header_version: int) -> None:
    frame = _metadata_request(version)
    peeked = peek_request_header(frame)
    decoded = codec.decode_request(frame)
    assert decoded.header_version == header_version
    assert peeked == RequestHeader(codec.ApiKey.METADATA, version, 77, "kcat", peeked.header_size)
    # the body starts right after the header: decoding it alone gives the same body
    body = codec.message("MetadataRequest", version).parse(frame[peeked.header_size :])
    assert body == decoded.body


def test_peek_a_null_client_id() -> None:
    assert peek_request_header(_metadata_request(4, client_id=None)).client_id is None


def test_peek_skips_header_tagged_fields() -> None:
    frame = _metadata_request(12)
    plain = peek_request_header(frame)
    # the same header with one unknown tagged field (tag 5, 3 bytes) in its section
    tagged = frame[: plain.header_size - 1] + b"\x01\x05\x03abc" + frame[plain.header_size :]
    peeked = peek_request_header(tagged)
    assert peeked.header_size == plain.header_size + 5
    assert peeked.correlation_id == 77


def test_controlled_shutdown_v0_has_a_header_v0() -> None:
    frame = codec.encode_request(
        codec.ApiKey.CONTROLLED_SHUTDOWN, 0, {"broker_id": 3}, correlation_id=9
    )
    assert peek_request_header(frame) == RequestHeader(
        codec.ApiKey.CONTROLLED_SHUTDOWN, 0, 9, None, 8
    )
    assert codec.decode_request(frame).body["broker_id"] == 3


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (b"\x00\x03\x00", "needs 8 bytes"),
        (b"\x00\x03\x00\x04\x00\x00\x00\x01", "client id"),
        (b"\x00\x03\x00\x04\x00\x00\x00\x01\x00\x09abc", "claims 9 bytes"),
        (b"\x00\x03\x00\x0c\x00\x00\x00\x01\xff\xff\x01\x05\x09ab", "claims 9 bytes"),
        (b"\x00\x03\x00\x0c\x00\x00\x00\x01\xff\xff\x81", "varint"),
        (b"\x7f\x00\x00\x00\x00\x00\x00\x01", "unknown API key"),
    ],
)
def test_peek_a_short_or_bad_header(frame: bytes, match: str) -> None:
    with pytest.raises(codec.DecodeError, match=match):
        peek_request_header(frame)


def test_a_body_failure_carries_the_header() -> None:
    frame = _metadata_request(12)
    with pytest.raises(codec.DecodeError) as info:
        codec.decode_request(frame[:-1])
    assert info.value.header == peek_request_header(frame)
    assert info.value.header.correlation_id == 77


def test_a_header_failure_has_no_header() -> None:
    with pytest.raises(codec.DecodeError) as info:
        codec.decode_request(b"\x00\x03\x00\x04\x00\x00\x00\x01\x00\x09abc")
    assert info.value.header is None


_METADATA_RESPONSE = {
    "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
    "cluster_id": "c",
    "controller_id": 1,
    "topics": [],
}


# -- the error code of a response that does not decode ------------------------------------------


def test_error_code_of_a_broken_api_versions_reply() -> None:
    # The librdkafka mock's ApiVersions v3 reply: UNSUPPORTED_VERSION, then a body that is
    # neither v0 nor v3.
    frame = struct.pack(">ih", 11, codec.ErrorCode.UNSUPPORTED_VERSION) + b"\x05\x00"
    with pytest.raises(codec.DecodeError):
        codec.decode_response(frame, codec.ApiKey.API_VERSIONS, 3)
    code = peek_error_code(frame, codec.ApiKey.API_VERSIONS, 3)
    assert code == codec.ErrorCode.UNSUPPORTED_VERSION


def test_error_code_after_the_throttle_time_and_a_flexible_header() -> None:
    not_found = codec.ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    body = {"throttle_time_ms": 5, "error_code": not_found}
    frame = codec.encode_response(codec.ApiKey.FETCH, 12, body, correlation_id=1)
    assert codec.response_header_version(codec.ApiKey.FETCH, 12) == 1
    cut = frame[:-2]
    with pytest.raises(codec.DecodeError):
        codec.decode_response(cut, codec.ApiKey.FETCH, 12)
    assert peek_error_code(cut, codec.ApiKey.FETCH, 12) == not_found
    # the header's tagged fields are skipped, whatever they hold
    tagged = frame[:4] + b"\x01\x07\x02xy" + frame[5:]
    assert peek_error_code(tagged, codec.ApiKey.FETCH, 12) == not_found


def test_no_error_code_where_the_body_has_none() -> None:
    metadata = codec.encode_response(
        codec.ApiKey.METADATA, 13, _METADATA_RESPONSE, correlation_id=1
    )
    assert peek_error_code(metadata, codec.ApiKey.METADATA, 13) is None  # no top-level code
    assert peek_error_code(b"\x00\x00\x00\x01\x00", codec.ApiKey.API_VERSIONS, 3) is None
    with pytest.raises(codec.UnknownApiError):
        peek_error_code(metadata, 999, 0)
