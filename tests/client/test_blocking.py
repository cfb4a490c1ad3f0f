"""The blocking connection against a mock cluster's broker and scripted fake peers."""

from __future__ import annotations

import socket
import time

import pytest
from client_peers import answer, fake_peer, hold_first_answer

from kipwire.client import (
    ClientError,
    Connection,
    ConnectionClosedError,
    CorrelationIdMismatchError,
    RequestTimeoutError,
    split_address,
)
from kipwire.codec import ApiKey, ErrorCode, Request, encode_request
from kipwire.codec.records import build_batch

METADATA_VERSION = 12


def test_negotiated_versions_are_what_the_broker_advertises(broker):
    with Connection(broker) as conn:
        versions = conn.negotiate_versions()
        listed = conn.call(ApiKey.API_VERSIONS, 3, {})["api_keys"]
    advertised = {e["api_key"]: (e["min_version"], e["max_version"]) for e in listed}
    assert ApiKey.PRODUCE in advertised
    assert dict(versions.ranges) == advertised
    assert conn.versions is versions


def test_a_call_returns_the_decoded_body(broker):
    with Connection(broker, client_id="client-test") as conn:
        body = conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
    assert [b["port"] for b in body["brokers"]] == [split_address(broker)[1]]


def test_pipelined_requests_are_answered_in_order(broker):
    with Connection(broker) as conn:
        sent = [conn.send(ApiKey.METADATA, METADATA_VERSION, {"topics": []}) for _ in range(5)]
        with pytest.raises(ClientError, match="5 earlier request"):
            conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
        got = [conn.receive() for _ in sent]
    assert [r.request for r in got] == sent
    assert [r.decode().correlation_id for r in got] == [s.correlation_id for s in sent]


def test_a_produce_with_acks_0_leaves_the_connection_in_step(broker):
    with Connection(broker) as conn:
        batch = build_batch([{"key": None, "value": b"v", "headers": [], "timestamp": 0}])
        body = {
            "acks": 0,
            "timeout_ms": 1000,
            "topic_data": [{"name": "nowhere", "partition_data": [{"index": 0, "records": batch}]}],
        }
        assert conn.request(ApiKey.PRODUCE, 9, body) is None
        assert conn.awaiting == ()
        assert conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})["brokers"]


def test_a_captured_frame_is_sent_with_this_connections_correlation_id(broker):
    frame = encode_request(ApiKey.METADATA, METADATA_VERSION, {"topics": []}, correlation_id=999)
    with Connection(broker) as conn:
        conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
        sent = conn.send_frame(frame)
        response = conn.receive().decode()
    assert sent.correlation_id == response.correlation_id == 2


def test_a_broker_that_closes_the_connection_is_a_clear_error(broker):
    with Connection(broker) as conn:
        # the mock serves no SASL: like Kafka without a SASL listener it closes the connection
        conn.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        with pytest.raises(ConnectionClosedError, match="SASL_HANDSHAKE v1") as caught:
            conn.receive()
        assert isinstance(caught.value, OSError)
        with pytest.raises(ConnectionClosedError):
            conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})


def test_a_closed_connection_refuses_requests(broker):
    conn = Connection(broker)
    conn.close()
    with pytest.raises(ConnectionClosedError, match="closed by this side"):
        conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})


def test_nothing_listening_is_an_os_error():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    with pytest.raises(ConnectionRefusedError):
        Connection(("127.0.0.1", port), timeout=2)


def test_an_answer_out_of_step_is_refused():
    def out_of_step(request: Request, seen: list[Request]) -> bytes:
        return answer(request, request.correlation_id + 1)

    with fake_peer(out_of_step) as address, Connection(address, timeout=5) as conn:
        with pytest.raises(CorrelationIdMismatchError, match="correlation id 2"):
            conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
        with pytest.raises(ConnectionClosedError, match="cannot be used"):
            conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})


def test_a_late_answer_times_out_and_is_dropped_when_it_comes():
    with fake_peer(hold_first_answer) as address, Connection(address, timeout=0.2) as conn:
        start = time.monotonic()
        with pytest.raises(RequestTimeoutError) as caught:
            conn.call(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
        assert isinstance(caught.value, TimeoutError)
        assert 0.2 <= time.monotonic() - start < 5
        conn.timeout = 5
        response = conn.request(ApiKey.FIND_COORDINATOR, 3, {"key": "g"})
    assert response.api_key == ApiKey.FIND_COORDINATOR and response.correlation_id == 2
    assert response.body["error_code"] == ErrorCode.NONE


def old_peer(request: Request, seen: list[Request]) -> bytes | None:
    """A peer whose ApiVersions stops at v2: a newer ask gets KIP-511's v0 answer."""
    own = [{"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": 2}]
    if request.api_version > 2:
        body = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": own}
        return answer(request, body=body, version=0)
    metadata = {"api_key": ApiKey.METADATA, "min_version": 0, "max_version": 9}
    return answer(request, body={"api_keys": [*own, metadata]})


def test_kip_511_an_older_peer_is_asked_again_in_its_apiversions_version():
    with fake_peer(old_peer) as address, Connection(address, timeout=5) as conn:
        versions = conn.negotiate_versions()
    assert versions.highest(ApiKey.METADATA) == 9
    assert versions.ranges[ApiKey.API_VERSIONS] == (0, 2)
