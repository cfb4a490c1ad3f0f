"""Partition state over time, from the controller's records the brokers fetched, and its picture.

`partition_history` replays the PartitionRecord, PartitionChangeRecord and ClearElrRecord of
`__cluster_metadata` (each once, at the time a broker first fetched it) into each partition's
leader, ISR, ELR and LastKnownElr, and names every election: `clean` (the new leader was in the
ISR), `ELR` (it was an eligible leader replica), or `unclean` (it was in neither, or it was the
last ISR member and had restarted after an unclean shutdown: registered again with no previous
broker epoch, so its log may have lost acknowledged records). `timeline_png` draws one lane per
run with the client's errors and acknowledged records on the same time axis.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from kipwire.codec import ApiKey

from ..decoding.metadata_records import METADATA_TOPIC, METADATA_TOPIC_ID
from .charts import BLACK, GREY, PALETTE, Canvas, text_width
from .model import Capture, Conn

__all__ = ["ELECTIONS", "partition_history", "registrations", "timeline_png"]

ELECTIONS = ("clean", "ELR", "unclean")
_STATE = ("leader", "isr", "eligible_leader_replicas", "last_known_elr")
_NO_CHANGE = -2  # PartitionChangeRecord's leader default: unchanged


def _conns(cap: Capture) -> Iterator[Conn]:
    """The connections compared (`--clients-only` has set the cluster's own ones aside)."""
    yield from cap.conns


def _metadata_values(cap: Capture) -> Iterator[tuple[int, int, bytes]]:
    """(time, offset, value) of each record of the metadata log in the capture's Fetch answers."""
    for conn in _conns(cap):
        for e in conn.exchanges:
            if e.api_key != ApiKey.FETCH or not isinstance(e.response, Mapping):
                continue
            t = e.response_ts if e.response_ts is not None else e.ts
            for topic in e.response.get("responses") or ():
                if not isinstance(topic, Mapping) or (
                    topic.get("topic") != METADATA_TOPIC
                    and topic.get("topic_id") != METADATA_TOPIC_ID
                ):
                    continue
                for part in topic.get("partitions") or ():
                    for batch in part.get("records") or ():
                        for r in batch.get("records") or () if isinstance(batch, Mapping) else ():
                            try:
                                value = base64.b64decode(r.get("value") or "", validate=True)
                            except (binascii.Error, ValueError):
                                continue
                            if isinstance(r.get("offset"), int):
                                yield t or 0, r["offset"], value


def _log(cap: Capture) -> list[tuple[int, int, str, Mapping[str, Any]]]:
    """The decoded metadata log, each offset once at its first fetch time, in offset order."""
    from kipwire.codec import DecodeError, decode_record

    first: dict[int, tuple[int, bytes]] = {}
    for t, offset, value in _metadata_values(cap):
        if offset not in first or t < first[offset][0]:
            first[offset] = (t, value)
    out = []
    for offset in sorted(first):
        t, value = first[offset]
        try:
            name, _version, body = decode_record(value)
        except DecodeError:
            continue
        out.append((t, offset, name, body))
    return out


def registrations(cap: Capture) -> list[tuple[int, int, int]]:
    """(time, broker id, previous broker epoch) of every BrokerRegistration, in time order."""
    out = []
    for conn in _conns(cap):
        for e in conn.exchanges:
            if e.api_key == ApiKey.BROKER_REGISTRATION and isinstance(e.request, Mapping):
                prev = e.request.get("previous_broker_epoch", -1)
                out.append((e.ts or 0, e.request.get("broker_id"), prev))
    return sorted(out, key=lambda r: (r[0], r[1]))


def _unclean_restart(regs: Sequence[tuple[int, int, int]], broker: int, t: int) -> bool:
    """Whether the broker's last registration before `t` came back from an unclean shutdown."""
    mine = [r for r in regs if r[1] == broker and r[0] <= t]
    return len(mine) >= 2 and mine[-1][2] < 0


def partition_history(cap: Capture) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """(topic, partition) -> its states in log order, each with its time and election."""
    names: dict[str, str] = {}
    state: dict[tuple[str, int], dict[str, Any]] = {}
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    regs = registrations(cap)
    for t, offset, name, body in _log(cap):
        if name == "TopicRecord":
            names[body.get("topic_id")] = body.get("name")
            continue
        if name == "ClearElrRecord":
            topic = body.get("topic_name") or None
            for key, st in state.items():
                if topic is None or key[0] == topic:
                    st["eligible_leader_replicas"], st["last_known_elr"] = [], []
                    out[key].append({**st, "t": t, "offset": offset, "record": name})
            continue
        if name not in ("PartitionRecord", "PartitionChangeRecord"):
            continue
        tid = body.get("topic_id")
        key = (names.get(tid, tid), body.get("partition_id"))
        before = state.get(key)
        after = dict(before) if before else {f: ([] if f != "leader" else -1) for f in _STATE}
        for f in _STATE:
            v = body.get(f)
            if v is None or (f == "leader" and v == _NO_CHANGE):
                continue
            after[f] = list(v) if isinstance(v, list) else v
        election = None
        if before is None:
            election = "created"
        elif after["leader"] >= 0 and after["leader"] != before["leader"]:
            leader = after["leader"]
            if leader in before["eligible_leader_replicas"]:
                election = "ELR"
            elif leader in before["isr"] and not _unclean_restart(regs, leader, t):
                election = "clean"
            else:
                election = "unclean"
        state[key] = after
        out.setdefault(key, []).append(
            {**after, "t": t, "offset": offset, "record": name, "election": election}
        )
    return out


# ---------------------------------------------------------------------------------------------
# the picture

_LANE_ROWS = ("LEADER", "ISR", "ELR", "LAST KNOWN ELR", "ERRORS", "ACKED")
_ROW_H = 16
_LABEL_W = 118
_ERROR = (213, 94, 0)
_FILLS = ((225, 236, 246), (246, 232, 210))


def _text(v: Any) -> str:
    if isinstance(v, list):
        return ",".join(str(x) for x in v) if v else "-"
    return "NONE" if v == -1 else str(v)


def timeline_png(
    title: str,
    lanes: Sequence[
        tuple[str, list[dict[str, Any]], Iterable[tuple[int, str]], list[tuple[int, int]]]
    ],
    *,
    width: int = 960,
) -> bytes:
    """One lane per run: (name, states, (time, error) per client error, (time, records acked)).

    Times are microseconds; each lane's axis starts at its run's first event, so runs recorded
    at different times line up, and the axis is seconds from that start.
    """
    lane_h = _ROW_H * len(_LANE_ROWS) + 22
    height = 40 + lane_h * len(lanes) + 30
    c = Canvas(width, height)
    c.text(8, 6, title, scale=2 if text_width(title, 2) < width - 16 else 1)
    x0, x1 = _LABEL_W, width - 16
    spans = []
    for _, states, errors, acks in lanes:
        times = [s["t"] for s in states] + [t for t, _ in errors] + [t for t, _ in acks]
        times = [t for t in times if t]
        spans.append((min(times), max(times)) if times else (0, 1))
    span = max(1, max(hi - lo for lo, hi in spans))

    def fx(t: int, lo: int) -> int:
        return x0 + round((x1 - x0) * (t - lo) / span)

    y = 30
    for li, (name, states, errors, acks) in enumerate(lanes):
        lo = spans[li][0]
        color = PALETTE[li % len(PALETTE)]
        c.rect(0, y, 6, y + lane_h - 8, color)
        c.text(10, y, name, color)
        top = y + 12
        for ri, row in enumerate(_LANE_ROWS):
            c.text(10, top + ri * _ROW_H + 4, row)
            c.hline(x0, x1, top + (ri + 1) * _ROW_H - 1, GREY)
        for si, st in enumerate(states):
            xa = fx(st["t"], lo)
            xb = fx(states[si + 1]["t"], lo) if si + 1 < len(states) else x1
            for ri, f in enumerate(_STATE):
                ya = top + ri * _ROW_H + 1
                c.rect(xa, ya, max(xb, xa + 2), ya + _ROW_H - 3, _FILLS[si % 2])
                c.vline(xa, ya, ya + _ROW_H - 3, color)
                label = _text(st[f])
                if text_width(label) < xb - xa - 3 or si + 1 == len(states):
                    c.text(xa + 3, ya + 3, label)
            if st.get("election") in ELECTIONS:
                c.text(
                    xa + 3,
                    top - 10,
                    st["election"],
                    _ERROR if st["election"] == "unclean" else color,
                )
        err_y = top + 4 * _ROW_H + 2
        for t, _code in errors:
            x = fx(t, lo)
            c.rect(x, err_y, x + 2, err_y + _ROW_H - 5, _ERROR)
        ack_top = top + 5 * _ROW_H + 1
        if acks:
            n = sum(k for _, k in acks)
            prev = (x0, ack_top + _ROW_H - 3)
            i = 0
            for t, k in sorted(acks):
                i += k
                pt = (fx(t, lo), ack_top + _ROW_H - 3 - round((_ROW_H - 4) * i / n))
                c.rect(prev[0], prev[1], pt[0] + 1, prev[1] + 1, color)
                c.rect(pt[0], min(prev[1], pt[1]), pt[0] + 1, max(prev[1], pt[1]) + 1, color)
                prev = pt
            c.text(min(prev[0] + 4, x1 - text_width(str(n))), ack_top + 3, str(n), color)
        y += lane_h
    c.hline(x0, x1, y, BLACK)
    step = max(1, round(span / 1e6 / 8))
    s = 0
    while s * 1e6 <= span:
        x = x0 + round((x1 - x0) * s * 1e6 / span)
        c.vline(x, y, y + 3)
        c.text(x - text_width(str(s)) // 2, y + 6, str(s))
        s += step
    c.text((x0 + x1) // 2 - 40, y + 18, "SECONDS FROM START")
    return c.png()
