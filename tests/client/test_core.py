"""The sans-I/O core alone: bytes out for requests, matched replies out of bytes in."""

from __future__ import annotations

import struct

import pytest

from kipwire.client import (
    ClientError,
    ConnectionClosedError,
    ConnectionCore,
    CorrelationIdMismatchError,
)
from kipwire.codec import ApiKey, FrameTooLargeError, decode_request, encode_response

METADATA_BODY = {"topics": []}


def _answer(cid: int, version: int = 12) -> bytes:
    """A size-prefixed Metadata response with correlation id `cid`."""
    frame = encode_response(ApiKey.METADATA, version, {"brokers": []}, correlation_id=cid)
    return struct.pack(">i", len(frame)) + frame


def _produce(acks: int) -> dict:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 1000, "topic_data": []}


def _encoded(key: int, version: int, body: dict, cid: int = 77) -> bytes:
    _, data = ConnectionCore(first_correlation_id=cid).request(key, version, body)
    return data[4:]


def test_requests_carry_counting_ids_and_the_header_version_of_their_api_version():
    core = ConnectionCore("me")
    sent = []
    for key, version, header_version in [
        (ApiKey.METADATA, 12, 2),  # flexible: header v2
        (ApiKey.METADATA, 8, 1),
        (ApiKey.CONTROLLED_SHUTDOWN, 0, 0),  # the one API version on header v0
    ]:
        request, data = core.request(key, version, {})
        (size,) = struct.unpack_from(">i", data)
        assert size == len(data) - 4
        decoded = decode_request(data[4:])
        assert (decoded.api_key, decoded.api_version) == (key, version)
        assert decoded.header_version == header_version
        assert decoded.correlation_id == request.correlation_id
        sent.append(request.correlation_id)
    assert sent == [1, 2, 3]
    assert [r.correlation_id for r in core.awaiting] == sent


def test_replies_come_out_whole_and_in_order():
    core = ConnectionCore()
    first, _ = core.request(ApiKey.METADATA, 12, METADATA_BODY)
    second, _ = core.request(ApiKey.METADATA, 12, METADATA_BODY)
    data = _answer(first.correlation_id) + _answer(second.correlation_id)
    core.receive_data(data[:7])
    assert core.next_reply() is None
    core.receive_data(data[7:])
    replies = [core.next_reply(), core.next_reply()]
    assert [r.request for r in replies] == [first, second]
    assert replies[0].decode().body["brokers"] == []
    assert core.awaiting == ()


def test_an_answer_out_of_step_raises_and_leaves_the_connection_unusable():
    core = ConnectionCore()
    sent, _ = core.request(ApiKey.METADATA, 12, METADATA_BODY)
    core.receive_data(_answer(sent.correlation_id + 5))
    with pytest.raises(CorrelationIdMismatchError) as caught:
        core.next_reply()
    assert (caught.value.expected, caught.value.received) == (1, 6)
    with pytest.raises(ConnectionClosedError, match="correlation id 6"):
        core.request(ApiKey.METADATA, 12, METADATA_BODY)


def test_a_peer_that_closes_with_requests_unanswered_is_named():
    core = ConnectionCore()
    core.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    core.receive_data(b"")
    with pytest.raises(ConnectionClosedError, match="SASL_HANDSHAKE v1"):
        core.next_reply()
    with pytest.raises(ConnectionClosedError, match="peer closed"):
        core.request(ApiKey.METADATA, 12, METADATA_BODY)
    assert not core.usable


@pytest.mark.parametrize("acks, answered", [(0, False), (1, True), (-1, True)])
def test_only_a_produce_with_acks_0_goes_unanswered(acks, answered):
    core = ConnectionCore()
    request, _ = core.request(ApiKey.PRODUCE, 9, _produce(acks))
    assert request.expects_response is answered
    assert (core.awaiting == (request,)) is answered
    # the same frame sent as captured bytes is judged the same way
    frame = _encoded(ApiKey.PRODUCE, 9, _produce(acks))
    framed, data = ConnectionCore().request_frame(frame)
    assert framed.expects_response is answered
    assert data[4:] == frame[:4] + struct.pack(">i", 1) + frame[8:]


def test_a_captured_frame_is_renumbered_unless_asked_not_to():
    frame = _encoded(ApiKey.METADATA, 12, METADATA_BODY, cid=77)
    core = ConnectionCore(first_correlation_id=5)
    renumbered, data = core.request_frame(frame)
    kept, _ = core.request_frame(frame, renumber=False)
    assert renumbered.correlation_id == decode_request(data[4:]).correlation_id == 5
    assert kept.correlation_id == 77
    with pytest.raises(ValueError, match="8-byte header"):
        core.request_frame(b"\x00\x03")


def test_the_answer_to_an_abandoned_request_is_dropped():
    core = ConnectionCore()
    late, _ = core.request(ApiKey.METADATA, 12, METADATA_BODY)
    core.abandon(late)
    wanted, _ = core.request(ApiKey.METADATA, 12, METADATA_BODY)
    assert core.awaiting == (wanted,)
    assert (core.awaiting_count, core.oldest_awaiting()) == (1, wanted)
    core.receive_data(_answer(late.correlation_id) + _answer(wanted.correlation_id))
    assert core.next_reply().request == wanted


def test_receiving_with_nothing_awaited_is_a_client_error():
    core = ConnectionCore()
    with pytest.raises(ClientError, match="no request"):
        core.next_reply()


def test_correlation_ids_wrap_after_the_int32_maximum():
    core = ConnectionCore(first_correlation_id=2**31 - 1)
    ids = [core.request(ApiKey.METADATA, 12, METADATA_BODY)[0].correlation_id for _ in range(2)]
    assert ids == [2**31 - 1, 0]


def test_an_oversized_response_frame_fails_the_connection():
    core = ConnectionCore(max_frame_size=16)
    core.request(ApiKey.METADATA, 12, METADATA_BODY)
    core.receive_data(struct.pack(">i", 17))
    with pytest.raises(FrameTooLargeError):
        core.next_reply()
    with pytest.raises(ConnectionClosedError, match="framing"):
        core.next_reply()


def test_an_unmatched_frame_counts_as_the_oldest_answer():
    core = ConnectionCore()
    core.request(ApiKey.METADATA, 12, METADATA_BODY)
    core.receive_data(_answer(99))
    assert struct.unpack_from(">i", core.next_frame())[0] == 99
    assert core.awaiting == ()
    core.receive_data(b"")
    with pytest.raises(ConnectionClosedError):
        core.next_frame()
