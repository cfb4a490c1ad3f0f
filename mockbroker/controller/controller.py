"""The Controller: a sans-I/O KRaft controller whose whole state is the replay of its log."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kipwire.codec import decode_record

from . import apis, brokers, configs, elect_leaders
from .election import Election
from .elr import effective_min_isr
from .features import record_version
from .metadata_log import LogEntry, frame, latest_version
from .metrics import Metrics
from .partition_change import Change, Rules, Target, build_change
from .recovery import Recovery
from .semantics import Semantics
from .state import BrokerState, ClusterState, PartitionState


class Controller:
    """A mock KRaft controller: requests and records in; responses, records, requests out.

    Every change is a metadata record appended to `log` and replayed into `state`, so the state
    is always the replay of the log from empty.
    """

    def __init__(
        self,
        semantics: Semantics = Semantics.KAFKA_4_1,
        cluster_id: str = "kipwire",
        *,
        session_timeout_ms: int = 9000,
        default_partitions: int = 1,
        default_replication_factor: int = 1,
    ) -> None:
        self.semantics = semantics
        self.cluster_id = cluster_id
        self.session_timeout_ms = session_timeout_ms
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.state = ClusterState()
        self.log: list[LogEntry] = []
        self.now_ms = 0
        # Live heartbeat sessions, as Kafka's BrokerHeartbeatManager keeps them: not replayed.
        self.sessions: dict[int, int] = {}
        self.counters = Metrics(semantics.elr_election_metric)
        self.recovery = Recovery(self)

    # -- the log ------------------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        """The offset the next record will take."""
        return len(self.log)

    def replay(self, name: str, body: Mapping[str, Any], version: int | None = None) -> LogEntry:
        """Append a metadata record (a codec dict or Container) and apply it, as from a snapshot."""
        return self.append(name, body, version)

    def replay_bytes(self, data: bytes) -> LogEntry:
        """Append and apply one framed metadata record, as `records_since` hands them out."""
        name, version, record = decode_record(data)
        return self._commit(LogEntry(len(self.log), name, version, record, bytes(data)))

    def append(self, name: str, body: Mapping[str, Any], version: int | None = None) -> LogEntry:
        """Encode a record with the codec, append it and replay it into the state."""
        if version is None:
            version = record_version(name, self.state.metadata_version, latest_version(name))
        return self._commit(frame(len(self.log), name, version, body))

    def _commit(self, entry: LogEntry) -> LogEntry:
        self.counters.observe(self.state, entry)
        self.state.apply(entry.name, entry.record, entry.offset)
        self.log.append(entry)
        return entry

    def records_since(self, offset: int) -> list[LogEntry]:
        """Log entries from `offset` on; `.data` is the framed record a broker fetches."""
        return self.log[max(offset, 0) :]

    # -- requests -----------------------------------------------------------------------------

    def handle(self, api_key: int, api_version: int, body: Mapping[str, Any] | None) -> Any:
        """Serve one request body; answer a response body (protocol errors, never exceptions)."""
        response = apis.dispatch(self, api_key, api_version, body)
        self.recovery.scan()
        return response

    def outbox(self) -> list[tuple[int, int, int, dict]]:
        """Requests the controller wants sent: (broker_id, api_key, api_version, body); drained."""
        return self.recovery.drain_outbox()

    def deliver(self, broker_id: int, api_key: int, api_version: int, body: Any) -> None:
        """Feed back the response a broker gave to a request from `outbox()`."""
        self.recovery.deliver(broker_id, api_key, api_version, body)

    # -- faults and time ----------------------------------------------------------------------

    def fence(self, broker_id: int) -> list[LogEntry]:
        """Fence a broker as a missed session timeout does (D.17); return the records written."""
        start = self.end_offset
        brokers.fence(self, broker_id)
        self.recovery.scan()
        return self.log[start:]

    def tick(self, now_ms: int) -> list[LogEntry]:
        """Advance time: session timeouts, periodic unclean elections, recovery deadlines."""
        start = self.end_offset
        self.now_ms = max(self.now_ms, now_ms)
        brokers.expire_sessions(self)
        elect_leaders.elect_unclean_leaders(self)
        self.recovery.tick()
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
        return self.counters.report(self)

    # -- helpers the rule modules share -------------------------------------------------------

    def is_active(self, broker_id: int) -> bool:
        """Registered, unfenced and not in controlled shutdown (E.20's acceptable leader)."""
        b = self.state.brokers.get(broker_id)
        return b is not None and b.active

    def min_isr(self, topic: str) -> int:
        """D.13's effective min ISR of a topic."""
        t = self.state.topic(topic)
        replicas = len(t.partitions[0].replicas) if t is not None and 0 in t.partitions else 1
        return effective_min_isr(configs.min_insync_replicas(self.state, topic), replicas)

    def election_mode(self, topic: str) -> Election:
        """D.17: UNCLEAN if the topic allows unclean elections, else ONLINE."""
        if configs.unclean_election_enabled(self.state, topic):
            return Election.UNCLEAN
        return Election.ONLINE

    def rules(self, topic: str, acceptable: Any = None) -> Rules:
        """The builder's inputs for a topic; `acceptable` defaults to `is_active`."""
        return Rules(
            acceptable=acceptable or self.is_active,
            min_isr=self.min_isr(topic),
            elr_enabled=self.state.elr_enabled,
            metadata_version=self.state.metadata_version,
            semantics=self.semantics,
        )

    def change_partition(
        self, p: PartitionState, target: Target, rules: Rules | None = None
    ) -> Change:
        """Build a partition change and append its record, if any."""
        change = build_change(p, target, rules or self.rules(p.topic))
        if change.record is not None:
            self.append("PartitionChangeRecord", change.record)
        return change
