"""The replay's result: the original and replayed traffic decoded and compared, and its report.

The original side is the replayed connections as captured, written to `DIR/original.pcapng`
(the cluster's own traffic and what could not be replayed left out, so only the replay's effect
differs); the replayed side is `DIR/replay.pcapng`. Both are decoded by the local engine into
`DIR/tables/` and compared by the semantic compare (`comparing.compare`); what was not replayed
joins the report as counted rows of its decode-health table and as informational differences.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kipwire.captures.pcap import PcapngWriter

from ..comparing.compare import compare, write_report
from ..comparing.model import Difference, Report, SemanticDifference
from ..engines.local import run_local
from .extract import ClientConnection, NotReplayed
from .rules import COMPARE_RULES

__all__ = ["ReplayResult", "compare_replay", "write_original"]

_SIZE = struct.Struct(">i")


@dataclass(slots=True)
class ReplayResult:
    """What a replay sent, what it could not, and how the target's answers compared."""

    out: Path
    report: Report
    connections: int
    requests_sent: int
    requests_answered: int
    retried: int
    seconds: float
    not_replayed: list[NotReplayed] = field(default_factory=list)
    paths: dict[str, Path] = field(default_factory=dict)

    @property
    def semantic_differences(self) -> list[SemanticDifference]:
        """The differences in meaning, ranked (the report's headline)."""
        return self.report.semantic_differences

    @property
    def requests_per_second(self) -> float:
        """Requests sent per second of replay."""
        return self.requests_sent / self.seconds if self.seconds > 0 else 0.0

    def not_replayed_counts(self) -> Counter:
        """Requests not replayed, by reason."""
        counts: Counter = Counter()
        for row in self.not_replayed:
            counts[row.reason] += row.requests
        return counts


def write_original(
    connections: list[ClientConnection],
    path: str | os.PathLike,
    unsent: Collection[tuple[str, int]] = (),
) -> None:
    """The replayed connections as captured, without the requests that were not sent (`unsent`:
    connection uid and exchange index): the compare's baseline."""
    with PcapngWriter(path) as pcap:
        for c in connections:
            conv = pcap.conversation(c.client, c.server, ts_ns=c.first_ts_ns)
            last = c.first_ts_ns
            for ex in c.exchanges:
                if (c.uid, ex.index) in unsent:
                    continue
                last = ex.ts_ns or last
                conv.client_sends(_SIZE.pack(len(ex.frame)) + ex.frame, ts_ns=last)
                if ex.response is not None:
                    last = ex.response_ts_ns or last
                    conv.server_sends(_SIZE.pack(len(ex.response)) + ex.response, ts_ns=last)
            conv.close(ts_ns=last)


def _with_not_replayed(report: Report, rows: list[NotReplayed]) -> None:
    counts: Counter = Counter()
    for row in rows:
        counts[row.reason] += row.requests
    for reason, n in sorted(counts.items()):
        metric = f"not replayed: {reason}"
        report.health.append({"metric": metric, "baseline": n, "candidate": 0})
        report.differences.append(
            Difference(
                kind="health", functional=False, path=metric, baseline=n, candidate=0, count=n
            )
        )
    report.options["not_replayed"] = [
        {"reason": r.reason, "connection": r.connection, "requests": r.requests, "detail": r.detail}
        for r in rows
    ]


def compare_replay(
    out: Path, original: Path, replayed: Path, not_replayed: list[NotReplayed]
) -> tuple[Report, dict[str, Path]]:
    """Decode both sides, compare them, write the report into `out`."""
    tables = out / "tables"
    sides: dict[str, Any] = {}
    for name, pcap in (("original", original), ("replay", replayed)):
        run_local([os.fspath(pcap)], tables / name, capture=name)
        sides[name] = tables / name
    report = compare(sides["original"], sides["replay"], rules=COMPARE_RULES, clients_only=True)
    _with_not_replayed(report, not_replayed)
    return report, write_report(report, out)
