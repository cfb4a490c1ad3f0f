"""Which compared fields carry meaning: semantic, volatile or ignored, and the `--rules` file.

Every field the compare looks at is in one of three classes:

- `semantic`: what a user of the cluster would call a different outcome (APIs and versions,
  error codes, record counts and contents, topic and partition state, leaders, ISR/ELR, configs
  and every client setting in a request body);
- `volatile`: values that differ between any two runs (offsets, epochs, session, producer and
  correlation ids, timestamps, throttle times, ports): replaced by a placeholder before the
  bodies are compared (`comparing.normalise.VOLATILE` is the default table), so they align;
- `ignore`: left out of the comparison altogether.

A rule file changes the class of a field path. Paths are `Api.field.sub_field` (the API name as
the tables write it, list elements unnamed: `Fetch.topics.partitions.fetch_offset`), a bare field
name that matches it in any body (`throttle_time_ms`), or `semantic.KIND` for a kind of semantic
difference (`semantic.errors`); `*` and `?` are wildcards. The file is TOML (`.toml`) or JSON
(any other name), a table `fields` of path -> class:

    [fields]
    "Fetch.max_wait_ms" = "volatile"
    "producer_id" = "semantic"
    "semantic.error_count" = "ignore"
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = [
    "CLASSES",
    "COLUMNS",
    "IGNORE",
    "SEMANTIC",
    "VOLATILE_CLASS",
    "Rules",
    "RulesError",
    "load_rules",
]

SEMANTIC = "semantic"
VOLATILE_CLASS = "volatile"
IGNORE = "ignore"
CLASSES = (SEMANTIC, VOLATILE_CLASS, IGNORE)


#: Every column of the decoded tables the compare reads: its class and what the compare does.
#: Volatile columns order, pair or label rows; their values are never compared as outcomes
#: (`rtt_ms` and the decode statuses are reported as informational, `rtt` and `health`).
COLUMNS: dict[str, tuple[str, str]] = {
    "api_key": (SEMANTIC, "which API: requests align on it; an API one side never used is `api`"),
    "api_name": (SEMANTIC, "the API's name, as rule paths and reports name it"),
    "api_version": (SEMANTIC, "the version a client chose: `version`"),
    "client_id": (SEMANTIC, "connections align on it; a change is a `changed` difference"),
    "error_code": (SEMANTIC, "what the broker answered: `error_code`, `errors`"),
    "topics": (SEMANTIC, "the topics a request names: counts per topic"),
    "record_count": (SEMANTIC, "records in the body's batches"),
    "body_json": (SEMANTIC, "request fields and records, after the volatile fields are replaced"),
    "decode_status": (VOLATILE_CLASS, "decode health, informational (`health`)"),
    "status": (VOLATILE_CLASS, "answered or not: a request cut off at the capture's end"),
    "rtt_ms": (VOLATILE_CLASS, "response times, informational (`rtt`)"),
    "correlation_id": (VOLATILE_CLASS, "pairs a response with its request, never compared"),
    "ts": (VOLATILE_CLASS, "capture times: the timelines' axis, never compared"),
    "first_ts": (VOLATILE_CLASS, "orders connections of one client id"),
    "flow_uid": (VOLATILE_CLASS, "groups rows into connections"),
    "pdu_index": (VOLATILE_CLASS, "orders a connection's requests"),
    "direction": (VOLATILE_CLASS, "tells requests from responses"),
    "capture": (VOLATILE_CLASS, "the capture's label, shown in the report"),
    "length": (VOLATILE_CLASS, "bytes a gap missed, informational (`health`)"),
    "missed_bytes": (VOLATILE_CLASS, "bytes the capture missed, informational (`health`)"),
    "request_pdus": (VOLATILE_CLASS, "read, not compared: requests are counted by API"),
    "response_pdus": (VOLATILE_CLASS, "read, not compared: responses are counted by API"),
}


class RulesError(ValueError):
    """A rule file that cannot be read or says something the compare does not know."""


@dataclass(frozen=True)
class Rules:
    """Field path patterns and their classes, in the order the file gives them."""

    patterns: tuple[tuple[str, str], ...] = ()
    _cache: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def classify(self, path: str) -> str | None:
        """The class the rules give `path` (the last matching rule wins), or None."""
        hit = self._cache.get(path, "")
        if hit != "":
            return hit
        leaf = path.rsplit(".", 1)[-1]
        found = None
        for pattern, cls in self.patterns:
            target = path if "." in pattern else leaf
            if fnmatchcase(target, pattern):
                found = cls
        self._cache[path] = found
        return found

    def kind(self, kind: str) -> str:
        """The class of a kind of semantic difference (semantic unless a rule says otherwise)."""
        return self.classify(f"semantic.{kind}") or SEMANTIC


def load_rules(path: str | os.PathLike | None) -> Rules:
    """Read a rule file (TOML or JSON: `fields`, path -> class); `RulesError` when it is bad."""
    if path is None:
        return Rules()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(f"{p}: cannot read the rule file: {exc.strerror or exc}") from None
    try:
        if p.suffix == ".toml":
            import tomllib

            doc = tomllib.loads(text)
        else:
            doc = json.loads(text)
    except ValueError as exc:
        kind = "TOML" if p.suffix == ".toml" else "JSON"
        raise RulesError(f"{p}: not valid {kind}: {exc}") from None
    fields = doc.get("fields") if isinstance(doc, dict) else None
    if not isinstance(fields, dict):
        raise RulesError(f"{p}: expected a table `fields` of field path -> class")
    patterns = []
    for key, cls in fields.items():
        if cls not in CLASSES:
            raise RulesError(f"{p}: {key!r} has class {cls!r} (known: {', '.join(CLASSES)})")
        patterns.append((str(key), cls))
    return Rules(tuple(patterns))
