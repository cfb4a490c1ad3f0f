"""`kipwire-capture` (`python -m kipwire.captures`): decode captures into tables, compare decodes,
replay a capture against a cluster.

`decode` runs in this process (`--engine local`, pyarrow only) or on Spark (`--engine spark`,
or `--master`, or under spark-submit); `--engine auto` picks local below `--local-max-mb` of
input and says which it chose. Every problem with the inputs or arguments is one line on stderr
and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["format_summary", "main"]

_EXTRA = "pip install 'kipwire[captures]'"
_EXTRA_MODULES = {"pyarrow", "pyspark", "pandas", "py4j"}
_STATUSES = (
    "malformed",
    "truncated",
    "gap",
    "unknown_api",
    "unsupported_version",
    "request_missing",
)


# what spark-submit accepts: yarn, or a URL starting with spark, k8s or local
_MASTER = re.compile(r"^(yarn|local(\[[^\]]*\])?|local-cluster\[[^\]]*\]|spark://.+|k8s://.+)$")


class _Usage(Exception):
    """A bad argument: one line for the user, exit 2."""


def _decode_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kipwire-capture decode",
        description="Decode Kafka traffic (pcap/pcapng files, tcpflow stream files, raw frame "
        "dumps) into Parquet tables (pdus, pairs, connections).",
    )
    p.add_argument(
        "inputs", nargs="*", metavar="INPUT", help="files, folders, or hdfs:// s3a:// URIs"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder for the tables")
    p.add_argument("--name", help="capture label (default: the first input's own name)")
    p.add_argument(
        "--engine",
        choices=("auto", "local", "spark"),
        default="auto",
        help="local: in this process, no Spark; spark: the Spark job; auto (default): local "
        "below --local-max-mb of input, else Spark",
    )
    p.add_argument(
        "--local-max-mb",
        type=float,
        default=256.0,
        help="with --engine auto, the input size above which Spark runs (default 256)",
    )
    p.add_argument("--master", help="Spark master URL (implies --engine spark; default local[*])")
    p.add_argument(
        "--remote", help="Spark Connect URL, sc://HOST:PORT (implies --engine spark; not --master)"
    )
    p.add_argument(
        "--spark-log",
        default="error",
        choices=("error", "warn", "info", "debug"),
        help="Spark's own log level (default error: quiet)",
    )
    p.add_argument(
        "--format",
        choices=("pcap", "tcpflow", "frames"),
        help="read every input as this kind (default: recognised by content or name)",
    )
    p.add_argument(
        "--pair",
        nargs=2,
        action="append",
        default=[],
        metavar=("REQUESTS", "RESPONSES"),
        help="a frame dump of requests and the dump of their responses (repeatable)",
    )
    p.add_argument(
        "--fail-on",
        default="",
        metavar="STATUSES",
        help="exit 1 when PDUs have one of these decode statuses: a comma list of "
        f"{', '.join(_STATUSES)}",
    )
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
        help="Spark: files larger than this are split into packet ranges (default 64)",
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
    if s.get("engine") == "spark":
        lines.append(
            f"Spark start-up {s['startup_s']:.1f} s, decode and write {s['decode_s']:.1f} s"
        )
    else:
        lines.append(f"decode and write {s['decode_s']:.1f} s in this process")
    return "\n".join(lines)


def _fail_on(text: str) -> set[str]:
    wanted = {p.strip() for p in text.split(",") if p.strip()}
    unknown = wanted - set(_STATUSES)
    if unknown:
        raise _Usage(
            f"--fail-on: unknown status {sorted(unknown)[0]!r} (known: {', '.join(_STATUSES)})"
        )
    return wanted


def _under_spark_submit() -> bool:
    """spark-submit starts the driver's Python with the gateway to its JVM already open."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def choose_engine(
    engine: str, master: str | None, inputs: Sequence[str], max_local_bytes: int
) -> tuple[str, str]:
    """(engine, why): spark when asked, given a master, a remote input or a large input."""
    from .reading.inputs import expand_inputs, file_size, is_remote

    if engine != "auto":
        return engine, f"--engine {engine}"
    if master is not None:
        return "spark", f"--master {master}"
    if _under_spark_submit():
        return "spark", "running under spark-submit"
    if any(is_remote(i) for i in inputs):
        return "spark", "remote inputs"
    size = sum(file_size(f.path) + file_size(f.peer or "") for f in expand_inputs(inputs))
    limit = _size_text(max_local_bytes)
    if size > max_local_bytes:
        return "spark", f"{_size_text(size)} of input, over {limit} (--local-max-mb)"
    return "local", f"{_size_text(size)} of input, under {limit} (--local-max-mb)"


def _size_text(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n / 1e3:,.1f} kB"


def _check_out(out: str) -> None:
    """The output folder can be made and written (local outputs only)."""
    from .reading.inputs import is_remote, local_path

    if is_remote(out):
        return
    path = os.path.abspath(local_path(out))
    if os.path.exists(path) and not os.path.isdir(path):
        raise _Usage(f"--out {out}: exists and is not a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise _Usage(f"--out {out}: cannot create it ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise _Usage(f"--out {out}: not writable")


def decode_main(argv: Sequence[str]) -> int:
    """The `decode` subcommand."""
    try:
        args = _decode_parser().parse_args(list(argv))
    except SystemExit as exc:
        return 2 if exc.code else 0
    if not args.inputs and not args.pair:
        raise _Usage("decode: no INPUT and no --pair given")
    fail_on = _fail_on(args.fail_on)
    if args.split_mb <= 0 or args.local_max_mb < 0:
        raise _Usage("--split-mb must be above 0 and --local-max-mb at least 0")
    if args.master is not None and not _MASTER.match(args.master):
        raise _Usage(
            f"--master {args.master}: not a Spark master URL (local, local[N], "
            "local-cluster[N,C,M], spark://, yarn, k8s://)"
        )
    from .reading.inputs import check_inputs

    problems = check_inputs(args.inputs, fmt=args.format, pairs=args.pair)
    for line in problems:
        print(f"kipwire-capture: {line}", file=sys.stderr)
    if problems:
        return 2
    _check_out(args.out)
    t0 = time.perf_counter()

    def progress(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", file=sys.stderr, flush=True)

    limit = int(args.local_max_mb * 1e6)
    named = args.inputs + [p[0] for p in args.pair]
    engine, why = choose_engine(args.engine, args.master, named, limit)
    if args.remote is not None:
        if args.master is not None or not args.remote.startswith("sc://"):
            raise _Usage(f"--remote {args.remote}: an sc:// URL, and not with --master")
        engine, why = "spark", f"--remote {args.remote}"
    remote = [i for i in named if "://" in i and not i.startswith("file://")]
    if engine == "local" and remote:
        raise _Usage(f"--engine local reads local files only, not {remote[0]}")
    print(f"engine: {engine} ({why})", file=sys.stderr, flush=True)
    if engine == "local":
        from .engines.local import run_local
        from .reading.inputs import input_label

        summary = run_local(
            args.inputs,
            args.out,
            capture=args.name or input_label(named[0]),
            broker_ports=args.broker_port,
            with_body_json=not args.no_body_json,
            fmt=args.format,
            pairs=args.pair,
            progress=progress,
        )
    else:
        from .engines.spark_job import run_decode

        master = args.master or (None if _under_spark_submit() else "local[*]")
        summary = _spark_errors_in_one_line(
            run_decode,
            args.inputs,
            args.out,
            name=args.name,
            master=master,
            broker_ports=args.broker_port,
            split_bytes=int(args.split_mb * (1 << 20)),
            with_body_json=not args.no_body_json,
            progress=progress,
            fmt=args.format,
            pairs=args.pair,
            log_level=args.spark_log,
            remote=args.remote,
        )
    print(format_summary(summary))
    hits = {k: v for k, v in summary["by_status"].items() if k in fail_on and v}
    if hits:
        found = ", ".join(f"{v:,} {k}" for k, v in sorted(hits.items()))
        print(f"kipwire-capture: failing (--fail-on): {found} PDUs", file=sys.stderr)
        return 1
    return 0


def py_files_main(argv: Sequence[str]) -> int:
    """The `py-files` subcommand: the zip for `spark-submit --py-files`."""
    p = argparse.ArgumentParser(
        prog="kipwire-capture py-files",
        description="Write kipwire as a zip for spark-submit --py-files.",
    )
    p.add_argument("zip", metavar="OUT.zip", help="the zip to write")
    try:
        args = p.parse_args(list(argv))
    except SystemExit as exc:
        return 2 if exc.code else 0
    from .engines.py_files import write_py_files

    try:
        path = write_py_files(args.zip)
    except OSError as exc:
        raise _Usage(f"cannot write {args.zip}: {exc.strerror or exc}") from None
    print(path)
    return 0


class _SparkFailed(Exception):
    """Spark refused the job (a bad --master, a cluster that fails it): one line, exit 1."""


def _spark_errors_in_one_line(run: Any, *args: Any, **kwargs: Any) -> Any:
    """Call `run`; an error raised by Spark (through py4j or pyspark) becomes `_SparkFailed`."""
    try:
        return run(*args, **kwargs)
    except Exception as exc:
        origin = type(exc).__module__.split(".")[0]
        if origin not in ("py4j", "pyspark"):
            raise
        text = str(exc).strip().splitlines()
        raise _SparkFailed(f"Spark failed: {text[0] if text else type(exc).__name__}") from None


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose complaints are one line (`_Usage`), not usage and an error."""

    def error(self, message: str) -> NoReturn:
        raise _Usage(f"{self.prog}: {message}")


def _replay_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(
        prog="kipwire-capture replay",
        description="Send a capture's client requests again to a cluster and compare its "
        "answers with the captured ones.",
    )
    p.add_argument(
        "captures", nargs="+", metavar="CAPTURE", help="pcap, pcapng, tcpflow folders, frame dumps"
    )
    p.add_argument("--bootstrap", required=True, metavar="HOST:PORT", help="the target cluster")
    p.add_argument("--out", required=True, metavar="DIR", help="replay.pcapng and the report")
    p.add_argument(
        "--pace",
        choices=("original", "max"),
        default="max",
        help="max (default): as fast as the target answers; original: the captured timing",
    )
    p.add_argument("--client-id", metavar="REGEX", help="replay only these clients' connections")
    p.add_argument(
        "--security-protocol",
        choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        default="PLAINTEXT",
        help="how the target is reached (default PLAINTEXT)",
    )
    p.add_argument(
        "--sasl-mechanism",
        choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        help="the SASL mechanism the target's credentials use",
    )
    p.add_argument("--user", metavar="NAME:PASSWORD", help="the target's own SASL credentials")
    p.add_argument("--ca", metavar="FILE", help="the CA (PEM) the target's TLS certificate has")
    p.add_argument(
        "--engine",
        choices=("local", "spark"),
        default="local",
        help="local (default): read the captures in this process; spark: read them and cut "
        "their connections into requests in Spark tasks (the sending stays here)",
    )
    p.add_argument("--master", help="Spark master URL with --engine spark (default local[*])")
    p.add_argument(
        "--fail-on",
        default="",
        metavar="KINDS",
        help="exit 1 when the compare finds differences of these kinds (as `compare`: "
        "semantic, functional, all, or a comma list of kinds)",
    )
    return p


def replay_main(argv: Sequence[str]) -> int:
    """The `replay` subcommand."""
    p = _replay_parser()
    try:
        args = p.parse_args(list(argv))
    except SystemExit as exc:  # --help
        return 2 if exc.code else 0
    from .comparing.compare import parse_fail_on
    from .replaying.replay import ReplayError, replay

    try:
        fail_on = parse_fail_on(args.fail_on)
        if args.client_id is not None:
            re.compile(args.client_id)
    except (ValueError, re.error) as exc:
        raise _Usage(f"replay: {exc}") from None
    try:
        result = replay(
            args.captures,
            bootstrap=args.bootstrap,
            out=args.out,
            pace=args.pace,
            client_id=args.client_id,
            progress=lambda msg: print(msg, file=sys.stderr),
            security_protocol=args.security_protocol,
            sasl_mechanism=args.sasl_mechanism,
            user=args.user,
            ca=args.ca,
            engine=args.engine,
            master=args.master,
        )
    except ReplayError as exc:
        raise _Usage(f"replay: {exc}") from None
    kinds = result.report.kinds()
    summary = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "no differences"
    print(
        f"replayed {result.requests_sent} request(s) on {result.connections} connection(s): "
        f"{summary}"
    )
    for reason, n in sorted(result.not_replayed_counts().items()):
        print(f"not replayed: {n} request(s), {reason}")
    sem = result.semantic_differences
    print(f"semantic differences {len(sem)}" + (f", first: {sem[0].summary}" if sem else ""))
    print(f"report: {result.paths['md']}")
    hits = sorted(k for k in kinds if k in fail_on)
    if sem and "semantic" in fail_on:
        hits.insert(0, "semantic")
    if hits:
        print(f"failing: differences of kind {', '.join(hits)}", file=sys.stderr)
        return 1
    return 0


def _run(cmd: str, rest: list[str]) -> int:
    if cmd == "decode":
        return decode_main(rest)
    if cmd == "py-files":
        return py_files_main(rest)
    if cmd == "replay":
        return replay_main(rest)
    from .comparing.compare import main_compare  # imported only when used

    return main_compare(rest)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: `decode ...`, `compare ...`, `replay ...` or `py-files ...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = (
        "usage: kipwire-capture decode INPUT... --out DIR [--engine auto|local|spark] "
        "[--name N] [--master URL | --remote sc://HOST:PORT] [--format KIND] [--pair REQ RESP] "
        "[--fail-on STATUSES]\n"
        "       kipwire-capture compare BASELINE_DIR CANDIDATE_DIR --out REPORT_DIR "
        "[--fail-on KINDS|semantic] [--rules FILE] [--clients-only]\n"
        "       kipwire-capture replay CAPTURE... --bootstrap HOST:PORT --out DIR "
        "[--pace original|max] [--client-id REGEX] [--fail-on KINDS]\n"
        "              [--security-protocol P] [--sasl-mechanism M] [--user NAME:PASSWORD] "
        "[--ca FILE] [--engine local|spark] [--master URL]\n"
        "       kipwire-capture py-files OUT.zip    (kipwire for spark-submit --py-files)"
    )
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd not in ("decode", "compare", "replay", "py-files"):
        print(f"unknown command {cmd!r}\n{usage}", file=sys.stderr)
        return 2
    try:
        return _run(cmd, rest)
    except _Usage as exc:
        print(f"kipwire-capture: {exc}", file=sys.stderr)
        return 2
    except _SparkFailed as exc:
        print(f"kipwire-capture: {exc}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _EXTRA_MODULES:
            raise
        print(
            f"kipwire-capture {cmd} needs the captures extra ({exc.name} is missing): {_EXTRA}",
            file=sys.stderr,
        )
        return 2
    except OSError as exc:
        print(f"kipwire-capture: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
