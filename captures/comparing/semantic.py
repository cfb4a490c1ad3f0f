"""Differences in meaning between two captures, in user terms, ranked: the report's headline.

`client_facts` reads what the clients saw from their own connections (never the cluster's
internal ones): records acknowledged per partition (those in a Produce whose partition answer
had no error) and readable (fetched by a client), told apart by digests of key and value; the
error codes in every answer; the APIs and versions each client used. `semantic_differences`
compares two captures' facts, their partition histories (`comparing.timeline`) and the field
differences found in requests, and ranks them by `SEMANTIC_KINDS`: lost acknowledged records
first, then elections, errors, acknowledged counts, record contents, partition state, APIs,
versions, request fields, error counts. Volatile fields never appear here; a rule file
(`comparing.rules`) moves fields and kinds in or out.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .diffs import error_codes
from .model import SEMANTIC_KINDS, Capture, Difference, Exchange, SemanticDifference
from .rules import IGNORE, SEMANTIC, VOLATILE_CLASS, Rules

__all__ = ["ClientFacts", "client_facts", "semantic_differences"]

Partition = tuple[str, int]
_NOT_REQUEST_FIELDS = ("response", "decode_status", "client_id")
_INDEX = re.compile(r"\[[^\]]*\]")  # a list element in a difference's path


@dataclass
class ClientFacts:
    """What the clients of one capture saw."""

    # (key digest, value digest) -> how many acknowledged: a workload may send equal records
    acked: dict[Partition, Counter] = field(default_factory=dict)
    ack_times: dict[Partition, list[int]] = field(default_factory=dict)
    # (offset, key digest, value digest): a record fetched again is the same record
    readable: dict[Partition, set[tuple[int | None, str, str]]] = field(default_factory=dict)
    errors: Counter = field(default_factory=Counter)  # (api, client id, code) -> answers
    error_times: dict[Partition, list[tuple[int, str]]] = field(default_factory=dict)
    apis: Counter = field(default_factory=Counter)  # (client id, api) -> requests
    versions: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    internal_clients: set[str] = field(default_factory=set)


def error_name(code: int) -> str:
    """Kafka's name for an error code, or the number when the code is unknown."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _topic(body: Mapping[str, Any], names: Mapping[str, str]) -> str | None:
    tid = body.get("topic_id")
    return body.get("name") or body.get("topic") or (names.get(tid, tid) if tid else None)


def _produce(facts: ClientFacts, e: Exchange, names: Mapping[str, str]) -> None:
    if not isinstance(e.request, Mapping) or e.request.get("acks") == 0:
        return
    answers: dict[Partition, int] = {}
    for t in (e.response or {}).get("responses") or ():
        for p in t.get("partition_responses") or ():
            answers[(_topic(t, names), p.get("index"))] = p.get("error_code", 0)
    for key, recs in (e.records or {}).items():
        code = answers.get(key)
        if code == ErrorCode.NONE:
            facts.acked.setdefault(key, Counter()).update((kh, vh) for _, kh, vh in recs)
            facts.ack_times.setdefault(key, []).extend([e.response_ts or 0] * len(recs))
        elif code is not None:
            facts.error_times.setdefault(key, []).append((e.response_ts or 0, error_name(code)))


def client_facts(cap: Capture) -> ClientFacts:
    """The facts of `cap`'s client connections (`Conn.internal` ones left out)."""
    facts = ClientFacts()
    names = cap.topic_names
    for conn in (*cap.conns, *cap.internal):
        if conn.internal:
            facts.internal_clients.add(conn.client_id)
            continue
        for e in conn.exchanges:
            api = e.api_name or str(e.api_key)
            facts.apis[(e.client_id or "", api)] += 1
            if e.api_version is not None:
                facts.versions.setdefault((e.client_id or "", api), set()).add(e.api_version)
            codes = set(error_codes(e.response).values()) if e.response is not None else set()
            if e.response_error:
                codes.add(e.response_error)
            for code in codes - {ErrorCode.NONE}:
                facts.errors[(api, e.client_id or "", code)] += 1
            if e.api_key == ApiKey.PRODUCE and e.response is not None:
                _produce(facts, e, names)
            elif e.api_key == ApiKey.FETCH and e.response is not None:
                for key, recs in (e.records or {}).items():
                    facts.readable.setdefault(key, set()).update(recs)
    return facts


def _subject(key: Partition) -> str:
    return f"{key[0]}-{key[1]}"


def _digest(recs: Counter) -> str:
    text = "\n".join(f"{k} {v}" for k, v in sorted(recs.elements()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _records(fa: ClientFacts, fb: ClientFacts, out: list[SemanticDifference]) -> None:
    for key in sorted(set(fa.acked) | set(fb.acked), key=repr):
        aa, ab = fa.acked.get(key, Counter()), fb.acked.get(key, Counter())
        na, nb = aa.total(), ab.total()
        subj = _subject(key)
        if key in fa.readable and key in fb.readable:
            ra = (aa & Counter((k, v) for _, k, v in fa.readable[key])).total()
            rb = (ab & Counter((k, v) for _, k, v in fb.readable[key])).total()
            if na - ra != nb - rb:
                out.append(
                    SemanticDifference(
                        "acknowledged_lost",
                        subj,
                        ra,
                        rb,
                        f"acknowledged records readable on {subj}: {ra:,} of {na:,} "
                        f"vs {rb:,} of {nb:,}",
                    )
                )
        if na != nb:
            out.append(
                SemanticDifference(
                    "acknowledged",
                    subj,
                    na,
                    nb,
                    f"records acknowledged on {subj}: {na:,} vs {nb:,}",
                )
            )
        elif aa != ab:
            out.append(
                SemanticDifference(
                    "records",
                    subj,
                    _digest(aa),
                    _digest(ab),
                    f"acknowledged records on {subj} differ in keys or values "
                    f"({(aa - ab).total():,} of {na:,})",
                )
            )


def _errors(fa: ClientFacts, fb: ClientFacts, out: list[SemanticDifference]) -> None:
    for key in sorted(set(fa.errors) | set(fb.errors), key=repr):
        api, client, code = key
        a, b = fa.errors.get(key, 0), fb.errors.get(key, 0)
        if a == b:
            continue
        kind = "errors" if not a or not b else "error_count"
        out.append(
            SemanticDifference(
                kind,
                f"{api} {client}".strip(),
                a,
                b,
                f"{api} errors {error_name(code)} {a:,} vs {b:,} (client {client or '-'})",
            )
        )


def _apis(fa: ClientFacts, fb: ClientFacts, out: list[SemanticDifference]) -> None:
    for key in sorted(set(fa.apis) | set(fb.apis)):
        client, api = key
        a, b = fa.apis.get(key, 0), fb.apis.get(key, 0)
        if not a or not b:
            out.append(
                SemanticDifference(
                    "api",
                    f"{api} {client}".strip(),
                    a,
                    b,
                    f"{api} requests by {client}: {a} vs {b}",
                )
            )
        elif fa.versions.get(key) != fb.versions.get(key):
            va = ",".join(map(str, sorted(fa.versions.get(key, ()))))
            vb = ",".join(map(str, sorted(fb.versions.get(key, ()))))
            out.append(
                SemanticDifference(
                    "version",
                    f"{api} {client}".strip(),
                    va,
                    vb,
                    f"{api} versions used by {client}: {va} vs {vb}",
                )
            )


_DESCRIBE = {"ELR": "from ELR", "clean": "from ISR", "unclean": "unclean"}


def _state_text(s: Mapping[str, Any]) -> str:
    return (
        f"leader {s['leader']} ISR {s['isr']} ELR {s['eligible_leader_replicas']} "
        f"LastKnownElr {s['last_known_elr']}"
    )


def _partitions(
    ha: Mapping[Partition, list[dict[str, Any]]],
    hb: Mapping[Partition, list[dict[str, Any]]],
    out: list[SemanticDifference],
) -> None:
    if not ha or not hb:
        return  # one side holds no controller traffic: nothing to compare it with
    for key in sorted(set(ha) | set(hb), key=repr):
        subj = _subject(key)
        sa, sb = ha.get(key, []), hb.get(key, [])
        ea = [s["election"] for s in sa if s.get("election") in _DESCRIBE]
        eb = [s["election"] for s in sb if s.get("election") in _DESCRIBE]
        if ea != eb:
            da = " then ".join(_DESCRIBE[e] for e in ea) or "never"
            db = " then ".join(_DESCRIBE[e] for e in eb) or "never"
            out.append(
                SemanticDifference(
                    "election",
                    subj,
                    ", ".join(ea),
                    ", ".join(eb),
                    f"leader elected {da} vs {db} on {subj}",
                )
            )
        ta = _changes(sa)
        tb = _changes(sb)
        if ta != tb:
            i = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y), None)
            if i is None:
                i = min(len(ta), len(tb))
            at = ta[i] if i < len(ta) else "no further change"
            bt = tb[i] if i < len(tb) else "no further change"
            out.append(
                SemanticDifference(
                    "partition_state",
                    subj,
                    at,
                    bt,
                    f"partition state of {subj}, change {i + 1}: {at} vs {bt}",
                )
            )


def _changes(states: list[dict[str, Any]]) -> list[str]:
    texts: list[str] = []
    for s in states:
        t = _state_text(s)
        if not texts or texts[-1] != t:
            texts.append(t)
    return texts


def _request_fields(
    diffs: list[Difference], internal: set[str], rules: Rules, out: list[SemanticDifference]
) -> None:
    grouped: dict[tuple, list[Difference]] = defaultdict(list)
    for d in diffs:
        if d.kind != "changed" or d.path in _NOT_REQUEST_FIELDS or d.client_id in internal:
            continue
        api = d.api_name or str(d.api_key)
        path = f"{api}.{_INDEX.sub('', d.path)}"
        if rules.classify(path) in (VOLATILE_CLASS, IGNORE):
            continue
        grouped[(path, str(d.baseline), str(d.candidate))].append(d)
    for (path, b, c), ds in grouped.items():
        clients = ",".join(sorted({d.client_id or "-" for d in ds}))
        n = sum(d.count for d in ds)
        out.append(
            SemanticDifference(
                "request",
                path,
                ds[0].baseline,
                ds[0].candidate,
                f"{path}: {b} vs {c} ({clients}, {n} time{'s' if n != 1 else ''})",
            )
        )


def _weight(d: SemanticDifference) -> float:
    try:
        return -abs(float(d.baseline) - float(d.candidate))
    except (TypeError, ValueError):
        return 0.0


def semantic_differences(
    base: Capture,
    cand: Capture,
    diffs: list[Difference],
    history: tuple[Mapping, Mapping],
    rules: Rules | None = None,
    facts: tuple[ClientFacts, ClientFacts] | None = None,
) -> list[SemanticDifference]:
    """The differences in meaning between `base` and `cand`, most important first."""
    rules = rules or Rules()
    fa, fb = facts or (client_facts(base), client_facts(cand))
    out: list[SemanticDifference] = []
    _records(fa, fb, out)
    _errors(fa, fb, out)
    _apis(fa, fb, out)
    _partitions(history[0], history[1], out)
    _request_fields(diffs, fa.internal_clients | fb.internal_clients, rules, out)
    kept = [d for d in out if rules.kind(d.kind) == SEMANTIC]
    order = {k: i for i, k in enumerate(SEMANTIC_KINDS)}
    return sorted(kept, key=lambda d: (order.get(d.kind, 99), _weight(d), d.subject))
