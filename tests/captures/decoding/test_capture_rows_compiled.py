"""A connection's rows in C (`decoding/rows.c`) against pairing.py's `_rows`: the same `pdus` and
`pairs` rows and PDU counts for drawn frame items (every kind, lost and repeated correlation
ids, frames that do and do not decode, missing times), the same tables on the capture corpus and
on mutated captures, and None for items that are not FrameItems.
"""

from __future__ import annotations

import os
import random
import struct
from functools import partial

import pytest
from captures_testkit import SHARED_CAPTURES
from memory_growth import blocks_left_by

from kipwire import codec
from kipwire.captures.decoding import pairing
from kipwire.captures.decoding.framing import FrameItem
from kipwire.captures.decoding.pairing import PAIR_COLUMNS, PDU_COLUMNS
from kipwire.captures.decoding.pipeline import decode_capture
from kipwire.captures.reading.native import NATIVE
from kipwire.codec import ApiKey, ErrorCode

pytestmark = pytest.mark.skipif(NATIVE is None, reason="the capture loops are not built")

DRAWS = int(os.environ.get("KIPWIRE_FUZZ_CAPTURES", "40")) * 5
BASE = ("cap", "file.pcapng", "uid-1")


def _blank() -> dict:
    row = dict.fromkeys(PDU_COLUMNS)
    row.update(capture=BASE[0], file=BASE[1], flow_uid=BASE[2], redacted=False)
    return row


def _both(req_items, resp_items, *, fast: bool = True, json: bool = True) -> tuple:
    """(C answer, Python answer) for the same items, each with its own row copies."""
    api = pairing._api_of(codec)
    frame = pairing.frame_decoder(codec) if fast else None

    def slow(row, data, key, version, request):
        return pairing._decode_into(row, codec, api, data, key, version, request, json)

    def native_rows(*tables):
        return NATIVE.pdu_rows(
            _blank(),
            list(req_items),
            list(resp_items),
            api.names,
            frame,
            slow,
            api.client_id,
            partial(pairing._orphan, *BASE),
            BASE,
            *tables,
        )

    c = native_rows()
    python = pairing._rows(_blank(), list(req_items), list(resp_items), api, frame, slow, BASE)
    pair_table = NATIVE.Columns(PAIR_COLUMNS)
    for tables in ((NATIVE.Columns(PDU_COLUMNS),), (NATIVE.Columns(PDU_COLUMNS), pair_table)):
        columns = native_rows(*tables)
        # the rows held as columns (the pairs too, given a table for them) are the same rows
        assert columns[: len(tables)] == tables
        assert (list(columns[0]), list(columns[1]), *columns[2:]) == python
    return c, python


def _exchange(corr: int, version: int = 12) -> tuple[bytes, bytes]:
    body = {"topics": [{"name": f"t{corr % 3}"}]}
    req = codec.encode_request(ApiKey.METADATA, version, body, correlation_id=corr, client_id="c")
    resp = codec.encode_response(
        ApiKey.METADATA,
        version,
        {"topics": [{"name": "t", "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}]},
        correlation_id=corr,
    )
    return req, resp


def _draw_items(rng: random.Random, frames: list[bytes], request: bool) -> list[FrameItem]:
    items = []
    offset = 0
    for _ in range(rng.randint(0, 8)):
        kind = rng.choice(["frame", "frame", "frame", "truncated", "gap", "skipped"])
        data = rng.choice(frames)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data) + 1)]
        if rng.random() < 0.1:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 12)))
        if kind == "gap":
            data = b""
        ts = None if rng.random() < 0.15 else 1_700_000_000_000_000_000 + rng.randrange(10**9)
        length = None if kind == "truncated" and rng.random() < 0.5 else len(data)
        note = rng.choice(["", "", "a note", "implausible frame size 3"])
        view = memoryview(b"\0\0" + data)[2:] if rng.random() < 0.5 else data
        items.append(FrameItem(kind, offset, ts, length, view, len(data) + 4, note))
        offset += len(data) + 4
    return items


def test_drawn_items_give_the_python_rows() -> None:
    rng = random.Random(7)
    pairs = [_exchange(corr % 4, rng.choice([1, 8, 12])) for corr in range(8)]
    requests = [req for req, _ in pairs]
    responses = [resp for _, resp in pairs] + [struct.pack(">i", 99) + b"\x00" * 5]
    statuses = set()
    for i in range(DRAWS):
        req_items = _draw_items(rng, requests, True)
        resp_items = _draw_items(rng, responses, False)
        c, python = _both(req_items, resp_items, fast=i % 3 != 0, json=i % 5 != 0)
        assert c == python
        statuses.update(p["status"] for p in python[1])
        statuses.update(r["decode_status"] for r in python[0])
    # every path of the loops was met
    assert {"answered", "no_response", "orphan_response", "answered_malformed"} <= statuses
    assert {"ok", "truncated", "gap", "malformed", "request_missing"} <= statuses


def test_items_that_are_not_frame_items_go_to_python() -> None:
    req, _ = _exchange(1)
    good = FrameItem("frame", 0, 1, len(req), req, len(req) + 4)
    assert (
        NATIVE.pdu_rows(_blank(), [good, ("frame", 0)], [], {}, None, print, print, print, BASE)
        is None
    )
    odd_kind = good._replace(kind="lost")
    assert NATIVE.pdu_rows(_blank(), [], [odd_kind], {}, None, print, print, print, BASE) is None
    released = memoryview(req)
    released.release()
    assert (
        NATIVE.pdu_rows(
            _blank(), [good._replace(data=released)], [], {}, None, print, print, print, BASE
        )
        is None
    )


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(TypeError):
        NATIVE.pdu_rows(_blank(), [], [], {}, None, print, print, print)
    with pytest.raises(TypeError):
        NATIVE.pdu_rows(_blank(), (), [], {}, None, print, print, print, BASE)
    with pytest.raises(TypeError):
        NATIVE.pdu_rows(_blank(), [], [], {}, 5, print, print, print, BASE)


def test_an_error_in_a_hook_is_raised() -> None:
    req, _ = _exchange(1)
    item = FrameItem("frame", 0, 1, len(req), req, len(req) + 4)

    def broken(*args):
        raise RuntimeError("hook")

    with pytest.raises(RuntimeError, match="hook"):
        NATIVE.pdu_rows(_blank(), [item], [], {}, None, broken, print, print, BASE)


def _tables(path, monkeypatch, compiled: bool, columns: bool = False) -> tuple:
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(pairing, "_NATIVE_ROWS", None)
        rows = decode_capture(path, columns=columns)
    return list(rows.pdus), list(rows.pairs), rows.connections


@pytest.mark.skipif(not SHARED_CAPTURES.is_dir(), reason=f"{SHARED_CAPTURES} is absent")
def test_the_capture_corpus_and_mutated_copies_give_the_same_tables(monkeypatch) -> None:
    files = sorted(SHARED_CAPTURES.rglob("*.pcap*"))
    rng = random.Random(11)
    inputs = [p.read_bytes() for p in files]
    for _ in range(max(DRAWS // 20, 4)):
        data = bytearray(rng.choice(inputs))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at : at + 1] = bytes([rng.randrange(256)]) * rng.randint(0, 2)
        inputs.append(bytes(data))
    compared = 0
    for data in inputs:
        try:
            expected = _tables(data, monkeypatch, False)
        except ValueError:
            continue
        assert _tables(data, monkeypatch, True) == expected
        assert _tables(data, monkeypatch, True, columns=True) == expected
        compared += 1
    assert compared >= len(files)


def test_no_reference_leaks() -> None:
    req, resp = _exchange(2)
    reqs = [FrameItem("frame", 0, 5, len(req), req, len(req) + 4)] * 3
    resps = [
        FrameItem("frame", 0, 9, len(resp), memoryview(resp), len(resp) + 4),
        FrameItem("truncated", 0, None, None, resp[:6], 10, "cut"),
        FrameItem("skipped", 0, 9, 5, b"\0" * 5, 5, "junk"),
        FrameItem("frame", 0, 9, 8, struct.pack(">i", 77) + b"\0\0\0\0", 12),
    ]
    api = pairing._api_of(codec)
    fast = pairing.frame_decoder(codec)

    def slow(row, data, key, version, request):
        return pairing._decode_into(row, codec, api, data, key, version, request, True)

    orphan = partial(pairing._orphan, *BASE)

    def run(n: int) -> int:
        made = 0
        for i in range(n):
            held = (NATIVE.Columns(PDU_COLUMNS), NATIVE.Columns(PAIR_COLUMNS))[: i % 3]
            pdus, pairs, _, _ = NATIVE.pdu_rows(
                _blank(), reqs, resps, api.names, fast, slow, api.client_id, orphan, BASE, *held
            )
            made += len(pdus) + len(pairs)
        return made

    run(20)
    made, grown = blocks_left_by(lambda: run(2000))
    assert made == 2000 * (7 + 4)
    assert grown < 200, f"{grown} blocks left by 2,000 connections"


def test_rows_held_as_columns_are_taken_back_when_python_answers() -> None:
    req, _ = _exchange(1)
    good = FrameItem("frame", 0, 1, len(req), req, len(req) + 4)
    held = NATIVE.Columns(PDU_COLUMNS)
    held.extend([_blank()])

    def slow(row, data, key, version, request):
        row["decode_status"] = "made up"
        row["not_a_column"] = 1  # dropped, as to_table drops it
        return "ok"

    pair_table = NATIVE.Columns(PAIR_COLUMNS)
    pair_table.extend([dict.fromkeys(PAIR_COLUMNS, "before")])
    args = (_blank(), [good, good], [("frame", 0)], {}, None, slow, print, print, BASE)
    assert NATIVE.pdu_rows(*args, held, pair_table) is None
    # the rows made before the odd item are gone, those before the call stay
    assert len(held) == 1 and list(pair_table) == [dict.fromkeys(PAIR_COLUMNS, "before")]
    args = (_blank(), [good, good], [], {}, None, slow, print, print, BASE)
    pdus, pairs, requests, _ = NATIVE.pdu_rows(*args, held, pair_table)
    assert pdus is held and len(held) == 3 and requests == 2 and pairs is pair_table
    assert [p["status"] for p in pair_table] == ["before", "no_response", "no_response"]
    assert [r["decode_status"] for r in held][1:] == ["made up"] * 2
    assert "not_a_column" not in held[1]
    with pytest.raises(TypeError):
        NATIVE.pdu_rows(*args, [])
    with pytest.raises(TypeError):
        NATIVE.pdu_rows(*args, held, [])
