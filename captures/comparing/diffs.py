"""Field-path differences between two bodies and the collector that groups them.

`diff_values()` lists the leaves that differ between two (normalised) bodies, lists of structs
compared element by element by their id key; `error_codes()` finds every `error_code` in a
response body by the same paths; `DiffCollector` groups equal `Difference`s (same kind, API,
client, versions, path, values) with a count and sorts them for the report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .model import FUNCTIONAL_KINDS, INFORMATIONAL_KINDS, Difference

__all__ = ["DiffCollector", "diff_values", "error_codes"]

# keys that identify an element of a list of structs, in preference order (for keyed diffs)
_ID_KEYS = (
    "name",
    "topic",
    "topic_name",
    "topic_id",
    "partition_index",
    "partition",
    "index",
    "api_key",
    "node_id",
    "broker_id",
)
_VALUE_TEXT_LIMIT = 300


def _short(v: Any) -> Any:
    if isinstance(v, (dict, list)):
        text = json.dumps(v, sort_keys=True, separators=(",", ":"))
        return text if len(text) <= _VALUE_TEXT_LIMIT else text[: _VALUE_TEXT_LIMIT - 3] + "..."
    return v


_ABSENT = "<absent>"


def _id_key(a: list, b: list) -> str | None:
    items = a + b
    if not items or not all(isinstance(x, Mapping) for x in items):
        return None
    for k in _ID_KEYS:
        if (
            all(k in x and isinstance(x[k], (str, int)) for x in items)
            and len({x[k] for x in a}) == len(a)
            and len({x[k] for x in b}) == len(b)
        ):
            return k
    return None


def diff_values(a: Any, b: Any, path: str = "", *, common_only: bool = False) -> list[tuple]:
    """(path, baseline, candidate) for every leaf that differs; lists of structs by their id."""
    out: list[tuple] = []
    _diff(a, b, path, common_only, out)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _diff(a: Any, b: Any, path: str, common: bool, out: list) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in list(a) + [k for k in b if k not in a]:
            if k in a and k in b:
                _diff(a[k], b[k], _join(path, k), common, out)
            elif not common:
                out.append((_join(path, k), _short(a.get(k, _ABSENT)), _short(b.get(k, _ABSENT))))
        return
    if isinstance(a, list) and isinstance(b, list):
        key = _id_key(a, b)
        if key is not None:
            am = {x[key]: x for x in a}
            bm = {x[key]: x for x in b}
            for k in list(am) + [k for k in bm if k not in am]:
                p = f"{path}[{k}]"
                if k in am and k in bm:
                    _diff(am[k], bm[k], p, common, out)
                else:
                    out.append((p, _short(am.get(k, _ABSENT)), _short(bm.get(k, _ABSENT))))
            return
        for i in range(max(len(a), len(b))):
            p = f"{path}[#{i}]"
            if i < len(a) and i < len(b):
                _diff(a[i], b[i], p, common, out)
            else:
                left = a[i] if i < len(a) else _ABSENT
                right = b[i] if i < len(b) else _ABSENT
                out.append((p, _short(left), _short(right)))
        return
    if a != b or type(a) is not type(b):
        out.append((path, _short(a), _short(b)))


def error_codes(body: Any, path: str = "", out: dict | None = None) -> dict[str, int]:
    """path -> error code of every `error_code` field in a response body."""
    out = {} if out is None else out
    if isinstance(body, Mapping):
        for k, v in body.items():
            p = _join(path, k)
            if k == "error_code" and isinstance(v, int):
                out[p] = v
            elif isinstance(v, (Mapping, list)):
                error_codes(v, p, out)
    elif isinstance(body, list):
        key = _id_key(body, [])
        for i, x in enumerate(body):
            seg = f"[{x[key]}]" if key else f"[#{i}]"
            error_codes(x, path + seg, out)
    return out


class DiffCollector:
    """Groups equal differences and counts them."""

    def __init__(self) -> None:
        self.groups: dict[tuple, Difference] = {}

    def add(self, kind: str, *, count: int = 1, **kw: Any) -> None:
        """Count one difference (or `count` of them) into the group of its equals."""
        d = Difference(kind=kind, functional=kind in FUNCTIONAL_KINDS, **kw)
        key = (
            d.kind,
            d.api_key,
            d.api_name,
            d.client_id,
            d.baseline_version,
            d.candidate_version,
            d.path,
            json.dumps(d.baseline, sort_keys=True, default=str),
            json.dumps(d.candidate, sort_keys=True, default=str),
        )
        hit = self.groups.get(key)
        if hit is None:
            d.count = count
            self.groups[key] = d
        else:
            hit.count += count

    def result(self) -> list[Difference]:
        """The groups in a stable order: by kind (functional ones first), API, client, path."""
        order = {k: i for i, k in enumerate(FUNCTIONAL_KINDS + INFORMATIONAL_KINDS)}
        return sorted(
            self.groups.values(),
            key=lambda d: (
                order.get(d.kind, 99),
                d.api_key if d.api_key is not None else -1,
                d.api_name or "",
                d.client_id or "",
                d.path,
            ),
        )
