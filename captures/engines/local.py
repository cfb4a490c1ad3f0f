"""The in-process engine: the decode job's tables written with pyarrow, without starting Spark.

Same inputs, same rows, same layout as the Spark job (`spark_job`): each input is decoded
whole where it has its connections to itself; the files of a rotated set go through the Spark
job's own fragment decode (its fragments as objects, not Arrow batches), in one process. For
small inputs this beats Spark's start-up (tens of seconds) many times over; it runs on one core.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..reading.inputs import CaptureFile, expand_inputs, is_remote, local_path
from .fragment_decode import decode_file, decode_fragment_groups, fewer_collections
from .table_files import ParquetSink, finish_tables, prepare_tables, summary_of_sinks

__all__ = ["run_local"]


def run_local(
    inputs: Sequence[str],
    out: str | os.PathLike,
    *,
    capture: str,
    broker_ports: Iterable[int] = (),
    with_body_json: bool = True,
    fmt: str | None = None,
    pairs: Sequence[Sequence[str]] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Decode local inputs into Parquet tables under `out` in this process; a summary back."""
    say = progress or (lambda _msg: None)
    remote = [i for i in inputs if is_remote(i)]
    if remote:
        raise ValueError(f"the local engine reads local files only, not {remote[0]}")
    t0 = time.perf_counter()
    files = expand_inputs(inputs, fmt=fmt, pairs=pairs)
    root = os.path.abspath(local_path(os.fspath(out)))
    prepare_tables(root)
    sets: dict[int, list[CaptureFile]] = defaultdict(list)
    for f in files:
        sets[f.group].append(f)
    say(f"decoding {len(files)} input(s) as capture {capture!r} in this process")
    ports = tuple(broker_ports)
    whole = ParquetSink(root, "local")
    sinks = {whole.tag: whole}
    with fewer_collections():
        for n, members in enumerate(sets.values()):
            if len(members) == 1:
                decode_file(
                    members[0],
                    whole,
                    capture=capture,
                    broker_ports=ports,
                    with_body_json=with_body_json,
                )
                continue
            # a rotated set: its connections run across the files, in rotation order
            sink = sinks[f"set{n:05d}"] = ParquetSink(root, f"set{n:05d}")
            decode_fragment_groups(
                members,
                sink,
                capture=capture,
                broker_ports=ports,
                with_body_json=with_body_json,
            )
    whole.close()
    finish_tables(root)
    summary = summary_of_sinks(root, sinks)
    summary.update(
        capture=capture,
        out=os.fspath(out),
        engine="local",
        partitions=len(sets),
        startup_s=0.0,
        decode_s=time.perf_counter() - t0,
    )
    return summary
