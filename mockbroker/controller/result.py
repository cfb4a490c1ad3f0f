"""What the Controller hands a rule (a read-only view) and what a rule hands back: the records to
append and the response (Kafka's ControllerResult). Rules never append; the Controller does."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple
from uuid import UUID

from .semantics import Semantics
from .state import ClusterState

_NO_SESSIONS: Mapping[int, int | None] = MappingProxyType({})


class Record(NamedTuple):
    """One metadata record to append: name, version, the record as the codec decodes it, and
    its framed bytes (None until someone asks for them)."""

    name: str
    version: int
    record: Any
    data: bytes | None


class ControllerResult(NamedTuple):
    """A rule's outcome: records for the Controller to append and replay in order, and the
    response body (None for rules that answer no request).

    Besides the log, a rule may change what the Controller keeps in memory only, as Kafka's
    BrokerHeartbeatManager does: heartbeat sessions started (at a time in ms) or ended (None),
    and the KIP's unclean recoveries to start (topic id, partition, strategy).
    """

    records: tuple[Record, ...] = ()
    response: Any = None
    sessions: Mapping[int, int | None] = _NO_SESSIONS
    recoveries: tuple[tuple[UUID, int, str], ...] = ()


class Settings(NamedTuple):
    """The controller's settings that rules read."""

    semantics: Semantics
    cluster_id: str
    session_timeout_ms: int
    default_partitions: int
    default_replication_factor: int
    #: delegation.token.secret.key; None: delegation tokens are disabled.
    delegation_token_secret: bytes | None = None
    #: Added to the controller's clock for wall-clock timestamps (delegation tokens).
    wall_clock_offset_ms: int = 0
    #: The cluster-level configs the cluster started with (Kafka's static broker configs).
    static_configs: Mapping[str, str] = MappingProxyType({})


class ControllerView(NamedTuple):
    """What a rule may read: the replayed state, the settings, the clock, the offset the next
    record takes, and the live heartbeat sessions (broker id -> last heartbeat ms)."""

    state: ClusterState
    settings: Settings
    now_ms: int
    end_offset: int
    sessions: Mapping[int, int]
