"""The compiled frame loop (`decoding/framing.c`) against `split_frames`' Python loop.

Both paths must cut the same items from any direction: whole frames over one or many runs,
sizes out of range, prefixes and frames cut by gaps or by the end, junk to resynchronise past,
mutated copies of all of these; and the request side's correlation ids must lead the
resynchronisation to the same place.
"""

from __future__ import annotations

import random

import pytest
from captures_testkit import FUZZ_FRAMES, mutate, request_frame, response_frame
from memory_growth import blocks_left_by

from kipwire.captures.decoding import framing
from kipwire.captures.decoding.framing import FrameItem, split_frames
from kipwire.captures.reading.frame_dumps import MAX_FRAME
from kipwire.captures.reading.native import NATIVE
from kipwire.captures.reading.reassembly import Run, Stream
from kipwire.codec import ApiKey

pytestmark = pytest.mark.skipif(NATIVE is None, reason="the capture loops are not built")


def _bytes(rng: random.Random, requests: bool) -> bytes:
    out = []
    corr = rng.randrange(1000)
    for _ in range(rng.randint(1, 8)):
        corr += rng.choice([1, 1, 1, 2, 70_000])
        body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 30)))
        if requests:
            out.append(request_frame(ApiKey.PRODUCE, rng.randint(0, 11), corr, body))
        else:
            out.append(response_frame(corr, body))
        roll = rng.random()
        if roll < 0.1:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 9))))  # junk
        elif roll < 0.15:
            out.append((MAX_FRAME + rng.randint(1, 9)).to_bytes(4, "big"))  # a size too large
    return b"".join(out)


def _stream(rng: random.Random, data: bytes) -> Stream:
    """`data` as runs with holes between them, each run's marks at a few of its offsets."""
    cuts = sorted({0, len(data), *(rng.randrange(len(data) + 1) for _ in range(rng.randint(0, 4)))})
    runs, pos = [], 0
    for a, b in zip(cuts, cuts[1:], strict=False):
        if rng.random() < 0.25 and a > 0:
            continue  # a gap
        marks = sorted({a, *(rng.randrange(a, b) for _ in range(rng.randint(0, 5)))})
        runs.append(Run(a, data[a:b], marks, [10 * m + 1 for m in marks]))
        pos = b
    end = len(data) + (rng.randint(1, 20) if rng.random() < 0.2 else 0)
    return Stream(runs=runs, start=0, end=max(end, pos), syn=rng.random() < 0.8)


def _both(monkeypatch, stream: Stream, requests: bool, expected) -> list[FrameItem]:
    items = split_frames(stream, requests=requests, expected_corr=expected)
    with monkeypatch.context() as m:
        m.setattr(framing, "_NATIVE_FRAMES", None)
        assert split_frames(stream, requests=requests, expected_corr=expected) == items
    return items


def test_drawn_and_mutated_directions_give_the_python_items(monkeypatch):
    rng = random.Random(77)
    seen: set[str] = set()
    for n in range(max(FUZZ_FRAMES // 10, 60)):
        requests = n % 2 == 0
        data = _bytes(rng, requests)
        if n % 3 == 0:
            data = mutate(rng, data)
        if not data:
            continue
        expected = list(range(rng.randrange(1000), 2000, 7)) if not requests else None
        items = _both(monkeypatch, _stream(rng, data), requests, expected)
        seen.update(i.kind for i in items)
    assert seen == {"frame", "truncated", "gap", "skipped"}


def test_cut_stops_where_a_whole_frame_does_not_sit():
    data = request_frame(ApiKey.METADATA, 9, 41) + request_frame(ApiKey.METADATA, 9, 42)
    n = len(request_frame(ApiKey.METADATA, 9, 41))
    marks, stamps = [100, 100 + n], [5, 6]  # stream offsets, as the run's marks are
    items: list = []
    mv = memoryview(data + b"\0\0")
    p, j, corr = NATIVE.frames(items, mv, 100, 0, marks, stamps, 0, 8, MAX_FRAME, True, FrameItem)
    assert (p, j, corr) == (2 * n, 1, 42)  # the two bytes left are no prefix: Python's to cut
    assert [(i.offset, i.ts_ns, bytes(i.data)) for i in items] == [
        (100, 5, data[4:n]),
        (100 + n, 6, data[n + 4 :]),
    ]
    # a frame past the run's end, or of a size out of range, is left at once
    short = memoryview(data[:-1])
    assert NATIVE.frames([], short, 100, n, marks, stamps, 1, 8, MAX_FRAME, True, FrameItem)[
        :2
    ] == (
        n,
        1,
    )
    assert NATIVE.frames([], mv, 0, 0, marks, stamps, 0, 8, 10, False, FrameItem) == (0, 0, None)


def test_bad_arguments_are_errors():
    mv = memoryview(b"\0\0\0\x08" + b"\0" * 8)
    args = [[], mv, 0, 0, [0], [1], 0, 4, MAX_FRAME, False, FrameItem]
    assert NATIVE.frames(*args)[0] == 12
    for at, bad in [
        (0, ()),
        (1, b"\0" * 12),
        (4, (0,)),
        (10, dict),
        (6, 1),  # j past the marks
        (5, []),  # stamps not beside the marks
        (2, "0"),
    ]:
        wrong = list(args)
        wrong[at] = bad
        with pytest.raises((TypeError, ValueError)):
            NATIVE.frames(*wrong)
    with pytest.raises(TypeError):
        NATIVE.frames(*args[:10])
    with pytest.raises(TypeError):
        NATIVE.frames([], memoryview(b"\0" * 8).cast("I"), *args[2:])


def test_no_reference_leaks():
    rng = random.Random(3)
    streams = [(_stream(rng, _bytes(rng, n % 2 == 0)), n % 2 == 0) for n in range(20)]

    def run(n: int) -> int:
        made = 0
        for i in range(n):
            stream, requests = streams[i % len(streams)]
            made += len(split_frames(stream, requests=requests, expected_corr=[1, 2]))
        return made

    run(50)
    made, grown = blocks_left_by(lambda: run(3000))
    assert made > 3000
    assert grown < 1000, f"{grown} more blocks allocated after 3,000 directions"
