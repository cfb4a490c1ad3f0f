"""Topic names for rows that name topics by id alone (Fetch v13+), from the same capture.

Metadata responses v10+ carry each topic's name and id: their rows hold `topics` and
`topic_ids` in the same order. Any row of the capture with ids but no names (a Fetch request or
response v13+) then gets the names those ids had. Run over the written `pdus` table, after every
task has written its part: the Metadata exchange is usually on another connection than the
Fetch, often in another task.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["name_topic_ids", "resolve_topic_ids", "topic_id_map"]


def topic_id_map(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """topic id -> name, from rows that hold both lists in step (Metadata responses)."""
    names: dict[str, str] = {}
    for r in rows:
        topics, ids = r.get("topics"), r.get("topic_ids")
        if topics and ids and len(topics) == len(ids):
            names.update(zip(ids, topics, strict=True))
    return names


def name_topic_ids(rows: Iterable[dict[str, Any]], names: Mapping[str, str]) -> int:
    """Fill `topics` of rows that have only ids, in place; how many rows got names."""
    n = 0
    for r in rows:
        ids = r.get("topic_ids")
        if ids and not r.get("topics"):
            found = [names[i] for i in ids if i in names]
            if found:
                r["topics"] = found
                n += 1
    return n


def resolve_topic_ids(pdus_dir: str | os.PathLike) -> int:
    """Name topic ids throughout a written `pdus` table folder; rows named."""
    files = sorted(p for p in Path(pdus_dir).glob("*.parquet") if not p.name.startswith("."))
    cols = ["topics", "topic_ids"]
    names: dict[str, str] = {}
    pending = []
    for f in files:
        # ParquetFile, not read_table: that goes through pyarrow.dataset, which imports pandas
        t = pq.ParquetFile(f).read(columns=cols)
        has_ids = pc.invert(pc.is_null(t["topic_ids"]))
        both = pc.and_(has_ids, pc.invert(pc.is_null(t["topics"])))
        names.update(topic_id_map(t.filter(both).to_pylist()))
        if pc.any(pc.and_(has_ids, pc.is_null(t["topics"]))).as_py():
            pending.append(f)
    total = 0
    for f in pending if names else ():
        table = pq.ParquetFile(f).read()
        rows = table.select(cols).to_pylist()
        n = name_topic_ids(rows, names)
        if not n:
            continue
        topics = pa.array([r["topics"] for r in rows], type=table.schema.field("topics").type)
        table = table.set_column(table.schema.get_field_index("topics"), "topics", topics)
        tmp = f.with_name(f".tmp-{f.name}")
        pq.write_table(table, tmp)
        os.replace(tmp, f)
        total += n
    return total
