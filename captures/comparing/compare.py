"""Regression comparison of two decoded captures (issue 4, item 6) and the `compare` command.

`compare(baseline_dir, candidate_dir)` loads two decoded captures (`comparing.load`: the Parquet
tables the decode wrote, as exchanges per connection) and returns a `Report`; `write_report`
renders it as `report.md`, `report.html` (with PNG plots) and `diff.json`. This module holds the
comparison and `main_compare`. Connections and requests are aligned by `comparing.align`; matched
requests are compared for version, request fields (field-path diffs of the normalised bodies,
`comparing.diffs`; when versions differ, fields only one version has are the version difference,
not reported again), and response error codes. The dataclasses are in `comparing.model`. The
headline, differences in meaning ranked (`Report.semantic_differences`), is `comparing.semantic`'s;
the partition timelines are `comparing.timeline`'s; `rules` and `clients_only` are
`comparing.rules`' and `comparing.load`'s.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..decoding.metadata_records import metadata_differences, partition_records
from .align import align_exchanges, match_connections, opcodes
from .diffs import DiffCollector, diff_values, error_codes
from .load import CompareInputError, load_capture
from .model import (
    FUNCTIONAL_KINDS,
    INFORMATIONAL_KINDS,
    Capture,
    Difference,
    Exchange,
    Report,
    SemanticDifference,
)
from .normalise import VOLATILE, normalise
from .rules import Rules, RulesError, load_rules
from .semantic import ClientFacts, client_facts, semantic_differences
from .timeline import partition_history

__all__ = [
    "FUNCTIONAL_KINDS",
    "INFORMATIONAL_KINDS",
    "VOLATILE",
    "CompareInputError",
    "Difference",
    "Report",
    "RulesError",
    "SemanticDifference",
    "compare",
    "diff_values",
    "load_capture",
    "main_compare",
    "normalise",
    "opcodes",
    "parse_fail_on",
    "write_report",
]


# ---------------------------------------------------------------------------------------------
# the comparison


def _fetch_responses(cap: Capture) -> Iterator[Any]:
    """The decoded response bodies of the capture's Fetch exchanges."""
    for conn in cap.conns:
        for e in conn.exchanges:
            if e.api_key == ApiKey.FETCH:
                yield e.response


def _common(e: Exchange) -> dict[str, Any]:
    return {"api_key": e.api_key, "api_name": e.api_name, "client_id": e.client_id}


def _compare_exchange(x: Exchange, y: Exchange, out: DiffCollector) -> None:
    versions = {"baseline_version": x.api_version, "candidate_version": y.api_version}
    if x.api_version != y.api_version:
        out.add("version", **_common(y), **versions)
    if x.token != y.token:
        if x.norm is None or y.norm is None:
            out.add(
                "changed",
                **_common(y),
                **versions,
                path="decode_status",
                baseline=x.status,
                candidate=y.status,
            )
        else:
            common = x.api_version != y.api_version
            for path, bv, cv in diff_values(x.norm, y.norm, common_only=common):
                out.add("changed", **_common(y), **versions, path=path, baseline=bv, candidate=cv)
    if (x.response_status is None) != (y.response_status is None):
        out.add(
            "changed",
            **_common(y),
            **versions,
            path="response",
            baseline="answered" if x.response_status else "no_response",
            candidate="answered" if y.response_status else "no_response",
        )
    if x.response is not None or y.response is not None:
        ca, cb = error_codes(x.response), error_codes(y.response)
        for p in list(ca) + [p for p in cb if p not in ca]:
            in_a, in_b = p in ca, p in cb
            if (in_a and in_b and ca[p] != cb[p]) or (
                # a non-zero error field only one response has (say, one more partition);
                # across versions a field one version lacks is the version difference
                in_a != in_b and x.api_version == y.api_version and (ca.get(p) or cb.get(p))
            ):
                out.add(
                    "error_code",
                    **_common(y),
                    **versions,
                    path=p,
                    baseline=ca.get(p),
                    candidate=cb.get(p),
                )
    elif x.response_error != y.response_error:
        out.add(
            "error_code",
            **_common(y),
            **versions,
            path="error_code",
            baseline=x.response_error,
            candidate=y.response_error,
        )


def _summary(e: Exchange) -> str:
    return ",".join(e.topics) if e.topics else ""


def _nonzero_errors(cap: Capture) -> Counter:
    out: Counter = Counter()
    for c in cap.conns:
        for e in c.exchanges:
            codes = set(error_codes(e.response).values()) if e.response is not None else set()
            if e.response_error:
                codes.add(e.response_error)
            for code in codes - {ErrorCode.NONE}:
                out[(e.api_key, e.api_name, e.client_id, code)] += 1
    return out


def _counts(cap: Capture) -> Counter:
    out: Counter = Counter()
    for r in cap.pdus:
        if r["api_key"] is None or r["direction"] not in ("request", "response"):
            continue
        for t in r["topics"] or ("",):
            key = (r["api_name"] or str(r["api_key"]), r["api_version"], r["direction"])
            out[(*key, r["client_id"] or "", t)] += 1
    return out


def _mix(base: Capture, cand: Capture) -> list[dict[str, Any]]:
    sides = []
    for cap in (base, cand):
        sides.append(
            Counter(
                r["api_name"] or str(r["api_key"])
                for r in cap.pdus
                if r["direction"] == "request" and r["api_key"] is not None
            )
        )
    apis = sorted(set(sides[0]) | set(sides[1]), key=lambda a: (-(sides[0][a] + sides[1][a]), a))
    return [{"api": a, "baseline": sides[0][a], "candidate": sides[1][a]} for a in apis]


def _percentile(sorted_vals: list[float], q: float) -> float | None:
    if not sorted_vals:
        return None
    pos = (len(sorted_vals) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def _rtt(cap: Capture) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for r in cap.pairs:
        if r["rtt_ms"] is not None and r["status"] == "answered":
            out[r["api_name"] or str(r["api_key"])].append(float(r["rtt_ms"]))
    for v in out.values():
        v.sort()
    return out


def _health(cap: Capture) -> dict[str, int]:
    out: Counter = Counter()
    for r in cap.pdus:
        out[f"pdus {r['direction'] or '-'} {r['decode_status']}"] += 1
        if r["decode_status"] == "gap":
            out["gap bytes"] += r.get("length") or 0
    for r in cap.pairs:
        out[f"pairs {r['status']}"] += 1
    out["connections"] = len(cap.connections)
    out["missed bytes"] = sum(c.get("missed_bytes") or 0 for c in cap.connections)
    return dict(out)


def _record_stats(cap: Capture) -> dict[tuple, dict[str, Any]]:
    out = {}
    for key, recs in cap.records.items():
        if key[0] == "fetch":  # the same record fetched twice counts once
            recs = sorted({r[0]: r for r in recs}.values(), key=lambda r: r[0] or 0)
        keys = hashlib.sha256("\n".join(r[1] for r in recs).encode()).hexdigest()[:16]
        values = hashlib.sha256("\n".join(r[2] for r in recs).encode()).hexdigest()[:16]
        out[key] = {"record_count": len(recs), "key_hash": keys, "value_hash": values}
    return out


def _describe(cap: Capture) -> dict[str, Any]:
    return {
        "dir": cap.path,
        "capture": cap.label,
        "pdus": len(cap.pdus),
        "pairs": len(cap.pairs),
        "connections": len(cap.connections),
        "client_connections": len(cap.conns),
    }


def _timelines(
    history: tuple[dict, dict], facts: tuple[ClientFacts, ClientFacts]
) -> list[dict[str, Any]]:
    """Per partition the controller decided about: each side's states, client errors and acks."""
    out = []
    for key in sorted(set(history[0]) | set(history[1]), key=repr):
        row: dict[str, Any] = {"topic": key[0], "partition": key[1]}
        for side, hist, f in zip(("baseline", "candidate"), history, facts, strict=True):
            row[side] = {
                "states": hist.get(key, []),
                "errors": sorted(f.error_times.get(key, [])),
                "acks": sorted(Counter(f.ack_times.get(key, [])).items()),
            }
        out.append(row)
    return out


def compare(
    baseline_dir: str | os.PathLike,
    candidate_dir: str | os.PathLike,
    *,
    rules: Rules | str | os.PathLike | None = None,
    clients_only: bool = False,
) -> Report:
    """Compare two decoded captures; raises `CompareInputError` when a table is missing.

    `rules` (a `Rules` or a rule file's path) reclassify field paths; `clients_only` sets the
    cluster's own traffic (controller, replication, metadata fetches) aside.
    """
    if rules is not None and not isinstance(rules, Rules):
        rules = load_rules(rules)
    base = load_capture(baseline_dir, rules=rules, clients_only=clients_only)
    cand = load_capture(candidate_dir, rules=rules, clients_only=clients_only)
    out = DiffCollector()

    pairs, only_a, only_b = match_connections(base.conns, cand.conns)
    n_matched = n_removed = n_added = 0
    for a, b in pairs:
        if a.client_id != b.client_id:
            out.add(
                "changed",
                client_id=b.client_id,
                path="client_id",
                baseline=a.client_id,
                candidate=b.client_id,
            )
        matched, removed, added = align_exchanges(a, b)
        n_matched += len(matched)
        for x, y in matched:
            _compare_exchange(x, y, out)
        for e in removed:
            out.add("removed", **_common(e), baseline_version=e.api_version, baseline=_summary(e))
        for e in added:
            out.add("added", **_common(e), candidate_version=e.api_version, candidate=_summary(e))
        n_removed += len(removed)
        n_added += len(added)
    for c in only_a:
        for e in c.exchanges:
            out.add("removed", **_common(e), baseline_version=e.api_version, baseline=_summary(e))
        n_removed += len(c.exchanges)
    for c in only_b:
        for e in c.exchanges:
            out.add("added", **_common(e), candidate_version=e.api_version, candidate=_summary(e))
        n_added += len(c.exchanges)

    # error codes the candidate shows that the baseline never did (for that API and client)
    reported = {
        (d.api_key, d.client_id, d.candidate) for d in out.groups.values() if d.kind == "error_code"
    }
    errs_a, errs_b = _nonzero_errors(base), _nonzero_errors(cand)
    seen_a = {(k[0], k[2], k[3]) for k in errs_a}
    for (key, name, cid, code), n in errs_b.items():
        if (key, cid, code) not in seen_a and (key, cid, code) not in reported:
            out.add(
                "error_code",
                api_key=key,
                api_name=name,
                client_id=cid,
                path="(new)",
                candidate=code,
                count=n,
            )

    # counts by (api, direction, client, topic); the version split is the `version` kind's job
    counts_a, counts_b = _counts(base), _counts(cand)
    counts_rows = [
        {
            "api": k[0],
            "version": k[1],
            "direction": k[2],
            "client_id": k[3],
            "topic": k[4],
            "baseline": counts_a.get(k, 0),
            "candidate": counts_b.get(k, 0),
        }
        for k in sorted(set(counts_a) | set(counts_b), key=lambda k: tuple(map(str, k)))
    ]
    agg_a: Counter = Counter()
    agg_b: Counter = Counter()
    for k, n in counts_a.items():
        agg_a[(k[0], k[2], k[3], k[4])] += n
    for k, n in counts_b.items():
        agg_b[(k[0], k[2], k[3], k[4])] += n
    for k in sorted(set(agg_a) | set(agg_b)):
        if agg_a.get(k, 0) != agg_b.get(k, 0):
            out.add(
                "count",
                api_name=k[0],
                client_id=k[2],
                path=f"{k[1]} topic={k[3] or '-'}",
                baseline=agg_a.get(k, 0),
                candidate=agg_b.get(k, 0),
                count=abs(agg_a.get(k, 0) - agg_b.get(k, 0)),
            )

    # per topic-partition records: produced (request order), fetched (by offset)
    rec_a, rec_b = _record_stats(base), _record_stats(cand)
    record_rows = []
    for k in sorted(set(rec_a) | set(rec_b), key=lambda k: (k[0], k[1], k[2] or -1)):
        ra, rb = rec_a.get(k, {}), rec_b.get(k, {})
        record_rows.append(
            {"source": k[0], "topic": k[1], "partition": k[2], "baseline": ra, "candidate": rb}
        )
        for f in ("record_count", "key_hash", "value_hash"):
            if ra.get(f) != rb.get(f):
                out.add(
                    "records",
                    api_key=ApiKey.PRODUCE if k[0] == "produce" else ApiKey.FETCH,
                    api_name="Produce" if k[0] == "produce" else "Fetch",
                    path=f"{k[0]} {k[1]}-{k[2]} {f}",
                    baseline=ra.get(f),
                    candidate=rb.get(f),
                )

    # RTT per API (informational): flagged when p95 moved by 2x and at least 1 ms
    rtt_a, rtt_b = _rtt(base), _rtt(cand)
    rtt_rows = []
    for api in sorted(set(rtt_a) | set(rtt_b)):
        row: dict[str, Any] = {"api": api}
        for side, src in (("baseline", rtt_a), ("candidate", rtt_b)):
            vals = src.get(api, [])
            row[side] = {
                "n": len(vals),
                **{f"p{q}": _percentile(vals, q / 100) for q in (50, 95, 99)},
            }
        rtt_rows.append(row)
        pa_, pb_ = row["baseline"]["p95"], row["candidate"]["p95"]
        if pa_ is not None and pb_ is not None:
            hi, lo = max(pa_, pb_), min(pa_, pb_)
            if hi - lo >= 1.0 and hi >= 2 * lo:
                out.add(
                    "rtt",
                    api_name=api,
                    path="p95_ms",
                    baseline=round(pa_, 3),
                    candidate=round(pb_, 3),
                )

    # decode health, apart from behaviour
    ha, hb = _health(base), _health(cand)
    health_rows = [
        {"metric": k, "baseline": ha.get(k, 0), "candidate": hb.get(k, 0)}
        for k in sorted(set(ha) | set(hb))
    ]
    for r in health_rows:
        if r["baseline"] != r["candidate"] and r["metric"] not in ("connections",):
            if r["metric"].startswith("pairs answered") or r["metric"].endswith(" ok"):
                continue  # healthy traffic volume: a functional `count`/`added` matter
            out.add("health", path=r["metric"], baseline=r["baseline"], candidate=r["candidate"])

    # the controllers' partition decisions (KIP-966 ELR fields), from the metadata fetches
    meta_a = partition_records(_fetch_responses(base))
    meta_b = partition_records(_fetch_responses(cand))
    for path, bv, cv in metadata_differences(meta_a, meta_b):
        out.add(
            "metadata", api_key=ApiKey.FETCH, api_name="Fetch", path=path, baseline=bv, candidate=cv
        )
    differences = out.result()
    history = (partition_history(base), partition_history(cand))
    facts = (client_facts(base), client_facts(cand))
    client_errors = [
        {
            "api": k[1],
            "client_id": k[2],
            "error_code": k[3],
            "baseline": errs_a.get(k, 0),
            "candidate": errs_b.get(k, 0),
        }
        for k in sorted(set(errs_a) | set(errs_b), key=lambda k: tuple(map(str, k)))
    ]

    return Report(
        baseline=_describe(base),
        candidate=_describe(cand),
        differences=differences,
        counts=counts_rows,
        records=record_rows,
        rtt=rtt_rows,
        health=health_rows,
        alignment={
            "rule": "per client id: best SequenceMatcher ratio over (api, normalised request)",
            "matched_connections": len(pairs),
            "baseline_only_connections": len(only_a),
            "candidate_only_connections": len(only_b),
            "matched_requests": n_matched,
            "removed_requests": n_removed,
            "added_requests": n_added,
        },
        rtt_samples={"baseline": dict(rtt_a), "candidate": dict(rtt_b)},
        mix=_mix(base, cand),
        metadata={"baseline": meta_a, "candidate": meta_b},
        client_errors=client_errors,
        semantic_differences=semantic_differences(base, cand, differences, history, rules, facts),
        timelines=_timelines(history, facts),
        options={
            "clients_only": clients_only,
            "rules": [list(r) for r in rules.patterns] if rules else [],
        },
    )


# ---------------------------------------------------------------------------------------------
# the command


def parse_fail_on(text: str | None) -> set[str]:
    """`--fail-on` value as a set of kinds; `functional` expands; ValueError on unknown kinds.

    `semantic` stays itself: it fails on any `Report.semantic_differences`.
    """
    if not text:
        return set()
    kinds: set[str] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part == "functional":
            kinds.update(FUNCTIONAL_KINDS)
        elif part == "all":
            kinds.update(FUNCTIONAL_KINDS + INFORMATIONAL_KINDS + ("semantic",))
        elif part in FUNCTIONAL_KINDS or part in INFORMATIONAL_KINDS or part == "semantic":
            kinds.add(part)
        else:
            known = ", ".join(FUNCTIONAL_KINDS + INFORMATIONAL_KINDS)
            raise ValueError(
                f"unknown difference kind {part!r} (known: semantic, functional, all, {known})"
            )
    return kinds


def write_report(report: Report, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write report.md, report.html, the PNG plots and diff.json; returns their paths."""
    from .report import render

    return render(report, Path(out_dir))


def main_compare(argv: Sequence[str] | None = None) -> int:
    """`compare BASELINE_DIR CANDIDATE_DIR --out DIR [--fail-on KINDS] [--rules FILE]
    [--clients-only]` (the arguments after `compare`)."""
    p = argparse.ArgumentParser(
        prog="kipwire-capture compare",
        description="Compare two decoded captures for regressions.",
    )
    p.add_argument("baseline", help="decoded capture directory (with pdus/, pairs/, connections/)")
    p.add_argument("candidate", help="decoded capture directory to compare with the baseline")
    p.add_argument("--out", required=True, help="report directory (created)")
    p.add_argument(
        "--fail-on",
        default="",
        help="exit 1 when a difference of these kinds is found: a comma list of "
        f"{', '.join(FUNCTIONAL_KINDS + INFORMATIONAL_KINDS)}, or `functional`, or "
        "`semantic` (any difference in meaning: the report's headline)",
    )
    p.add_argument(
        "--rules",
        metavar="FILE",
        help="TOML or JSON file reclassifying field paths as semantic, volatile or ignore",
    )
    p.add_argument(
        "--clients-only",
        action="store_true",
        help="set the cluster's own traffic (controller, replication, metadata fetches) aside",
    )
    try:
        args = p.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return 2 if exc.code else 0
    try:
        fail_on = parse_fail_on(args.fail_on)
    except ValueError as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    try:
        report = compare(
            args.baseline, args.candidate, rules=args.rules, clients_only=args.clients_only
        )
    except (CompareInputError, RulesError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    try:
        paths = write_report(report, args.out)
    except OSError as exc:
        print(
            f"compare: cannot write the report to {args.out}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    kinds = report.kinds()
    summary = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "no differences"
    print(f"{report.baseline['capture']} -> {report.candidate['capture']}: {summary}")
    sem = report.semantic_differences
    if sem:
        print(f"semantic differences {len(sem)}, first: {sem[0].summary}")
    print(f"report: {paths['md']}")
    hits = sorted(k for k in kinds if k in fail_on)
    if sem and "semantic" in fail_on:
        hits.insert(0, "semantic")
    if hits:
        print(f"failing: differences of kind {', '.join(hits)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main_compare())
