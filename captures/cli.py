"""`kipwire-capture` (`python -m kipwire.captures`): decode captures with Spark, compare decodes."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "format_summary"]


def _decode_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kipwire-capture decode",
        description="Decode Kafka traffic in pcap/pcapng files into Parquet tables "
        "(pdus, pairs, connections) with PySpark.",
    )
    p.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="files, folders, or hdfs:// s3a:// URIs"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder for the tables")
    p.add_argument("--name", help="capture label (default: the input folder's name)")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    p.add_argument(
        "--broker-port",
        type=int,
        action="append",
        default=[],
        metavar="P",
        help="broker port hint, used only when neither a SYN nor the payload tells (repeatable)",
    )
    p.add_argument(
        "--split-mb",
        type=float,
        default=64.0,
        help="files larger than this are split into packet ranges (default 64)",
    )
    p.add_argument("--no-body-json", action="store_true", help="leave body_json empty (faster)")
    return p


def format_summary(s: dict[str, Any]) -> str:
    """The summary as a small text table."""
    lines = [f"capture {s['capture']!r} -> {s['out']}  ({s['partitions']} read partitions)"]

    def block(title: str, counts: dict[str, int]) -> None:
        lines.append(f"\n{title}")
        width = max([len(str(k)) for k in counts] + [6])
        for k, v in counts.items():
            lines.append(f"  {str(k):<{width}}  {v:>10,}")

    block("PDUs by status", s["by_status"])
    block("PDUs by API", s["by_api"])
    block("pairs by status", s["pairs"])
    lines.append("")
    lines.append(f"PDUs          {s['pdus']:>10,}")
    lines.append(f"connections   {s['connections']:>10,}")
    lines.append(f"payload bytes {s['payload_bytes']:>10,}")
    lines.append(f"missed bytes  {s['missed_bytes']:>10,}")
    lines.append(f"Spark start-up {s['startup_s']:.1f} s, decode and write {s['decode_s']:.1f} s")
    return "\n".join(lines)


def decode_main(argv: Sequence[str]) -> int:
    """The `decode` subcommand."""
    args = _decode_parser().parse_args(list(argv))
    from .job import run_decode  # pyspark only when decoding

    t0 = time.perf_counter()

    def progress(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", file=sys.stderr, flush=True)

    summary = run_decode(
        args.inputs,
        args.out,
        name=args.name,
        master=args.master,
        broker_ports=args.broker_port,
        split_bytes=int(args.split_mb * (1 << 20)),
        with_body_json=not args.no_body_json,
        progress=progress,
    )
    print(format_summary(summary))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: `decode ...` or `compare ...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = (
        "usage: kipwire-capture decode INPUT... --out DIR [--name N] [--master URL] "
        "[--broker-port P ...]\n"
        "       kipwire-capture compare BASELINE_DIR CANDIDATE_DIR --out REPORT_DIR "
        "[--fail-on KINDS]"
    )
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "decode":
        return decode_main(rest)
    if cmd == "compare":
        from .compare import main_compare  # written separately; imported only when used

        return main_compare(rest)
    print(f"unknown command {cmd!r}\n{usage}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
