"""Partition histories from the metadata log, elections named, and the timeline picture."""

from __future__ import annotations

import base64
import struct
import zlib

from kipwire.captures.comparing.model import Capture, Conn, Exchange
from kipwire.captures.comparing.timeline import partition_history, timeline_png
from kipwire.codec import ApiKey, encode_record

TOPIC_ID = bytes(15) + b"\x07"


def _exchange(api: ApiKey, ts: int, request: dict, response: dict | None = None) -> Exchange:
    return Exchange(
        flow="f",
        index=0,
        api_key=api,
        api_name=api.name,
        api_version=0,
        client_id="broker-1",
        status="ok",
        request=request,
        response=response,
        response_status="ok",
        response_error=0,
        topics=(),
        ts=ts,
        response_ts=ts,
    )


def _metadata_fetch(ts: int, first_offset: int, records: list[tuple[str, int, dict]]) -> Exchange:
    values = [
        {"offset": first_offset + i, "value": base64.b64encode(encode_record(*r)).decode()}
        for i, r in enumerate(records)
    ]
    body = {
        "responses": [
            {"topic": "__cluster_metadata", "partitions": [{"records": [{"records": values}]}]}
        ]
    }
    return _exchange(ApiKey.FETCH, ts, {"replica_id": 1}, body)


def _change(**fields: object) -> tuple[str, int, dict]:
    return ("PartitionChangeRecord", 2, {"topic_id": TOPIC_ID, "partition_id": 0, **fields})


def _capture(registrations: list[tuple[int, int, int]], changes: list) -> Capture:
    head = [
        ("TopicRecord", 0, {"name": "t", "topic_id": TOPIC_ID}),
        (
            "PartitionRecord",
            2,
            {
                "topic_id": TOPIC_ID,
                "partition_id": 0,
                "replicas": [1, 2, 3],
                "isr": [1, 2, 3],
                "leader": 1,
            },
        ),
    ]
    exchanges = [
        _exchange(ApiKey.BROKER_REGISTRATION, ts, {"broker_id": b, "previous_broker_epoch": prev})
        for ts, b, prev in registrations
    ]
    exchanges.append(_metadata_fetch(1_000, 0, head))
    for i, (ts, record) in enumerate(changes):
        exchanges.append(_metadata_fetch(ts, len(head) + i, [record]))
    cap = Capture("x", [], [], [], [])
    cap.conns = [Conn("f", "broker-1", 0, 0, exchanges, internal=True)]
    return cap


def test_elections_are_named_from_elr_clean_and_unclean():
    elr = _capture(
        [(0, 1, -1), (0, 2, -1), (0, 3, -1)],
        [
            (2_000, _change(isr=[1], eligible_leader_replicas=[2, 3])),
            (3_000, _change(leader=-1)),
            (4_000, _change(leader=2, isr=[2], eligible_leader_replicas=[])),
            (5_000, _change(isr=[2, 3])),
            (6_000, _change(leader=3)),  # 3 had joined the ISR: a clean election
        ],
    )
    (states,) = partition_history(elr).values()
    assert [s["election"] for s in states] == ["created", None, None, "ELR", None, "clean"]
    assert [(s["leader"], s["isr"], s["eligible_leader_replicas"]) for s in states] == [
        (1, [1, 2, 3], []),
        (1, [1], [2, 3]),
        (-1, [1], [2, 3]),
        (2, [2], []),
        (2, [2, 3], []),
        (3, [2, 3], []),
    ]
    assert [s["t"] for s in states] == [1_000, 2_000, 3_000, 4_000, 5_000, 6_000]
    # ELR off: the last ISR member comes back from an unclean shutdown (no previous epoch)
    unclean = _capture(
        [(0, 1, -1), (0, 2, -1), (0, 3, -1), (3_500, 1, -1)],
        [(2_000, _change(isr=[1])), (3_000, _change(leader=-1)), (4_000, _change(leader=1))],
    )
    (states,) = partition_history(unclean).values()
    assert [s["election"] for s in states] == ["created", None, None, "unclean"]
    # the same, back from a clean shutdown (its previous epoch given): clean
    clean = _capture(
        [(0, 1, -1), (0, 2, -1), (0, 3, -1), (3_500, 1, 7)],
        [(2_000, _change(isr=[1])), (3_000, _change(leader=-1)), (4_000, _change(leader=1))],
    )
    assert [s["election"] for s in partition_history(clean)[("t", 0)]] == [
        "created",
        None,
        None,
        "clean",
    ]


def test_clear_elr_empties_elr_and_last_known_elr():
    cap = _capture(
        [],
        [
            (2_000, _change(isr=[1], eligible_leader_replicas=[2], last_known_elr=[3])),
            (3_000, ("ClearElrRecord", 0, {"topic_name": "t"})),
        ],
    )
    last = partition_history(cap)[("t", 0)][-1]
    assert (last["record"], last["eligible_leader_replicas"], last["last_known_elr"]) == (
        "ClearElrRecord",
        [],
        [],
    )


def _pixels(png: bytes) -> tuple[int, int, bytes]:
    width, height = struct.unpack(">II", png[16:24])
    pos, idat = 8, b""
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos : pos + 8])
        if kind == b"IDAT":
            idat += png[pos + 8 : pos + 8 + n]
        pos += 12 + n
    return width, height, zlib.decompress(idat)


def test_the_timeline_draws_a_lane_per_run():
    states = partition_history(
        _capture([], [(2_000_000, _change(isr=[1])), (3_000_000, _change(leader=-1))])
    )[("t", 0)]
    one = timeline_png(
        "T-0", [("run", states, [(2_500_000, "NOT_ENOUGH_REPLICAS")], [(1_500_000, 3)])]
    )
    two = timeline_png("T-0", [("a", states, [], []), ("b", states, [], [(1_500_000, 3)])])
    w1, h1, raw = _pixels(one)
    w2, h2, _ = _pixels(two)
    assert w1 == w2 == 960 and h2 > h1  # a second lane below the first
    assert len(raw) == h1 * (1 + 3 * w1)
    stride = 1 + 3 * w1  # a filter byte (0: none), then the row's pixels
    rows = [raw[y * stride + 1 : (y + 1) * stride] for y in range(h1)]
    inked = sum(1 for r in rows for i in range(0, len(r), 3) if r[i : i + 3] != b"\xff\xff\xff")
    assert inked > w1 * 10  # labels, state bands, the error tick and the ack line
