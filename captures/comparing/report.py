"""Render a `captures.comparing.model.Report`: report.md, report.html, PNG plots and diff.json.

Both documents come from one list of blocks (headings, paragraphs, tables, images), so the
Markdown and the HTML always say the same thing. They open with the headline: the partition
timelines (when the captures hold the controller's records), then the ranked semantic
differences; the full tables follow. report.html carries its plots inside (data:
URIs), so it can be mailed or attached to a CI run alone; report.md links the PNG files.
"""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .charts import bar_chart, histogram
from .timeline import timeline_png

if TYPE_CHECKING:
    from .model import Difference, Report

__all__ = ["render"]

MAX_TABLE_ROWS = 500  # longer tables are cut in the documents; diff.json keeps everything
MAX_API_PLOTS = 6
MAX_TIMELINES = 8

Block = tuple[Any, ...]
_SIDES = ("baseline", "candidate")
_QUANTS = ("n", "p50", "p95", "p99")


def _error_name(code: Any) -> Any:
    if not isinstance(code, int) or isinstance(code, bool):
        return code
    try:
        from kipwire.codec import ErrorCode

        return f"{code} {ErrorCode(code).name}"
    except (ImportError, ValueError):
        return code


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def _diff_rows(diffs: list[Difference]) -> list[list[Any]]:
    rows = []
    for d in diffs:
        b, c = d.baseline, d.candidate
        if d.kind == "error_code":
            b, c = _error_name(b), _error_name(c)
        versions = (
            f"{_cell(d.baseline_version)} -> {_cell(d.candidate_version)}"
            if d.baseline_version is not None or d.candidate_version is not None
            else ""
        )
        rows.append(
            [d.kind, d.api_name or _cell(d.api_key), d.client_id, versions, d.path, b, c, d.count]
        )
    return rows


_DIFF_HEAD = ["kind", "api", "client id", "versions", "path", "baseline", "candidate", "count"]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _plots(report: Report, out: Path) -> list[tuple[str, str]]:
    """Write the PNGs; (file name, caption) of each."""
    written: list[tuple[str, str]] = []

    def save(name: str, caption: str, data: bytes) -> None:
        (out / name).write_bytes(data)
        written.append((name, caption))

    for row in report.timelines[:MAX_TIMELINES]:
        subject = f"{row['topic']}-{row['partition']}"
        lanes = [
            (
                report.baseline["capture"],
                *(row["baseline"][k] for k in ("states", "errors", "acks")),
            ),
            (
                report.candidate["capture"],
                *(row["candidate"][k] for k in ("states", "errors", "acks")),
            ),
        ]
        save(
            f"timeline_{_safe(subject)}.png",
            f"Timeline of {subject}: leader, ISR, ELR and LastKnownElr per run, with the "
            "client's errors and acknowledged records (seconds from each run's start)",
            timeline_png(f"PARTITION {subject}", lanes),
        )
    apis = [m["api"] for m in report.mix]
    save(
        "request_mix.png",
        "Request mix: requests per API",
        bar_chart(
            "Request mix",
            apis,
            {s: [m[s] for m in report.mix] for s in _SIDES},
        ),
    )
    samples = report.rtt_samples
    base, cand = samples.get("baseline", {}), samples.get("candidate", {})
    save(
        "rtt_all.png",
        "RTT distribution, all APIs (ms, log scale)",
        histogram(
            "RTT all APIs",
            {
                "baseline": [v for vals in base.values() for v in vals],
                "candidate": [v for vals in cand.values() for v in vals],
            },
        ),
    )
    busiest = sorted(
        set(base) | set(cand), key=lambda a: -(len(base.get(a, [])) + len(cand.get(a, [])))
    )
    for api in busiest[:MAX_API_PLOTS]:
        save(
            f"rtt_{_safe(api)}.png",
            f"RTT distribution, {api} (ms)",
            histogram(
                f"RTT {api}", {"baseline": base.get(api, []), "candidate": cand.get(api, [])}
            ),
        )
    return written


def _blocks(report: Report, plots: list[tuple[str, str]]) -> list[Block]:
    from .normalise import VOLATILE
    from .rules import COLUMNS

    b: list[Block] = []
    base, cand = report.baseline, report.candidate
    b.append(("h1", f"Capture comparison: {base['capture']} -> {cand['capture']}"))
    b.append(("p", f"Baseline `{base['dir']}`, candidate `{cand['dir']}`."))
    _headline(report, plots, b)
    func, info = report.functional, [d for d in report.differences if not d.functional]
    kinds = report.kinds()
    verdict = (
        "No functional difference."
        if not func
        else f"{len(func)} functional difference(s): "
        + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()) if k not in ("health", "rtt"))
        + "."
    )
    b.append(("p", f"**{verdict}** {len(info)} informational (decode health, RTT)."))
    al = report.alignment
    b.append(
        (
            "p",
            f"Alignment: {al['matched_connections']} client connections matched, "
            f"{al['baseline_only_connections']} only in the baseline, "
            f"{al['candidate_only_connections']} only in the candidate; requests: "
            f"{al['matched_requests']} matched, {al['removed_requests']} removed, "
            f"{al['added_requests']} added.",
        )
    )
    # The summaries come first: the full difference table can run to hundreds of rows.
    _metadata_blocks(report, b)
    b.append(("h2", "Errors seen by clients"))
    b.append(
        (
            "table",
            ["api", "client id", "error", "baseline", "candidate"],
            [
                [r["api"], r["client_id"], _error_name(r["error_code"])]
                + [r["baseline"], r["candidate"]]
                for r in report.client_errors
            ],
        )
        if report.client_errors
        else ("p", "No response carried an error code.")
    )
    b.append(("h2", "Functional differences"))
    b.append(("table", _DIFF_HEAD, _diff_rows(func)) if func else ("p", "None."))
    b.append(("h2", "Informational differences (decode health, RTT)"))
    b.append(("table", _DIFF_HEAD, _diff_rows(info)) if info else ("p", "None."))
    b.append(("h2", "Request mix"))
    for name, caption in plots:
        if name == "request_mix.png":
            b.append(("img", name, caption))
    b.append(
        (
            "table",
            ["api", "version", "direction", "client id", "topic", "baseline", "candidate"],
            [
                [r["api"], r["version"], r["direction"], r["client_id"], r["topic"]]
                + [r["baseline"], r["candidate"]]
                for r in report.counts
            ],
        )
    )
    b.append(("h2", "Records per topic-partition"))
    b.append(
        (
            "p",
            "Produced records in request order, fetched records once per offset; digests over "
            "the record keys and values (SHA-256).",
        )
    )
    b.append(
        (
            "table",
            ["source", "topic", "partition"]
            + [
                f"{s} {f}" for s in ("baseline", "candidate") for f in ("records", "keys", "values")
            ],
            [
                [r["source"], r["topic"], r["partition"]]
                + [
                    r[s].get(f)
                    for s in ("baseline", "candidate")
                    for f in ("record_count", "key_hash", "value_hash")
                ]
                for r in report.records
            ],
        )
    )
    b.append(("h2", "Round-trip times (informational)"))
    b.append(
        (
            "table",
            ["api"] + [f"{s} {q}" for s in _SIDES for q in _QUANTS],
            [[r["api"]] + [r[s][q] for s in _SIDES for q in _QUANTS] for r in report.rtt],
        )
    )
    for name, caption in plots:
        if name.startswith("rtt_"):
            b.append(("img", name, caption))
    b.append(("h2", "Decode health"))
    b.append(
        (
            "table",
            ["metric", "baseline", "candidate"],
            [[r["metric"], r["baseline"], r["candidate"]] for r in report.health],
        )
    )
    b.append(("h2", "Normalised fields"))
    b.append(
        (
            "p",
            "Before comparing, these body fields are replaced by `<field>` placeholders "
            "(`sentinel`: null, empty, <= 0 and the zero uuid are kept, since they carry "
            "meaning; `always`: every value). Names ending in `_timestamp` or `_timestamp_ms` "
            "follow the `timestamp` rule. Records are compared as digests of their keys, values "
            "and headers, without timestamps, CRCs or lengths. Correlation ids, ports of the "
            "connection and capture timestamps are never compared.",
        )
    )
    b.append(("table", ["field", "what", "rule"], [[k, w, r] for k, (w, r) in VOLATILE.items()]))
    b.append(("h2", "Columns compared"))
    b.append(("table", ["column", "class", "how"], [[k, c, w] for k, (c, w) in COLUMNS.items()]))
    return b


def _headline(report: Report, plots: list[tuple[str, str]], b: list[Block]) -> None:
    """The partition timelines, then the semantic differences, most important first."""
    for name, caption in plots:
        if name.startswith("timeline_"):
            b.append(("img", name, caption))
    sem = report.semantic_differences
    b.append(("h2", "Semantic differences, most important first"))
    shared = _shared_errors(report)
    if not sem:
        b.append(("p", "**No semantic difference**: the clients saw the same outcome." + shared))
        return
    b.append(("p", f"**{len(sem)} semantic difference(s).** " + sem[0].summary + "." + shared))
    b.append(
        (
            "table",
            ["#", "kind", "subject", "baseline", "candidate", "what it means"],
            [
                [i, d.kind, d.subject, d.baseline, d.candidate, d.summary]
                for i, d in enumerate(sem, 1)
            ],
        )
    )


def _shared_errors(report: Report) -> str:
    """The errors clients saw equally often in both runs: no difference, yet part of the story."""
    from .semantic import error_name

    same = [
        f"{r['api']} errors {error_name(r['error_code'])} {r['baseline']:,} vs "
        f"{r['candidate']:,} (client {r['client_id'] or '-'})"
        for r in report.client_errors
        if r["baseline"] == r["candidate"]
    ]
    return " Seen alike in both: " + "; ".join(same) + "." if same else ""


def _metadata_blocks(report: Report, b: list[Block]) -> None:
    """The controllers' partition records side by side, when the captures hold metadata fetches."""
    from ..decoding.metadata_records import FIELDS

    if not any(report.metadata.values()):
        return
    b.append(("h2", "Controller partition records (KIP-966 ELR fields)"))
    b.append(
        (
            "p",
            "PartitionRecord, PartitionChangeRecord and ClearElrRecord as the brokers fetched "
            "them from `__cluster_metadata`, once per offset; an empty cell is a field the "
            "record leaves unchanged, a leader of -1 leaves the partition without one.",
        )
    )
    rows = [
        [side, r["offset"], r["record"], r["partition"]] + [r[f] for f in FIELDS]
        for side in _SIDES
        for r in report.metadata.get(side, ())
    ]
    b.append(("table", ["side", "offset", "record", "partition", *FIELDS], rows))


def _md_escape(v: Any) -> str:
    return _cell(v).replace("|", "\\|").replace("\n", " ")


def _markdown(blocks: list[Block]) -> str:
    out: list[str] = []
    for blk in blocks:
        kind = blk[0]
        if kind == "h1":
            out.append(f"# {blk[1]}\n")
        elif kind == "h2":
            out.append(f"## {blk[1]}\n")
        elif kind == "p":
            out.append(f"{blk[1]}\n")
        elif kind == "img":
            out.append(f"![{blk[2]}]({blk[1]})\n")
        elif kind == "table":
            head, rows = blk[1], blk[2]
            lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            for r in rows[:MAX_TABLE_ROWS]:
                lines.append("| " + " | ".join(_md_escape(v) for v in r) + " |")
            if len(rows) > MAX_TABLE_ROWS:
                lines.append(f"\n{len(rows) - MAX_TABLE_ROWS} more rows: see diff.json.")
            out.append("\n".join(lines) + "\n")
    return "\n".join(out)


def _inline(text: str) -> str:
    """Escape, then the two Markdown marks the paragraphs use: **bold** and `code`."""
    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", t)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", t)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td { max-width: 40em; overflow-wrap: anywhere; }
img { display: block; margin: 1em 0; border: 1px solid #ddd; }
"""


def _html(blocks: list[Block], folder: Path) -> str:
    """The HTML document, self-contained: the plots are embedded as data: URIs."""
    title = next((blk[1] for blk in blocks if blk[0] == "h1"), "Capture comparison")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
    ]
    for blk in blocks:
        kind = blk[0]
        if kind in ("h1", "h2"):
            out.append(f"<{kind}>{html.escape(blk[1])}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{_inline(blk[1])}</p>")
        elif kind == "img":
            data = base64.b64encode((folder / blk[1]).read_bytes()).decode("ascii")
            src, alt = f"data:image/png;base64,{data}", html.escape(blk[2])
            out.append(f'<figure><img src="{src}" alt="{alt}"><figcaption>{alt}</figcaption>')
            out.append("</figure>")
        elif kind == "table":
            head, rows = blk[1], blk[2]
            out.append("<table><thead><tr>")
            out.append("".join(f"<th>{html.escape(h)}</th>" for h in head))
            out.append("</tr></thead><tbody>")
            for r in rows[:MAX_TABLE_ROWS]:
                cells = "".join(f"<td>{html.escape(_cell(v))}</td>" for v in r)
                out.append(f"<tr>{cells}</tr>")
            out.append("</tbody></table>")
            if len(rows) > MAX_TABLE_ROWS:
                out.append(f"<p>{len(rows) - MAX_TABLE_ROWS} more rows: see diff.json.</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def render(report: Report, out: Path) -> dict[str, Path]:
    """Write every output of `report` under `out` (created); returns their paths by kind."""
    out.mkdir(parents=True, exist_ok=True)
    plots = _plots(report, out)
    blocks = _blocks(report, plots)
    paths = {"md": out / "report.md", "html": out / "report.html", "json": out / "diff.json"}
    paths["md"].write_text(_markdown(blocks), encoding="utf-8")
    paths["html"].write_text(_html(blocks, out), encoding="utf-8")
    paths["json"].write_text(
        json.dumps(report.to_json(), indent=1, sort_keys=False, default=str) + "\n",
        encoding="utf-8",
    )
    for name, _ in plots:
        paths[f"png:{name}"] = out / name
    return paths
