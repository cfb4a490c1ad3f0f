"""The data model of a capture comparison: what `compare` loads and what it reports.

`Capture` is one decoded capture's tables with its client connections (`Conn`), each a list of
requests with their responses (`Exchange`); `Difference` is one grouped finding, classified by
the kinds in `FUNCTIONAL_KINDS` and `INFORMATIONAL_KINDS`; `SemanticDifference` is one difference
in what the story meant, in user terms (`SEMANTIC_KINDS`, most important first), and `Report` is
all of them with the count, record, RTT and health tables. Plain dataclasses: the loading is
in `comparing.load`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "FUNCTIONAL_KINDS",
    "INFORMATIONAL_KINDS",
    "Capture",
    "Conn",
    "Difference",
    "Exchange",
    "Report",
    "SEMANTIC_KINDS",
    "SemanticDifference",
]

FUNCTIONAL_KINDS = (
    "added",
    "removed",
    "changed",
    "version",
    "error_code",
    "records",
    "count",
    "metadata",
)
INFORMATIONAL_KINDS = ("health", "rtt")
#: Kinds of semantic difference, most important first: the order the headline ranks them in.
SEMANTIC_KINDS = (
    "acknowledged_lost",  # acknowledged records no client could read back
    "election",  # how a leader was elected: clean, from ELR, unclean
    "errors",  # an error code clients saw on one side only
    "acknowledged",  # how many records the cluster acknowledged
    "records",  # the contents of acknowledged records
    "partition_state",  # the leader, ISR, ELR and LastKnownElr history of a partition
    "api",  # an API a client used on one side only
    "version",  # the API versions a client used
    "request",  # a request field that is not volatile (client settings, configs, records)
    "error_count",  # how often clients saw an error both sides saw
)


@dataclass(frozen=True, slots=True)
class SemanticDifference:
    """A difference in meaning: its kind, what it is about, both values, one line for people."""

    kind: str
    subject: str
    baseline: Any
    candidate: Any
    summary: str


@dataclass(slots=True)
class Difference:
    """One grouped difference between the captures (a `diff.json` entry)."""

    kind: str
    functional: bool
    api_key: int | None = None
    api_name: str | None = None
    client_id: str | None = None
    baseline_version: int | None = None
    candidate_version: int | None = None
    path: str = ""
    baseline: Any = None
    candidate: Any = None
    count: int = 1


@dataclass(slots=True)
class Exchange:
    """One request on a connection, with its response when there was one."""

    flow: str
    index: int
    api_key: int
    api_name: str | None
    api_version: int | None
    client_id: str | None
    status: str  # request decode status
    request: Any  # parsed body_json or None
    response: Any
    response_status: str | None  # response decode status, None when unanswered
    response_error: int | None
    topics: tuple[str, ...]
    norm: Any = None
    token: tuple[int, str] = (0, "")
    ts: int | None = None  # request capture time, microseconds
    response_ts: int | None = None
    # (topic, partition) -> (offset, key digest, value digest) of the records a Produce request
    # or a Fetch response carries; None for other APIs
    records: dict[tuple[str, int | None], list[tuple[int | None, str, str]]] | None = None


@dataclass(slots=True)
class Conn:
    """A client connection's exchanges in order."""

    flow: str
    client_id: str
    first_ts: int
    rank: int
    exchanges: list[Exchange] = field(default_factory=list)
    internal: bool = False  # the cluster's own traffic: controller, replication, metadata

    @property
    def tokens(self) -> list[tuple[int, str]]:
        """(api key, normalised request digest) per request: what alignment compares."""
        return [e.token for e in self.exchanges]


@dataclass(slots=True)
class Capture:
    """One decoded capture, loaded from its three tables."""

    path: str
    labels: list[str]
    pdus: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    connections: list[dict[str, Any]]
    conns: list[Conn] = field(default_factory=list)
    topic_names: dict[str, str] = field(default_factory=dict)
    records: dict[tuple[str, str, int | None], list[tuple[int | None, str, str]]] = field(
        default_factory=dict
    )
    # the cluster's own connections, set apart from `conns` by `--clients-only`
    internal: list[Conn] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The capture names in the tables, or the directory's name."""
        return ",".join(self.labels) if self.labels else Path(self.path).name


@dataclass(slots=True)
class Report:
    """Everything `compare` found; `differences` is what `diff.json` lists."""

    baseline: dict[str, Any]
    candidate: dict[str, Any]
    differences: list[Difference]
    counts: list[dict[str, Any]]
    records: list[dict[str, Any]]
    rtt: list[dict[str, Any]]
    health: list[dict[str, Any]]
    alignment: dict[str, Any]
    rtt_samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    mix: list[dict[str, Any]] = field(default_factory=list)  # requests per API, not per topic
    # partition records each controller wrote (captures.decoding.metadata_records), per side
    metadata: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # non-zero error codes per (API, client, code), both sides
    client_errors: list[dict[str, Any]] = field(default_factory=list)
    # the ranked headline: differences in meaning (comparing.semantic)
    semantic_differences: list[SemanticDifference] = field(default_factory=list)
    # per partition, each side's state and client events over time (comparing.timeline)
    timelines: list[dict[str, Any]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def functional(self) -> list[Difference]:
        """The differences that change behaviour (not health or RTT)."""
        return [d for d in self.differences if d.functional]

    def kinds(self) -> Counter:
        """Number of difference entries per kind."""
        return Counter(d.kind for d in self.differences)

    def to_json(self) -> dict[str, Any]:
        """The `diff.json` document."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "summary": dict(sorted(self.kinds().items())),
            "alignment": self.alignment,
            "options": self.options,
            "semantic_differences": [asdict(d) for d in self.semantic_differences],
            "differences": [asdict(d) for d in self.differences],
        }
