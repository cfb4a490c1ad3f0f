"""`replay`: a capture's client traffic sent again to any cluster, and compared.

The steps, one module each: `extract` (client connections and their requests out of the
captures), `rules` (what a client learns anew: producer ids, member ids, topic ids, fetch
sessions), `routing` (which target broker), `causality` (no request before what it may depend
on), `sender` (the connections, again, recorded to `DIR/replay.pcapng`) and `result` (both sides
decoded and compared: `DIR/report.md`, `report.html`, `diff.json`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import trio

from kipwire.captures.pcap import PcapngWriter
from kipwire.client import split_address

from .auth import AuthError, Credentials
from .causality import Causality
from .extract import Extracted, extract
from .result import ReplayResult, compare_replay, write_original
from .routing import Target, original_brokers
from .rules import Learned, learn_topic_ids
from .sender import ReplayRun, Sender

__all__ = ["ENGINES", "PACES", "ReplayError", "replay"]

PACES = ("max", "original")
ENGINES = ("local", "spark")


class ReplayError(ValueError):
    """Bad input to a replay (no capture, a bad address, an unknown pace): one line."""


def _bootstrap(text: str) -> list[tuple[str, int]]:
    try:
        return [split_address(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise ReplayError(f"--bootstrap: {exc}") from None


def _learn_original_topics(found: Extracted, learned: Learned) -> None:
    for conn in found.connections:
        for ex in conn.exchanges:
            body = ex.decoded_response()
            if body is not None:
                learn_topic_ids(body, learned.original_topics, by_name=False)


async def _run(
    found: Extracted,
    bootstrap: list[tuple[str, int]],
    replayed: Path,
    *,
    pace: str,
    timeout: float,
    creds: Credentials,
    progress: Callable[[str], None] | None,
) -> ReplayRun:
    learned = Learned()
    _learn_original_topics(found, learned)
    target = Target(bootstrap, learned, timeout, creds)
    total = sum(len(c.exchanges) for c in found.connections)
    step = max(total // 10, 1)

    def tick(sent: int) -> None:
        if progress is not None and sent % step == 0:
            progress(f"replayed {sent} of {total} requests")

    causality = Causality(
        ((c.uid, ex.index), ex.ts_ns, ex.response_ts_ns)
        for c in found.connections
        for ex in c.exchanges
    )
    with PcapngWriter(replayed) as writer:
        try:
            await target.start()
        except OSError as exc:
            raise ReplayError(f"--bootstrap: {exc}") from None
        except AuthError as exc:
            raise ReplayError(f"the target refused the credentials: {exc}") from None
        if progress is not None:
            progress(
                f"replaying {len(found.connections)} client connection(s) ({total} requests); "
                f"{sum(r.requests for r in found.not_replayed)} request(s) not replayable"
            )
        try:
            sender = Sender(
                target,
                learned,
                causality,
                writer,
                pace=pace,
                original_nodes=original_brokers(found.connections),
                timeout=timeout,
                progress=tick,
            )
            return await sender.replay(found.connections)
        finally:
            await target.aclose()


def replay(
    captures: Sequence[str | os.PathLike],
    *,
    bootstrap: str,
    out: str | os.PathLike,
    pace: str = "max",
    client_id: str | None = None,
    timeout: float = 30.0,
    progress: Callable[[str], None] | None = None,
    security_protocol: str = "PLAINTEXT",
    sasl_mechanism: str | None = None,
    user: str | None = None,
    ca: str | None = None,
    engine: str = "local",
    master: str | None = None,
) -> ReplayResult:
    """Send the captures' client requests again to the cluster at `bootstrap` and compare its
    answers with the captured ones; writes `out`/replay.pcapng and the report.

    `pace`: "max" (as fast as the target answers, causality kept) or "original" (no request
    before its captured time offset); `client_id`: a regular expression the connections' client
    id must match. `security_protocol`, `sasl_mechanism`, `user` ("NAME:PASSWORD") and `ca` are
    the target's own (`auth`): captured SASL exchanges are not sent again. Raises `ReplayError` on
    bad input, an unreachable target or refused credentials. `engine="spark"` reads the captures
    and cuts their connections into requests in Spark tasks (`master`, default local[*]); the
    sending stays in this process.
    """
    if pace not in PACES:
        raise ReplayError(f"--pace must be one of {', '.join(PACES)}, not {pace!r}")
    if not captures:
        raise ReplayError("no capture to replay")
    if engine not in ENGINES:
        raise ReplayError(f"--engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    missing = [os.fspath(c) for c in captures if not os.path.exists(c)]
    if missing:
        raise ReplayError(f"{missing[0]}: no such file or folder")
    try:
        creds = Credentials.parse(security_protocol, sasl_mechanism, user, ca)
    except ValueError as exc:
        raise ReplayError(str(exc)) from None
    addresses = _bootstrap(bootstrap)
    if not addresses:
        raise ReplayError("--bootstrap names no broker")
    say = progress or (lambda _msg: None)
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    if engine == "spark":
        from ..engines.spark_session import session
        from .spark_extract import extract_on_spark

        say(f"reading and cutting the captures on Spark ({master or 'local[*]'})")
        spark = session(master or "local[*]", app="kipwire-replay")
        paths = [os.fspath(c) for c in captures]
        found = extract_on_spark(spark, paths, client_id=client_id, sasl=creds.sasl)
    else:
        found = extract(captures, client_id=client_id, sasl=creds.sasl)
    original, replayed = root / "original.pcapng", root / "replay.pcapng"
    run = trio.run(
        lambda: _run(
            found,
            addresses,
            replayed,
            pace=pace,
            timeout=timeout,
            creds=creds,
            progress=progress,
        )
    )
    say(f"sent {run.sent} request(s) in {run.seconds:.2f} s; comparing")
    write_original(found.connections, original, run.unsent)
    not_replayed = found.not_replayed + run.not_replayed
    report, paths = compare_replay(root, original, replayed, not_replayed)
    return ReplayResult(
        out=root,
        report=report,
        connections=len(found.connections),
        requests_sent=run.sent,
        requests_answered=run.answered,
        retried=run.retried,
        seconds=run.seconds,
        not_replayed=not_replayed,
        paths={**paths, "original": original, "replay": replayed},
    )
