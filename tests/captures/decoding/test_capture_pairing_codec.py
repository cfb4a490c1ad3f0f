"""Pairing with the real codec: bytes after a body, and responses that do not decode."""

from __future__ import annotations

import inspect
import struct
from pathlib import Path

import pytest
from kafka_capture_kit import T0, frame, metadata_pair

from kipwire import codec
from kipwire.captures.decoding.pipeline import decode_capture
from kipwire.captures.reading.pcap import PcapngWriter
from kipwire.codec import ApiKey, ErrorCode

needs_trailing = pytest.mark.skipif(
    "trailing" not in inspect.signature(codec.decode_request).parameters,
    reason="this codec has no decode_request(trailing='ignore') yet",
)


def _capture(path: Path, exchanges: list[tuple[bytes, bytes]]) -> None:
    with PcapngWriter(path) as w:
        conv = w.conversation(("10.0.0.2", 40001), ("10.0.0.9", 9092), T0)
        for n, (req, resp) in enumerate(exchanges):
            conv.client_sends(req, T0 + n * 1000)
            conv.server_sends(resp, T0 + n * 1000 + 500)
        conv.close(T0 + 100_000)


@needs_trailing
def test_bytes_after_a_body_are_counted_not_malformed(tmp_path: Path) -> None:
    """librdkafka 2.16 sends 3 bytes after its MetadataRequest v13; Kafka ignores them."""
    req, resp = metadata_pair(5, "orders", version=13)
    req = frame(req[4:] + b"\x00\x00\x00")
    _capture(tmp_path / "c.pcapng", [(req, resp)])
    rows = decode_capture(tmp_path / "c.pcapng")
    request, response = rows.pdus
    assert request["decode_status"] == "ok" and request["trailing_bytes"] == 3
    assert request["topics"] == ["orders"] and request["body_json"]
    assert response["decode_status"] == "ok" and response["trailing_bytes"] == 0
    assert [p["status"] for p in rows.pairs] == ["answered"]


def test_a_response_that_does_not_decode_keeps_its_error_code(tmp_path: Path) -> None:
    """As the librdkafka mock's broken ApiVersions v3 reply: UNSUPPORTED_VERSION, then junk."""
    req = frame(
        codec.encode_request(ApiKey.API_VERSIONS, 3, {}, correlation_id=9, client_id="rdkafka")
    )
    resp = frame(struct.pack(">ih", 9, ErrorCode.UNSUPPORTED_VERSION) + b"\xff\xff\xff")
    _capture(tmp_path / "c.pcapng", [(req, resp)])
    rows = decode_capture(tmp_path / "c.pcapng")
    response = rows.pdus[1]
    assert (
        response["decode_status"] == "malformed"
        and response["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    )
    (pair,) = rows.pairs
    assert (pair["status"], pair["error_code"]) == (
        "answered_malformed",
        ErrorCode.UNSUPPORTED_VERSION,
    )


def test_a_request_that_does_not_decode_keeps_its_client_id(tmp_path: Path) -> None:
    good = codec.encode_request(
        ApiKey.METADATA, 12, {"topics": [{"name": "t"}]}, correlation_id=4, client_id="c1"
    )
    bad = frame(good[:-2])  # the body cut short; the header is whole
    _capture(tmp_path / "c.pcapng", [(bad, metadata_pair(4, "t")[1])])
    request = decode_capture(tmp_path / "c.pcapng").pdus[0]
    assert request["decode_status"] == "malformed" and request["client_id"] == "c1"


def test_a_capture_decodes_93_as_kafka_does_and_never_as_an_extension(tmp_path: Path) -> None:
    """Kafka 4.4.0's apiKey 93 is StreamsGroupTopologyDescriptionUpdate; GetReplicaLogInfo and
    ElectLeaders v3 exist only in kipwire (codec.extensions), so a capture holding them is odd."""
    streams = codec.ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
    elect, replica_info = codec.ApiKey.ELECT_LEADERS, codec.ApiKey.GET_REPLICA_LOG_INFO
    exchanges = [
        (
            frame(codec.encode_request(streams, 0, {}, correlation_id=1, client_id="s")),
            frame(codec.encode_response(streams, 0, {}, correlation_id=1)),
        ),
        (
            frame(codec.encode_request(elect, 3, {}, correlation_id=2, client_id="k")),
            frame(codec.encode_response(elect, 3, {}, correlation_id=2)),
        ),
        (
            frame(codec.encode_request(replica_info, 0, {}, correlation_id=3, client_id="k")),
            frame(codec.encode_response(replica_info, 0, {}, correlation_id=3)),
        ),
    ]
    _capture(tmp_path / "c.pcapng", exchanges)
    rows = decode_capture(tmp_path / "c.pcapng")
    by_key = {}
    for pdu in rows.pdus:
        by_key.setdefault(pdu["api_key"], []).append(pdu)
    assert [p["decode_status"] for p in by_key[streams]] == ["ok", "ok"]
    assert by_key[streams][0]["api_name"] == "StreamsGroupTopologyDescriptionUpdate"
    for key in (elect, replica_info):
        assert [p["decode_status"] for p in by_key[key]] == ["unsupported_version"] * 2
        assert "kipwire extension" in by_key[key][0]["decode_error"]
