"""The broker on the wire: KIP-511, unserved APIs, malformed and oversized frames, pipelining."""

from __future__ import annotations

import logging
import struct
import time

import pytest
from confluent_kafka import Producer
from kafka_wire import WireClient

from kipwire.codec import ApiKey, ErrorCode, decode_response
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.handlers import HANDLERS
from kipwire.mockbroker.handlers.registry import handlers_for

MAX_REQUEST = 64 * 1024


@pytest.fixture(scope="module")
def small_cluster():
    """A cluster refusing requests over 64 KiB."""
    with MockCluster(brokers=2, config={"socket.request.max.bytes": MAX_REQUEST}) as running:
        yield running


def _first(cluster) -> str:
    return cluster.bootstrap_servers.split(",")[0]


def test_api_versions_lists_the_codec_ranges(small_cluster):
    with WireClient(_first(small_cluster)) as client:
        body = client.call(
            ApiKey.API_VERSIONS, 4, {"client_software_name": "t", "client_software_version": "1"}
        )
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    assert body["error_code"] == ErrorCode.NONE
    # Produce v0-v2 are listed but refused, as Kafka does (KAFKA-18659)
    assert ranges[0] == (0, 13) and ranges[1] == (4, 18) and ranges[75] == (0, 0)
    # GetReplicaLogInfo is served for the controller but, as in Kafka, not listed
    assert set(ranges) == set(HANDLERS) - {ApiKey.GET_REPLICA_LOG_INFO}
    assert {f["name"] for f in body["finalized_features"]} >= {"eligible.leader.replicas.version"}


def test_unknown_api_versions_version_gets_a_v0_reply_with_its_range(small_cluster):
    header = struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 7, 1) + b"t"
    with WireClient(_first(small_cluster)) as client:
        client.send_raw(struct.pack(">i", len(header) + 1) + header + b"\x00")
        response = decode_response(client.receive_frame(), ApiKey.API_VERSIONS, 99)
    assert response.api_version == 0 and response.correlation_id == 7
    assert response.body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    # as Kafka: ApiVersions' own range alone
    assert [k["api_key"] for k in response.body["api_keys"]] == [ApiKey.API_VERSIONS]


def test_an_api_the_cluster_does_not_serve_closes_the_connection(small_cluster):
    # Kafka 4.1's header check: no answer, that one connection closed
    with WireClient(_first(small_cluster)) as client:
        client.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert client.receive_frame() == b""


def test_malformed_body_gets_invalid_request_for_its_correlation_id(small_cluster):
    header = struct.pack(">hhih", ApiKey.FIND_COORDINATOR, 2, 42, 1) + b"t"
    body = b"\x7f\xff"  # a string length running past the frame
    with WireClient(_first(small_cluster)) as client:
        client.send_raw(struct.pack(">i", len(header + body)) + header + body)
        response = decode_response(client.receive_frame(), ApiKey.FIND_COORDINATOR, 2)
        assert response.correlation_id == 42
        assert response.body["error_code"] == ErrorCode.INVALID_REQUEST
        # the connection stays usable
        assert client.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]


def test_bytes_after_the_body_are_ignored(small_cluster):
    with WireClient(_first(small_cluster)) as client:
        cid = client.send(ApiKey.METADATA, 13, {"topics": None}, trailing=b"\x00\x00\x00")
        response = client.receive(ApiKey.METADATA, 13)
    assert response.correlation_id == cid
    assert len(response.body["brokers"]) == 2


def test_unreadable_header_closes_only_that_connection(small_cluster):
    with WireClient(_first(small_cluster)) as bad, WireClient(_first(small_cluster)) as good:
        bad.send_raw(struct.pack(">i", 3) + b"\x00\x12\x00")
        assert bad.receive_frame() == b""
        assert good.call(ApiKey.METADATA, 12, {"topics": []})["brokers"]


def test_oversized_frame_is_refused_before_its_body_is_sent(small_cluster):
    with WireClient(_first(small_cluster)) as client:
        client.send_raw(struct.pack(">i", MAX_REQUEST + 1))  # the size alone, no body follows
        assert client.receive_frame() == b""


def test_pipelined_requests_are_answered_in_order(small_cluster):
    with WireClient(_first(small_cluster)) as client:
        sent = [client.send(ApiKey.METADATA, 12, {"topics": []}) for _ in range(20)]
        got = [client.receive(ApiKey.METADATA, 12).correlation_id for _ in sent]
    assert got == sent


def test_every_served_api_and_version_answers_a_default_request(small_cluster, caplog):
    caplog.set_level(logging.ERROR, logger="kipwire.mockbroker")
    with WireClient(_first(small_cluster)) as client:
        for key, handler in handlers_for("4.4").items():
            for version in range(handler.min_version, handler.max_version + 1):
                body = {"acks": 1} if key == 0 else {}
                cid = client.send(key, version, body)
                response = client.receive(key, version)
                assert response.correlation_id == cid, (key, version)
    assert [r.getMessage() for r in caplog.records] == []


def test_garbage_on_one_connection_while_a_producer_loses_nothing(small_cluster):
    topic = "hostile-neighbour"
    small_cluster.create_topic(topic, partitions=2, replication_factor=2)
    producer = Producer(
        {"bootstrap.servers": small_cluster.bootstrap_servers, "enable.idempotence": True}
    )
    failures: list = []
    addresses = small_cluster.bootstrap_servers.split(",")
    hostile = [
        struct.pack(">i", 12) + b"\xde\xad\xbe\xef" * 3,  # unknown API key: closed
        struct.pack(">i", 40) + b"\x00\x03\x00\x0c\x00\x00",  # cut short, then closed
        struct.pack(">i", MAX_REQUEST * 4),  # oversized
        struct.pack(">i", 20) + struct.pack(">hhih", 0, 9, 1, -1) + b"\xff" * 10,  # junk body
    ]
    deadline = time.monotonic() + 30
    for i in range(2000):
        producer.produce(topic, b"%d" % i, on_delivery=lambda e, m: e and failures.append(e))
        if i % 200 == 0:
            with WireClient(addresses[(i // 200) % 2]) as client:
                client.send_raw(hostile[(i // 200) % len(hostile)])
        producer.poll(0)
    assert producer.flush(max(deadline - time.monotonic(), 1)) == 0
    assert failures == []
    logs = small_cluster.cluster.logs
    # the sticky partitioner may have used one partition only
    assert sum(logs[topic, p].end_offset for p in range(2) if (topic, p) in logs) == 2000
