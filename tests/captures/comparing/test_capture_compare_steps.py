"""The comparison's steps alone: normalising volatile fields, field-path diffs, alignment."""

from __future__ import annotations

import base64
import random

from kipwire.captures.comparing.align import opcodes
from kipwire.captures.comparing.diffs import diff_values
from kipwire.captures.comparing.normalise import normalise
from kipwire.codec.records import build_batch, expand_records


def test_normalise_keeps_sentinels_and_hides_volatile_values():
    body = {
        "throttle_time_ms": 0,
        "producer_id": -1,
        "member_id": "",
        "topics": [
            {"name": "t", "topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": [{"timestamp": -2}]},
            {"name": "u", "topic_id": "x0xTOPICxIDxxxxxxxxxxw", "partitions": [{"timestamp": 17}]},
        ],
        "session_id": 12,
        "expiry_timestamp_ms": 1700000000000,
        "port": 9092,
        "timeout_ms": 30000,
    }
    norm = normalise(body, {"x0xTOPICxIDxxxxxxxxxxw": "u"})
    assert norm == {
        "throttle_time_ms": "<throttle_time_ms>",
        "producer_id": -1,
        "member_id": "",
        "topics": [
            {"name": "t", "topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": [{"timestamp": -2}]},
            {"name": "u", "topic_id": "<topic_id:u>", "partitions": [{"timestamp": "<timestamp>"}]},
        ],
        "session_id": "<session_id>",
        "expiry_timestamp_ms": "<expiry_timestamp_ms>",
        "port": "<port>",
        "timeout_ms": 30000,  # a client setting, not volatile
    }


def test_diff_paths_use_struct_ids_and_positions():
    a = {"topics": [{"name": "a", "p": [1, 2]}, {"name": "b", "x": 1}], "v": 1}
    b = {"topics": [{"name": "b", "x": 2}, {"name": "a", "p": [1, 3, 4]}], "v": 1, "w": 0}
    assert diff_values(a, b) == [
        ("topics[a].p[#1]", 2, 3),
        ("topics[a].p[#2]", "<absent>", 4),
        ("topics[b].x", 1, 2),
        ("w", "<absent>", 0),
    ]
    assert diff_values(a, b, common_only=True) == [
        ("topics[a].p[#1]", 2, 3),
        ("topics[a].p[#2]", "<absent>", 4),
        ("topics[b].x", 1, 2),
    ]


def test_long_connections_align_in_windows_without_losing_a_request():
    """Windowed alignment tiles both sequences and keeps shifts across window edges."""
    rnd = random.Random(4)
    a = [("Fetch", rnd.random() < 0.9) for _ in range(5000)]
    b = list(a)
    b.insert(1500, ("Metadata", True))  # one added request, before a window edge
    del b[3200]  # one removed request, after it
    ops = opcodes(a, b)
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j)
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    changed = [op for op in ops if op[0] != "equal"]
    assert sum(op[4] - op[3] for op in changed) == 1  # one candidate request unmatched
    assert sum(op[2] - op[1] for op in changed) == 1  # one baseline request unmatched


def test_records_compare_the_same_raw_or_expanded():
    """A blob (base64, as older decodes wrote it) and expanded batches normalise alike."""
    blob = build_batch(
        [{"key": b"k", "value": b"v", "headers": [("h", b"x")], "timestamp": 5}],
        compression="lz4",
        producer_id=12,
    )
    raw = normalise({"records": base64.b64encode(blob).decode()})
    expanded = normalise({"records": expand_records(blob)})
    assert raw == expanded
    (batch,) = raw["records"]
    assert batch["compression"] == "lz4" and batch["producer_id"] == "<producer_id>"
    assert batch["records"][0]["value"].startswith("sha256:")
    assert "timestamp" not in batch["records"][0]
