"""Control records (transaction markers, KRaft records) and the JSON view of a records field."""

from __future__ import annotations

import json
import struct

import pytest

from kipwire.codec.errors import DecodeError
from kipwire.codec.records import (
    ControlType,
    Record,
    build_batch,
    control_record,
    decode_control,
    expand_records,
    iter_batches,
)

pytestmark = pytest.mark.usefixtures("records_path")

TS = 1_700_000_000_000


def control(key: bytes | None, value: bytes | None) -> Record:
    return Record(0, TS, key, value, [])


@pytest.mark.parametrize("kind", list(ControlType))
def test_key_parse_for_every_type(kind) -> None:
    decoded = decode_control(control(struct.pack(">hh", 0, kind), None))
    assert (decoded.version, decoded.type, decoded.value) == (0, kind, None)


def test_later_key_versions_still_give_the_type() -> None:
    decoded = decode_control(
        control(struct.pack(">hh", 3, 1) + b"future", struct.pack(">hi", 0, 9))
    )
    assert (decoded.version, decoded.type) == (3, ControlType.COMMIT)


def test_unknown_type_keeps_the_value_bytes() -> None:
    decoded = decode_control(control(struct.pack(">hh", 0, 99), b"\x01\x02"))
    assert (decoded.type, decoded.value) == (99, b"\x01\x02")


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00"])
def test_short_key_is_a_decode_error(key) -> None:
    with pytest.raises(DecodeError, match="key"):
        decode_control(control(key, None))


def test_end_txn_marker_of_a_later_version_parses_as_version_0() -> None:
    value = struct.pack(">hi", 1, 42) + b"fields a later version added"
    decoded = decode_control(control(struct.pack(">hh", 0, 0), value))
    assert decoded.type is ControlType.ABORT and decoded.value["coordinator_epoch"] == 42


@pytest.mark.parametrize("value", [b"\x00", b"\x00\x00\x00\x01"])
def test_short_end_txn_marker_is_a_decode_error(value) -> None:
    with pytest.raises(DecodeError):
        decode_control(control(struct.pack(">hh", 0, 1), value))


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (ControlType.COMMIT, {"coordinator_epoch": 3}),
        (
            ControlType.LEADER_CHANGE,
            {"version": 0, "leader_id": 2, "voters": [{"voter_id": 1}, {"voter_id": 2}]},
        ),
        (ControlType.SNAPSHOT_HEADER, {"version": 0, "last_contained_log_timestamp": TS}),
        (ControlType.SNAPSHOT_FOOTER, {"version": 0}),
        (ControlType.KRAFT_VERSION, {"version": 0, "k_raft_version": 1}),
    ],
)
def test_control_records_round_trip_through_a_batch(kind, value) -> None:
    data = build_batch([control_record(kind, value, timestamp=TS)], control=True)
    (batch,) = iter_batches(data)
    decoded = decode_control(batch.records[0])
    assert (decoded.version, decoded.type) == (0, kind)
    for name, expected in value.items():
        got = decoded.value[name]
        if isinstance(expected, list):
            got = [{k: v for k, v in item.items() if k in expected[0]} for item in got]
        assert got == expected


def test_leader_change_bytes_are_the_message_with_its_own_version_first() -> None:
    record = control_record(ControlType.LEADER_CHANGE, {"version": 0, "leader_id": 1})
    assert record["key"] == bytes.fromhex("00000002")
    # LeaderChangeMessage v0 (flexible): version, leader id, empty compact arrays, no tags
    assert record["value"] == bytes.fromhex("000000000001010100")


def test_expand_records_is_json_ready() -> None:
    data = build_batch(
        [
            {
                "key": b"\x01",
                "value": None,
                "headers": [("h", b"\xff"), ("n", None)],
                "timestamp": TS,
            }
        ],
        compression="lz4",
        base_offset=5,
    ) + build_batch(
        [control_record(ControlType.ABORT, {"coordinator_epoch": 1}, timestamp=TS)],
        base_offset=6,
        producer_id=9,
        producer_epoch=0,
        transactional=True,
        control=True,
    )
    expanded = json.loads(json.dumps(expand_records(data)))
    plain, marker = expanded
    assert plain["compression"] == "lz4" and plain["timestamp_type"] == "CREATE_TIME"
    assert plain["records"] == [
        {
            "offset": 5,
            "timestamp": TS,
            "key": "AQ==",
            "value": None,
            "headers": [["h", "/w=="], ["n", None]],
        }
    ]
    assert marker["is_control"] and marker["is_transactional"] and marker["producer_id"] == 9
    assert marker["records"][0]["control"] == {
        "version": 0,
        "type": "ABORT",
        "value": {"coordinator_epoch": 1},
    }


def test_expand_records_custom_bytes_and_truncation() -> None:
    data = build_batch([{"key": b"k", "value": b"v", "timestamp": TS}])
    expanded = expand_records(data + data[:30], render_bytes=lambda b: b.decode())
    assert expanded[0]["records"][0]["key"] == "k"
    assert expanded[1]["truncated"] and expanded[1]["records"] == []
