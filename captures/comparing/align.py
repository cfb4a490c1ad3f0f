"""Alignment of two captures by what their clients sent, not by time.

`match_connections()` pairs client connections across the captures, `opcodes()` aligns two
request sequences (near-linear on long ones) and `align_exchanges()` pairs the requests of two
matched connections, with the passes that pair the requests the sequence alignment left over.

1. Connections are matched between captures per client id: the pairs with the best
   `difflib.SequenceMatcher` ratio over their (api, normalised request) token sequences first,
   ties broken by order of first appearance; when a client id has too many connections to score
   every pair, by order of first appearance alone. Connections left over are then matched across
   client ids when their sequences are at least half alike (a client id change shows as a
   `changed` difference on `client_id`); the rest are wholly added or removed.
2. Within a matched pair of connections, SequenceMatcher over the tokens aligns requests; inside a
   replaced block, requests of the same API (by a second SequenceMatcher over API keys) are
   *changed*, the others added/removed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from .model import Conn, Exchange
from .normalise import PARTITION_KEYS, TOPIC_KEYS

__all__ = ["align_exchanges", "match_connections", "opcodes"]

_WINDOW = 1000  # requests aligned at once once a connection's changed middle is longer
_PAIR_MATRIX_LIMIT = 400  # connection pairs scored per client id before falling back to order


def _ratio(a: Conn, b: Conn) -> float:
    ta, tb = a.tokens[:_WINDOW], b.tokens[:_WINDOW]  # bound the quadratic worst case
    sm = SequenceMatcher(None, ta, tb, autojunk=False)
    if sm.real_quick_ratio() == 0:
        return 0.0
    return sm.ratio()


def _greedy(
    base: list[Conn], cand: list[Conn], threshold: float
) -> tuple[list[tuple[Conn, Conn]], list[Conn], list[Conn]]:
    scored = []
    for i, a in enumerate(base):
        for j, b in enumerate(cand):
            r = _ratio(a, b)
            if r >= threshold:
                scored.append((-r, abs(a.rank - b.rank), i, j))
    scored.sort()
    used_a, used_b, pairs = set(), set(), []
    for _, _, i, j in scored:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            pairs.append((base[i], cand[j]))
    rest_a = [a for i, a in enumerate(base) if i not in used_a]
    rest_b = [b for j, b in enumerate(cand) if j not in used_b]
    return pairs, rest_a, rest_b


def match_connections(
    base: Sequence[Conn], cand: Sequence[Conn]
) -> tuple[list[tuple[Conn, Conn]], list[Conn], list[Conn]]:
    """(matched pairs, baseline-only, candidate-only) connections; see the module docstring."""
    by_a: dict[str, list[Conn]] = defaultdict(list)
    by_b: dict[str, list[Conn]] = defaultdict(list)
    for c in base:
        by_a[c.client_id].append(c)
    for c in cand:
        by_b[c.client_id].append(c)
    pairs: list[tuple[Conn, Conn]] = []
    left_a: list[Conn] = []
    left_b: list[Conn] = []
    for cid in list(by_a) + [k for k in by_b if k not in by_a]:
        a, b = by_a.get(cid, []), by_b.get(cid, [])
        if len(a) * len(b) <= _PAIR_MATRIX_LIMIT:
            p, ra, rb = _greedy(a, b, 0.0)
        else:
            n = min(len(a), len(b))
            p, ra, rb = list(zip(a[:n], b[:n], strict=True)), a[n:], b[n:]
        pairs += p
        left_a += ra
        left_b += rb
    if left_a and left_b and len(left_a) * len(left_b) <= _PAIR_MATRIX_LIMIT:
        p, left_a, left_b = _greedy(left_a, left_b, 0.5)
        pairs += p
    return pairs, left_a, left_b


def opcodes(a: Sequence[Any], b: Sequence[Any]) -> list[tuple[str, int, int, int, int]]:
    """SequenceMatcher opcodes, kept near-linear on long sequences.

    The common prefix and suffix are matched directly. SequenceMatcher is quadratic on sequences
    with many repeated tokens (a long run of polls), so the middle is aligned in windows of
    `_WINDOW` requests, each starting after the last match of the one before: exact unless a
    block of more than a window's length was added or removed.
    """
    n = min(len(a), len(b))
    pre = 0
    while pre < n and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < n - pre and a[len(a) - 1 - suf] == b[len(b) - 1 - suf]:
        suf += 1
    ops: list[tuple[str, int, int, int, int]] = []
    if pre:
        ops.append(("equal", 0, pre, 0, pre))
    i, j = pre, pre
    end_a, end_b = len(a) - suf, len(b) - suf
    while i < end_a or j < end_b:
        i2, j2 = min(end_a, i + _WINDOW), min(end_b, j + _WINDOW)
        sm = SequenceMatcher(None, a[i:i2], b[j:j2], autojunk=False)
        last = (i2 - i, j2 - j)  # the final window: take everything
        if i2 < end_a or j2 < end_b:
            # keep up to the last match; the rest is aligned again in the next window, so a
            # shift (an added request) carries over instead of breaking at the window edge
            blocks = [blk for blk in sm.get_matching_blocks() if blk.size]
            if blocks:
                last = (blocks[-1].a + blocks[-1].size, blocks[-1].b + blocks[-1].size)
        for tag, x1, x2, y1, y2 in sm.get_opcodes():
            if x1 >= last[0] and y1 >= last[1]:
                break
            ops.append((tag, i + x1, i + min(x2, last[0]), j + y1, j + min(y2, last[1])))
        i, j = i + last[0], j + last[1]
    if suf:
        ops.append(("equal", len(a) - suf, len(a), len(b) - suf, len(b)))
    return ops


def _partitions(value: Any, topic: Any = None, out: set | None = None) -> set:
    """The (topic, partition) pairs a request names, wherever its schema keeps them."""
    out = set() if out is None else out
    if isinstance(value, dict):
        topic = next((value[k] for k in TOPIC_KEYS if isinstance(value.get(k), str)), topic)
        part = next((value[k] for k in PARTITION_KEYS if isinstance(value.get(k), int)), None)
        if part is not None and not isinstance(part, bool):
            out.add((topic, part))
        for child in value.values():
            if isinstance(child, dict | list):
                _partitions(child, topic, out)
    elif isinstance(value, list):
        for child in value:
            _partitions(child, topic, out)
    return out


def _identity(e: Exchange) -> tuple:
    """What a request is about: its API and the topic-partitions it names."""
    return (e.api_key, e.topics, tuple(sorted(_partitions(e.request), key=repr)))


def _pair_by(
    ea: list[Exchange], eb: list[Exchange], key: Any, matched: list
) -> tuple[list[Exchange], list[Exchange]]:
    """Pair each request with the first unpaired one of equal `key` on the other side.

    Order between different keys does not matter (requests about different partitions may be
    sent in any order); among requests of one key, the n-th pairs with the n-th.
    """
    queues: dict[Any, list[Exchange]] = {}
    for e in eb:
        queues.setdefault(key(e), []).append(e)
    rest_a = []
    for e in ea:
        queue = queues.get(key(e))
        if queue:
            matched.append((e, queue.pop(0)))
        else:
            rest_a.append(e)
    paired = {id(y) for _, y in matched}
    return rest_a, [e for e in eb if id(e) not in paired]


def align_exchanges(a: Conn, b: Conn) -> tuple[list[tuple[Exchange, Exchange]], list, list]:
    """(matched, removed, added) exchanges of two matched connections.

    After the sequence alignment, the requests left over are paired in three passes: the same
    normalised request sent at another point (a client may send one Produce per partition in
    any order), then requests about the same topic-partitions, then the same API.
    """
    matched: list[tuple[Exchange, Exchange]] = []
    left_a: list[Exchange] = []
    left_b: list[Exchange] = []
    ea, eb = a.exchanges, b.exchanges
    for tag, i1, i2, j1, j2 in opcodes(a.tokens, b.tokens):
        if tag == "equal":
            matched += zip(ea[i1:i2], eb[j1:j2], strict=True)
        else:
            left_a += ea[i1:i2]
            left_b += eb[j1:j2]
    for key in (lambda e: e.token, _identity, lambda e: e.api_key):
        left_a, left_b = _pair_by(left_a, left_b, key, matched)
    return matched, left_a, left_b
