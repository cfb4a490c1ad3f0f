"""The Controller: a sans-I/O KRaft controller whose whole state is the replay of its log.

Rules (brokers.py, topics.py, alter_partition.py, ...) read a `ControllerView` and return a
`ControllerResult` of records and a response; only the Controller appends those records to
the log and replays them into the state, as Kafka's QuorumController does.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kipwire.codec import ApiKey, decode_record

from . import apis, brokers, draft, elect_leaders
from .election import Election
from .features import LATEST_METADATA_VERSION, record_version
from .metadata_log import LogEntry, encode, latest_version
from .metrics import Metrics
from .recovery import Recovery
from .result import ControllerResult, ControllerView, Settings
from .semantics import Semantics
from .state import BrokerState, ClusterState, PartitionState


class Controller:
    """A mock KRaft controller: requests and records in; responses, records, requests out.

    Every change is a metadata record appended to `log` and replayed into `state`, so the state
    is always the replay of the log from empty.
    """

    def __init__(
        self,
        semantics: Semantics = Semantics.KAFKA_4_4,
        cluster_id: str = "kipwire",
        *,
        session_timeout_ms: int = 9000,
        default_partitions: int = 1,
        default_replication_factor: int = 1,
        delegation_token_secret: bytes | None = None,
        wall_clock_offset_ms: int = 0,
    ) -> None:
        self.semantics = semantics
        self.delegation_token_secret = delegation_token_secret
        self.wall_clock_offset_ms = wall_clock_offset_ms
        self.cluster_id = cluster_id
        # set by the cluster: what describe reports as static broker configs
        self.static_configs: dict[str, str] = {}
        self.session_timeout_ms = session_timeout_ms
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.state = ClusterState(LATEST_METADATA_VERSION[semantics.release])
        self.log: list[LogEntry] = []
        self.now_ms = 0
        # Live heartbeat sessions, as Kafka's BrokerHeartbeatManager keeps them: not replayed.
        self.sessions: dict[int, int] = {}
        self.counters = Metrics(semantics.elr_election_metric)
        self.recovery = Recovery(semantics.unclean_recovery)

    def view(self) -> ControllerView:
        """What the rules read: the state, the settings, the clock, the log's end, sessions."""
        settings = Settings(
            self.semantics,
            self.cluster_id,
            self.session_timeout_ms,
            self.default_partitions,
            self.default_replication_factor,
            self.delegation_token_secret,
            self.wall_clock_offset_ms,
            MappingProxyType(self.static_configs),
        )
        sessions = MappingProxyType(self.sessions)
        return ControllerView(self.state, settings, self.now_ms, len(self.log), sessions)

    # -- the log ------------------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        """The offset the next record will take."""
        return len(self.log)

    def append(self, name: str, body: Mapping[str, Any], version: int | None = None) -> LogEntry:
        """Append a metadata record (a codec dict or Container) and replay it into the state;
        the version follows the metadata.version unless given."""
        if version is None:
            version = record_version(name, self.state.metadata_version, latest_version(name))
        record, data = encode(name, version, body)
        return self._append_entry(LogEntry(len(self.log), name, version, record, data))

    def replay(self, name: str, body: Mapping[str, Any], version: int | None = None) -> LogEntry:
        """The old name of `append` (it appends, then replays), kept for existing callers."""
        return self.append(name, body, version)

    def append_bytes(self, data: bytes) -> LogEntry:
        """Append one framed metadata record, as `records_since` hands them out, and replay it."""
        name, version, record = decode_record(data)
        return self._append_entry(LogEntry(len(self.log), name, version, record, bytes(data)))

    def replay_bytes(self, data: bytes) -> LogEntry:
        """The old name of `append_bytes`, kept for existing callers."""
        return self.append_bytes(data)

    def _append_entry(self, entry: LogEntry) -> LogEntry:
        # Replayed before it joins the log: a record that cannot apply is never logged.
        self.counters.observe(self.state, entry)
        self.state.replay(entry.name, entry.record, entry.offset)
        self.log.append(entry)
        return entry

    def _commit(self, result: ControllerResult) -> list[LogEntry]:
        """Append a rule's records in order and take its in-memory changes."""
        entries = [
            self._append_entry(LogEntry(len(self.log), r.name, r.version, r.record, r.data))
            for r in result.records
        ]
        for broker_id, last in result.sessions.items():
            if last is None:
                self.sessions.pop(broker_id, None)
            else:
                self.sessions[broker_id] = last
        if result.recoveries:
            self.recovery.start_requested(self.view(), result.recoveries)
        return entries

    def records_since(self, offset: int) -> list[LogEntry]:
        """Log entries from `offset` on; `.data` is the framed record a broker fetches."""
        return self.log[max(offset, 0) :]

    # -- requests -----------------------------------------------------------------------------

    def handle(self, api_key: int, api_version: int, body: Mapping[str, Any] | None) -> Any:
        """Serve one request body, decoded as `kipwire.codec.decode_request` gives it; answer
        the response body for the node to encode (protocol errors, never exceptions)."""
        result = apis.handle(self.view(), api_key, api_version, body)
        self._commit(result)
        if self.recovery.enabled:
            self.recovery.scan(self.view())
        return result.response

    def outbox(self) -> list[tuple[int, int, int, dict]]:
        """Requests the controller wants sent: (broker_id, api_key, api_version, body); drained."""
        return self.recovery.drain_outbox()

    def deliver(self, broker_id: int, api_key: int, api_version: int, body: Any) -> None:
        """Feed back the response a broker gave to a request from `outbox()`."""
        if api_key != ApiKey.GET_REPLICA_LOG_INFO or api_version != 0:
            return
        body = apis.decode_at_node_boundary("GetReplicaLogInfoResponse", api_version, body)
        self._commit(self.recovery.deliver(self.view(), broker_id, body))

    # -- faults and time ----------------------------------------------------------------------

    def fence(self, broker_id: int) -> list[LogEntry]:
        """Fence a broker as a missed session timeout does (D.17); return the records written."""
        entries = self._commit(brokers.fence(self.view(), broker_id))
        if self.recovery.enabled:
            self.recovery.scan(self.view())
        return entries

    def stalled(self, ms: int) -> None:
        """The controller could not run for `ms` (its event loop was busy elsewhere): no
        broker's heartbeat session runs out for that time, as no heartbeat could be heard."""
        for broker_id in self.sessions:
            self.sessions[broker_id] += ms

    def tick(self, now_ms: int) -> list[LogEntry]:
        """Advance time: session timeouts, periodic unclean elections, recovery deadlines."""
        start = self.end_offset
        self.now_ms = max(self.now_ms, now_ms)
        self._commit(brokers.expire_sessions(self.view()))
        self._commit(elect_leaders.elect_unclean_leaders(self.view()))
        if self.recovery.enabled:
            self._commit(self.recovery.tick(self.view()))
            self.recovery.scan(self.view())
        return self.log[start:]

    # -- reading the state ------------------------------------------------------------------------

    def partition(self, topic: str, partition: int) -> PartitionState:
        """The state of one partition; KeyError if there is no such partition."""
        t = self.state.topic(topic)
        if t is None or partition not in t.partitions:
            raise KeyError(f"no partition {topic}-{partition}")
        return t.partitions[partition]

    def broker(self, broker_id: int) -> BrokerState:
        """The registration of one broker; KeyError if it is not registered."""
        try:
            return self.state.brokers[broker_id]
        except KeyError:
            raise KeyError(f"broker {broker_id} is not registered") from None

    def metrics(self) -> dict[str, Any]:
        """KIP-966's controller metrics as a dict."""
        return self.counters.report(self.state, self.recovery)

    def is_active(self, broker_id: int) -> bool:
        """Registered, unfenced and not in controlled shutdown (E.20's acceptable leader)."""
        return draft.is_active(self.state, broker_id)

    def min_isr(self, topic: str) -> int:
        """D.13's effective min ISR of a topic."""
        return draft.min_isr(self.state, topic)

    def election_mode(self, topic: str) -> Election:
        """D.17: UNCLEAN if the topic allows unclean elections, else ONLINE."""
        return draft.election_mode(self.state, topic)
