"""A Fetch response's records gathered, not joined: `encode_frame` with `Chunks` writes the bytes
`frame(encode_response(...))` writes with the records whole, and `send_frame` delivers them."""

from __future__ import annotations

import uuid

import pytest
import trio
import trio.testing

from kipwire.codec import ApiKey, ErrorCode, encode_response
from kipwire.mockbroker import gathered
from kipwire.mockbroker.gathered import Chunks, GatheredFrame, records_of, send_frame
from kipwire.mockbroker.serve import encode_frame, frame


def _partition(index: int, records: object) -> dict:
    return {
        "partition_index": index,
        "error_code": ErrorCode.NONE,
        "high_watermark": 3,
        "last_stable_offset": 3,
        "log_start_offset": 0,
        "records": records,
    }


def _body(version: int, records: list[object]) -> dict:
    topic = {"topic_id": uuid.uuid4()} if version >= 13 else {"topic": "t"}
    parts = [_partition(i, r) for i, r in enumerate(records)]
    return {
        "error_code": ErrorCode.NONE,
        "session_id": 0,
        "responses": [{**topic, "partitions": parts}],
    }


def _joined(body: dict) -> dict:
    (topic,) = body["responses"]
    parts = [{**p, "records": bytes(p["records"])} for p in topic["partitions"]]
    return {**body, "responses": [{**topic, "partitions": parts}]}


# 200 pieces of 100 bytes: a compact length of three varint bytes, beside one and two
_PIECES = [bytes([i % 251]) * 100 for i in range(200)]


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_gathered_records_frame_as_the_joined_bytes_would(version):
    body = _body(version, [Chunks(_PIECES), b"", Chunks([b"a", b"bc"]), b"single"])
    expected = frame(encode_response(ApiKey.FETCH, version, _joined(body), correlation_id=7))
    framed = encode_frame(ApiKey.FETCH, version, body, correlation_id=7)
    assert type(framed) is GatheredFrame
    assert bytes(framed) == expected
    assert len(framed) == len(expected)
    # the body holds its Chunks again, for whatever reads it after
    assert type(body["responses"][0]["partitions"][0]["records"]) is Chunks


def test_a_marker_out_of_place_falls_back_to_the_joined_records(monkeypatch):
    body = _body(16, [Chunks([b"x" * 10, b"y" * 10])])
    monkeypatch.setattr(gathered, "_MARK_PREFIX", {True: b"\x00", False: b"\x00" * 4})
    framed = encode_frame(ApiKey.FETCH, 16, body, correlation_id=1)
    assert type(framed) is bytearray
    assert bytes(framed) == frame(
        encode_response(ApiKey.FETCH, 16, _joined(body), correlation_id=1)
    )
    assert type(body["responses"][0]["partitions"][0]["records"]) is Chunks


def test_records_of_copies_nothing_for_none_or_one_part():
    one = b"batch"
    assert records_of([]) == b""
    assert records_of([one]) is one
    many = records_of([b"ab", b"c"])
    assert type(many) is Chunks and len(many) == 3 and bytes(many) == b"abc" and many == b"abc"


@pytest.mark.trio
async def test_send_frame_writes_every_buffer_in_order():
    # 3 MB in 700 buffers: more than one sendmsg (IOV_MAX, and more than the socket takes at once)
    pieces = [bytes([i % 256]) * ((3 << 20) // 700) for i in range(700)]
    body = _body(16, [Chunks(pieces)])
    framed = encode_frame(ApiKey.FETCH, 16, body, correlation_id=3)
    assert type(framed) is GatheredFrame
    expected = bytes(framed)
    a, b = trio.socket.socketpair()
    sender, receiver = trio.SocketStream(a), trio.SocketStream(b)
    got = bytearray()

    async def receive() -> None:
        while len(got) < len(expected):
            got.extend(await receiver.receive_some(1 << 16))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receive)
        await send_frame(sender, framed)
    assert bytes(got) == expected


@pytest.mark.trio
async def test_send_frame_joins_for_other_streams():
    sender, receiver = trio.testing.memory_stream_pair()
    framed = encode_frame(ApiKey.FETCH, 12, _body(12, [Chunks([b"p", b"q"])]), correlation_id=5)
    await send_frame(sender, framed)
    assert await receiver.receive_some() == bytes(framed)
