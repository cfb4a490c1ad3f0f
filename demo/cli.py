"""`make demo` (`kipwire`, `python -m kipwire.demo`): the five steps and the command line.

The story (`demo.story`) runs with ELR on (Kafka 4.1) and again with ELR off (Kafka 3.9, feature
level 0); a table puts the two side by side, and both captures are decoded (Spark, `local[*]`,
or the local engine) and compared into a report.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .story import Progress, StoryResult, run_story


def format_table(on: StoryResult, off: StoryResult) -> str:
    """The side-by-side table of the two runs."""
    rows = [
        ("records acknowledged", on.acked, off.acked),
        ("records lost (acked, not readable)", on.lost, off.lost),
        ("elections: clean", on.elections["clean"], off.elections["clean"]),
        ("elections: ELR", on.elections["ELR"], off.elections["ELR"]),
        ("elections: unclean", on.elections["unclean"], off.elections["unclean"]),
        ("time under min ISR (s)", f"{on.under_min_isr_s:.1f}", f"{off.under_min_isr_s:.1f}"),
        (
            "NOT_ENOUGH_REPLICAS seen by the producer",
            on.not_enough_replicas,
            off.not_enough_replicas,
        ),
        ("fatal error seen by the producer", on.producer_fatal or "-", off.producer_fatal or "-"),
    ]
    width = max(len(r[0]) for r in rows)
    col = max(len(str(v)) for r in rows for v in r[1:] + ("ELR off (3.9)",))
    lines = [f"{'':<{width}}  {'ELR on (4.1)':>{col}}  {'ELR off (3.9)':>{col}}"]
    lines += [f"{name:<{width}}  {a!s:>{col}}  {b!s:>{col}}" for name, a, b in rows]
    return "\n".join(lines)


def _spark_session(progress: Progress) -> Any:
    """A local[*] Spark session, or None (said in one line) when Spark cannot start."""
    try:
        from kipwire.captures.engines.spark_job import session

        return session("local[*]")
    except Exception as exc:  # noqa: BLE001 - whatever stops Spark, the local engine decodes
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        progress.step(f"    Spark cannot start ({reason}); decoding with the local engine instead")
        return None


def decode_captures(
    captures: Sequence[Path], out: Path, progress: Progress, spark: bool = True
) -> tuple[str, list[Path]]:
    """Decode each capture with the Spark job (`local[*]`), or locally (asked, or no Spark)."""
    dirs = [out / "decoded" / c.stem for c in captures]
    session = _spark_session(progress) if spark else None
    if session is None:
        from kipwire.captures import run_local

        for c, d in zip(captures, dirs, strict=True):
            run_local([str(c)], d, capture=c.stem)
        return "local", dirs
    from kipwire.captures import run_decode

    try:
        for c, d in zip(captures, dirs, strict=True):
            run_decode([str(c)], d, name=c.stem, spark=session)
    finally:
        session.stop()
    return "spark", dirs


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kipwire",
        description="KIP-966's last-replica-standing story with a real client, ELR on and off, "
        "recorded, decoded and compared.",
    )
    p.add_argument("--out", default="demo-out", type=Path, help="output folder (demo-out)")
    p.add_argument("--records", type=int, default=2000, help="records to produce per run (2000)")
    p.add_argument("--quick", action="store_true", help="reduced size (400 records), for tests")
    return p


@dataclass
class DemoRun:
    """Everything one demo run produced."""

    on: StoryResult
    off: StoryResult
    engine: str
    decoded: list[Path]
    report: Path
    differences: dict[str, int]


class StepFailed(Exception):
    """A numbered step failed; the message says which and why."""


def run(out: Path, records: int, progress: Progress, spark: bool = True) -> DemoRun:
    """The whole demo: both stories, the table, the decode and the comparison."""
    step = "preparing the output folder"
    try:
        out.mkdir(parents=True, exist_ok=True)
        step = "1/5 the story with ELR on"
        progress.step(f"{step}: {records} records, acks=all, idempotent confluent-kafka producer")
        on = run_story(out, elr=True, records=records, progress=progress)
        step = "2/5 the story with ELR off"
        progress.step(f"{step} (Kafka before 4.0): {records} records")
        off = run_story(out, elr=False, records=records, progress=progress)
        step = "3/5 the table"
        progress.step(f"{step}, the two runs side by side:")
        progress.step(format_table(on, off))
        step = "4/5 decoding both captures"
        progress.step(f"{step} with the {'Spark job (local[*])' if spark else 'local engine'}")
        engine, decoded = decode_captures([on.capture, off.capture], out, progress, spark)
        progress.step(f"    decoded with the {engine} engine into {out / 'decoded'}")
        step = "5/5 comparing the captures"
        progress.step(f"{step}: ELR on (baseline) against ELR off (candidate)")
        from kipwire.captures import compare, write_report

        report = compare(decoded[0], decoded[1])
        paths = write_report(report, out)
        kinds = dict(sorted(report.kinds().items()))
        progress.step("    differences: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
        for d in report.semantic_differences[:3]:  # the headline, as the report opens with it
            progress.step(f"    semantic: {d.summary}")
    except Exception as exc:  # noqa: BLE001 - any failure ends the demo with its step named
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StepFailed(f"{step} failed: {reason}") from exc
    return DemoRun(on, off, engine, decoded, paths["html"], kinds)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `kipwire` and `python -m kipwire.demo`."""
    args = _parser().parse_args(argv)
    records = 400 if args.quick else args.records
    if records < 4:
        print("kipwire: --records must be at least 4", file=sys.stderr)
        return 2
    progress = Progress()
    t0 = time.monotonic()
    try:
        result = run(args.out, records, progress)
    except StepFailed as exc:
        print(f"kipwire demo: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    progress.step(f"done in {time.monotonic() - t0:.0f} s; wrote:")
    for path in (result.on.capture, result.off.capture, *result.decoded, result.report):
        progress.step(f"  {path}")
    progress.step(f"  {result.report.with_suffix('.md')} and the PNG plots beside it")
    return 0
