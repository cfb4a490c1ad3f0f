"""What a decoded body says: facts and JSON, in one walk and in separate passes alike."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from captures_testkit import SHARED_CAPTURES
from kafka_capture_kit import fetch13_pair, metadata_pair

from kipwire import codec
from kipwire.captures.decoding import bodies, pairing
from kipwire.captures.decoding.bodies import body_json, count_records, facts, facts_and_json
from kipwire.captures.decoding.pipeline import decode_capture
from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch


def test_count_records():
    v2 = bytearray(61)
    struct.pack_into(">qi", v2, 0, 0, 49)
    v2[16] = 2
    struct.pack_into(">i", v2, 57, 3)
    assert count_records(bytes(v2) * 2) == 6
    assert count_records(bytes(v2) + bytes(v2)[:30]) == 3  # a cut last batch is not counted
    legacy = struct.pack(">qi", 0, 14) + b"\0" * 4 + b"\x01\x00" + b"\0" * 8
    assert count_records(legacy * 3) == 3
    compressed = bytearray(legacy)
    compressed[21] = 1
    assert count_records(bytes(compressed)) is None
    assert count_records(None) is None and count_records(b"") == 0


def _separately(body):
    found = facts(body)
    return found, body_json(codec, body, found[3])


def _produce(records: bytes) -> dict:
    partition = {"index": 0, "records": records}
    return {
        "acks": -1,
        "timeout_ms": 1,
        "topic_data": [{"name": "t", "partition_data": [partition]}],
    }


def _bodies() -> list:
    """Decoders of bodies of every shape the walk meets: records, topic ids, nested error codes.

    Each test decodes afresh: `facts_and_json` expands records in the body it is given.
    """
    batch = build_batch([{"key": b"k", "value": b"v" * 10, "timestamp": 1}])
    out = []
    for records in (batch, batch + batch, b"", None):
        frame = codec.encode_request(ApiKey.PRODUCE, 8, _produce(records), correlation_id=1)
        out.append(lambda frame=frame: codec.decode_request(frame).body)
    for req, resp in (metadata_pair(7, "orders"), fetch13_pair(8)):
        request = codec.decode_request(req[4:])
        out.append(lambda req=req: codec.decode_request(req[4:]).body)
        key, version = request.api_key, request.api_version
        out.append(lambda r=resp, k=key, v=version: codec.decode_response(r[4:], k, v).body)
    errors = {
        "responses": [
            {
                "name": "t",
                "partition_responses": [
                    {"index": 0, "error_code": ErrorCode.NONE, "base_offset": 1},
                    {"index": 1, "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER},
                ],
            }
        ]
    }
    frame = codec.encode_response(ApiKey.PRODUCE, 8, errors, correlation_id=1)
    out.append(lambda: codec.decode_response(frame, ApiKey.PRODUCE, 8).body)
    return out


@pytest.mark.parametrize("decoded", _bodies())
def test_one_walk_gives_what_the_separate_passes_give(decoded) -> None:
    found, text = facts_and_json(decoded(), codec)
    assert (found, text) == _separately(decoded())
    assert json.loads(text) is not None


def test_a_bad_batch_keeps_its_blob_and_says_why() -> None:
    batch = bytearray(build_batch([{"key": b"k", "value": b"v", "timestamp": 1}]))
    batch[-1] ^= 0xFF  # the CRC no longer holds
    frame = codec.encode_request(ApiKey.PRODUCE, 8, _produce(bytes(batch)), correlation_id=1)
    found, text = facts_and_json(codec.decode_request(frame).body, codec)
    assert (found, text) == _separately(codec.decode_request(frame).body)
    partition = json.loads(text)["topic_data"][0]["partition_data"][0]
    assert isinstance(partition["records"], str) and "CRC" in partition["records_error"]
    assert found[2] == 1 and found[3]  # counted from the batch header all the same


def _rows(path: Path) -> list[tuple]:
    cols = ("error_code", "topics", "record_count", "body_json", "topic_ids", "decode_status")
    return [tuple(r[c] for c in cols) for r in decode_capture(path).pdus]


@pytest.mark.skipif(not SHARED_CAPTURES.is_dir(), reason=f"{SHARED_CAPTURES} is absent")
def test_shared_captures_give_the_same_rows_either_way(monkeypatch) -> None:
    files = sorted(SHARED_CAPTURES.rglob("*.pcap*"))
    assert files
    one_walk = [_rows(p) for p in files]
    monkeypatch.setattr(pairing, "facts_and_json", lambda body, _codec: _separately(body))
    separate = [_rows(p) for p in files]
    assert one_walk == separate
    assert any(r[3] and '"records":[{' in r[3] for rows in one_walk for r in rows)


def test_json_text_is_compact_and_keeps_non_ascii() -> None:
    assert bodies.encode({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'
