"""Client connections out of captures, and every connection the replay cannot send, named."""

from __future__ import annotations

from pathlib import Path

from kipwire import codec
from kipwire.captures.decoding.pipeline import input_segments
from kipwire.captures.pcap import PcapngWriter
from kipwire.captures.reading.inputs import expand_inputs
from kipwire.captures.reading.packets import SYN
from kipwire.captures.reading.reassembly import TcpReassembler
from kipwire.captures.replaying import extract as ex
from kipwire.codec import ApiKey

START = 1_795_000_000_000_000_000


def _sized(frame: bytes) -> bytes:
    return len(frame).to_bytes(4, "big") + frame


def _metadata(cid: int, client: str) -> tuple[bytes, bytes]:
    req = codec.encode_request(
        ApiKey.METADATA, 12, {"topics": None}, correlation_id=cid, client_id=client
    )
    resp = codec.encode_response(
        ApiKey.METADATA, 12, {"brokers": [], "topics": []}, correlation_id=cid
    )
    return _sized(req), _sized(resp)


def _heartbeat(cid: int) -> tuple[bytes, bytes]:
    req = codec.encode_request(
        ApiKey.BROKER_HEARTBEAT, 1, {"broker_id": 1}, correlation_id=cid, client_id="broker-1"
    )
    resp = codec.encode_response(ApiKey.BROKER_HEARTBEAT, 1, {}, correlation_id=cid)
    return _sized(req), _sized(resp)


def _sasl(cid: int) -> tuple[bytes, bytes]:
    req = codec.encode_request(
        ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, correlation_id=cid, client_id="app"
    )
    resp = codec.encode_response(
        ApiKey.SASL_HANDSHAKE, 1, {"mechanisms": ["PLAIN"]}, correlation_id=cid
    )
    return _sized(req), _sized(resp)


def _write(path: Path) -> None:
    """One conversation per case, client ports 50001.. in order."""
    tls = (b"\x16\x03\x01\x00\x05hello", b"\x16\x03\x03\x00\x05there")
    cases = [
        [_metadata(1, "app-1"), _metadata(2, "app-1")],
        [_metadata(1, "other")],
        [_heartbeat(1)],
        [_sasl(1), _metadata(2, "app")],
        [tls],
    ]
    with PcapngWriter(path) as pcap:
        t = START
        for n, exchanges in enumerate(cases):
            conv = pcap.conversation(("10.0.0.1", 50001 + n), ("10.0.0.2", 9092), ts_ns=t)
            for request, answer in exchanges:
                t += 1_000_000
                conv.client_sends(request, ts_ns=t)
                t += 1_000_000
                conv.server_sends(answer, ts_ns=t)
            conv.close(ts_ns=t + 1)


def test_client_connections_are_extracted_with_their_exchanges(tmp_path: Path) -> None:
    _write(tmp_path / "c.pcapng")
    found = ex.extract([tmp_path / "c.pcapng"])
    names = [(c.client_id, len(c.exchanges)) for c in found.connections]
    assert names == [("app-1", 2), ("other", 1)]
    first = found.connections[0].exchanges[0]
    assert first.api_key == ApiKey.METADATA and first.response is not None
    assert first.decoded_response()["brokers"] == []
    assert first.response_ts_ns - first.ts_ns == 1_000_000
    reasons = {(r.reason, r.requests) for r in found.not_replayed}
    assert reasons == {(ex.CLUSTER_TRAFFIC, 1), (ex.SASL, 2), (ex.TLS, 0)}


def test_client_id_narrows_and_says_what_it_left_out(tmp_path: Path) -> None:
    _write(tmp_path / "c.pcapng")
    found = ex.extract([tmp_path / "c.pcapng"], client_id="^app-")
    assert [c.client_id for c in found.connections] == ["app-1"]
    assert ex.NotReplayed(ex.CLIENT_FILTER, "10.0.0.1:50002 -> 10.0.0.2:9092", 1, "other") in (
        found.not_replayed
    )


def test_a_connection_seen_without_its_start_is_not_replayed(tmp_path: Path) -> None:
    _write(tmp_path / "c.pcapng")
    (file,) = expand_inputs([str(tmp_path / "c.pcapng")])
    reasm = TcpReassembler()
    reasm.add_many((ts, seg) for ts, seg in input_segments(file) if not seg.flags & SYN)
    found = ex.extract_connections(reasm.finish(), from_start_known=False)
    assert not found.connections
    assert {r.reason for r in found.not_replayed} >= {ex.MID_CONNECTION}
    # the two client connections and the SASL one: 5 requests; the broker's and TLS apart
    assert sum(r.requests for r in found.not_replayed if r.reason == ex.MID_CONNECTION) == 5
