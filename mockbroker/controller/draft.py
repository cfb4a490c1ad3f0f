"""A rule's working copy, and the helpers every rule shares to change a partition.

A `Draft` collects the records a rule writes, in order, and replays each into a copy-on-write
draft of the state (`state.DraftState`), so a rule's later steps see its earlier ones (a
controlled shutdown, then whether the broker still leads anything; unregister's ISR pass, then
its ELR pass). Nothing reaches the log until the Controller appends `Draft.result()`'s
records, so a rule that fails half-way writes nothing. Kafka's rules read the state as it was
before the request; the mock's rules read their own writes, as they did when they appended
to the log themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from .configs import min_insync_replicas, unclean_election_enabled
from .directories import default_dir
from .election import Election
from .elr import effective_min_isr
from .features import record_version
from .metadata_log import encode, latest_version
from .partition_change import Change, Rules, Target, build_change
from .result import ControllerResult, ControllerView, Record
from .state import ClusterState, PartitionState


class Draft:
    """The records a rule writes and the state they leave, for one request or timer."""

    def __init__(self, view: ControllerView) -> None:
        self.view = view
        self.settings = view.settings
        self.now_ms = view.now_ms
        # The view's state until the first record; then a draft of it that takes the replays.
        self.state: ClusterState = view.state
        self._records: list[Record] = []
        self._sessions: dict[int, int | None] = {}
        self._recoveries: list[tuple[UUID, int, str]] = []

    @property
    def next_offset(self) -> int:
        """The log offset the next record written here will take once appended."""
        return self.view.end_offset + len(self._records)

    def add(self, name: str, body: Any, version: int | None = None) -> None:
        """Write a record (a codec dict), at the version the metadata.version asks for."""
        if version is None:
            version = record_version(name, self.state.metadata_version, latest_version(name))
        record, data = encode(name, version, body)
        if self.state is self.view.state:
            self.state = self.view.state.draft()
        self.state.replay(name, record, self.next_offset)
        self._records.append(Record(name, version, record, data))

    def session(self, broker_id: int) -> int | None:
        """The broker's last heartbeat (ms) as this draft leaves it, or None."""
        if broker_id in self._sessions:
            return self._sessions[broker_id]
        return self.view.sessions.get(broker_id)

    def start_session(self, broker_id: int) -> None:
        """A heartbeat arrived now."""
        self._sessions[broker_id] = self.now_ms

    def end_session(self, broker_id: int) -> None:
        """Forget the broker's heartbeat session (fenced, registered anew or unregistered)."""
        self._sessions[broker_id] = None

    def start_recovery(self, p: PartitionState, strategy: str) -> None:
        """Ask the KIP's recovery manager to recover a leaderless partition (E.26)."""
        self._recoveries.append((p.topic_id, p.partition_id, strategy))

    def result(self, response: Any = None) -> ControllerResult:
        """What the rule hands the Controller: every record written, in order, and the answer."""
        return ControllerResult(
            tuple(self._records), response, dict(self._sessions), tuple(self._recoveries)
        )


def is_active(state: ClusterState, broker_id: int) -> bool:
    """Registered, unfenced and not in controlled shutdown (E.20's acceptable leader)."""
    b = state.brokers.get(broker_id)
    return b is not None and b.active


def min_isr(state: ClusterState, topic: str) -> int:
    """D.13's effective min ISR of a topic."""
    t = state.topic(topic)
    replicas = len(t.partitions[0].replicas) if t is not None and 0 in t.partitions else 1
    return effective_min_isr(min_insync_replicas(state, topic), replicas)


def election_mode(state: ClusterState, topic: str) -> Election:
    """D.17: UNCLEAN if the topic allows unclean elections, else ONLINE."""
    return Election.UNCLEAN if unclean_election_enabled(state, topic) else Election.ONLINE


def builder_rules(
    draft: Draft, topic: str, acceptable: Callable[[int], bool] | None = None
) -> Rules:
    """The builder's inputs for a topic; `acceptable` defaults to `is_active` on the draft."""
    return Rules(
        acceptable=acceptable or (lambda b: is_active(draft.state, b)),
        min_isr=min_isr(draft.state, topic),
        elr_enabled=draft.state.elr_enabled,
        metadata_version=draft.state.metadata_version,
        semantics=draft.settings.semantics,
        default_dir=lambda b: default_dir(draft.state, b),
    )


def change_partition(
    draft: Draft,
    p: PartitionState,
    target: Target,
    acceptable: Callable[[int], bool] | None = None,
) -> Change:
    """Build a partition change (D.12) and write its record, if any."""
    change = build_change(p, target, builder_rules(draft, p.topic, acceptable))
    if change.record is not None:
        draft.add("PartitionChangeRecord", change.record)
    return change
