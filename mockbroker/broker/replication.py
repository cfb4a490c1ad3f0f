"""A broker's replication runtime: the ISR state of the partitions it leads, its AlterPartition
requests to the controller, ISR shrinks and time-based flushes, and its followers' fetchers.

The decisions are `isr.LeaderIsr`'s; this module feeds it the broker's clock, metadata and
follower fetches, and sends its proposals (AlterPartition v3, NewIsrWithEpochs) on the broker's
controller connection.

Its cost follows the changes, not the partitions: a metadata delta revisits only the partitions
it touched (every led partition only when a broker or a config changed); the periodic pass
visits only the partitions some follower is behind on (`behind`) and the logs with unflushed
records under flush.ms. A follower's incremental fetch names only partitions whose offset moved;
for the others the leader applies the fetch lazily, when the leader's log end moves
(`appended`), the only moment an idle follower's fetch time can change a decision.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kipwire.codec import ApiKey, ErrorCode

from .fetcher import follow_leaders
from .isr import RECOVERING, LeaderIsr, Outcome
from .replica_dirs import report_assignments

if TYPE_CHECKING:
    from .fetch_sessions import FetchSession
    from .log import PartitionLog
    from .metadata_image import MetadataDelta, PartitionInfo
    from .state import BrokerState

ALTER_PARTITION_VERSION = 3
DEFAULT_LAG_MS = 1500
MAINTENANCE_INTERVAL = 0.1
RETRY_BACKOFF = 0.05
Key = tuple[str, int]


class Replication:
    """Leader ISR states and the tasks that replicate, shrink, flush and report ISR changes."""

    def __init__(self, node: BrokerState) -> None:
        self.node = node
        self.leaders: dict[Key, LeaderIsr] = {}
        self.log = logging.getLogger(f"kipwire.mockbroker.broker.{node.node_id}.replication")
        self._changed = trio.Event()
        self._alter_wanted = trio.Event()
        self._flushed_at: dict[Key, float] = {}
        #: Followed partitions: key -> (leader id, leader epoch).
        self.following: dict[Key, tuple[int, int]] = {}
        self._follow_changes: set[Key] = set()
        #: Per follower, the led partitions whose log end it has not reached.
        self.behind: dict[int, set[Key]] = {}
        #: Per follower, the led partitions whose ISR it is not in (each fetch may expand it).
        self.outside: dict[int, set[Key]] = {}
        #: Logs with records above their flushed offset.
        self.unflushed: set[Key] = set()

    # -- configuration ------------------------------------------------------------------------

    @property
    def lag_ms(self) -> int:
        """replica.lag.time.max.ms (the mock's default is short: a lost follower goes in 1.5 s)."""
        return int(self.node.config.get("replica.lag.time.max.ms", DEFAULT_LAG_MS))

    def min_isr(self, part: PartitionInfo) -> int:
        """min(min.insync.replicas, replica count), kip-rules A.1."""
        configured = int(self.node.image.topic_config(part.topic, "min.insync.replicas", "1"))
        return min(configured, len(part.replicas))

    def _flush_setting(self, topic: str, name: str) -> int | None:
        value = self.node.image.topic_config(topic, name, "")
        return int(value) if value else None

    @staticmethod
    def now_ms() -> int:
        """The broker's clock, in milliseconds (trio's, so a MockClock drives it too)."""
        return int(trio.current_time() * 1000)

    def eligible(self, broker_id: int, broker_epoch: int) -> bool:
        """B.5: registered, unfenced, not shutting down, and its fetch epoch is current."""
        b = self.node.image.brokers.get(broker_id)
        if b is None or b.fenced or b.in_controlled_shutdown:
            return False
        return broker_epoch in (-1, b.epoch)

    # -- metadata -----------------------------------------------------------------------------

    def metadata_changed(self, delta: MetadataDelta) -> None:
        """Take leadership and ISR changes from the image's delta; wake the fetchers. The
        replicas this broker gained or lost are placed in (or dropped from) its log dirs first."""
        image = self.node.image
        self.node.replica_dirs.replayed(image, self.node.node_id, delta.partitions)
        keys: set[Key] = set(delta.partitions)
        if delta.cluster_wide:
            keys.update(self.leaders)  # eligibility and min ISR feed every led partition's HWM
        if delta.configs:
            for key, log in self.node.logs.items():  # flush.ms may have been set
                self._watch_flush(key, log)
        for key in keys:
            part = image.partition(*key)
            self._follow(key, part)
            if part is None:
                self.leaders.pop(key, None)
                if key[0] not in image.topics:
                    self.node.remove_log(*key)
                    self.unflushed.discard(key)
                    self._flushed_at.pop(key, None)
            elif part.leader == self.node.node_id:
                self._flushed_at.setdefault(key, self.now_ms())
                self._lead(part)
            else:
                self.leaders.pop(key, None)
            if key in delta.partitions:
                state = self.leaders.get(key)
                followers = tuple(state.followers) if state is not None else ()
                self.node.fetch_sessions.assigned(key, followers)
        self._changed.set()
        self._changed = trio.Event()

    def _follow(self, key: Key, part: PartitionInfo | None) -> None:
        me = self.node.node_id
        if part is not None and me in part.replicas and part.leader not in (-1, me):
            self._flushed_at.setdefault(key, self.now_ms())
            wanted = (part.leader, part.leader_epoch)
            if self.following.get(key) != wanted:
                self.following[key] = wanted
                self._follow_changes.add(key)
        elif self.following.pop(key, None) is not None:
            self._follow_changes.add(key)

    def _lead(self, part: PartitionInfo) -> None:
        key = (part.topic, part.index)
        log = self.node.replica_log(*key)
        state = self.leaders.get(key)
        if state is None or state.leader_epoch != part.leader_epoch:
            state = self.leaders[key] = LeaderIsr(
                self.node.node_id,
                part.leader_epoch,
                part.partition_epoch,
                part.replicas,
                part.isr,
                now_ms=self.now_ms(),
                lag_ms=self.lag_ms,
                leader_recovery_state=part.leader_recovery_state,
                recovering_rejects_fetch=self.node.recovering_rejects_fetch,
            )
            for follower in state.followers:
                self.behind.setdefault(follower, set()).add(key)  # not fetched from us yet
            log.leader_epoch = part.leader_epoch
            if not log.epoch_starts or log.epoch_starts[-1][0] < part.leader_epoch:
                # Kafka's leader-epoch cache gets the new epoch at the log end at once
                log.epoch_starts.append((part.leader_epoch, log.end_offset))
            if part.leader_recovery_state == RECOVERING and state.recovered() is not None:
                self._alter_wanted.set()
        else:
            state.metadata(part.isr, part.partition_epoch, part.leader_recovery_state)
        self._track_isr(key, state)
        self.update_high_watermark(key)

    def _track_isr(self, key: Key, state: LeaderIsr) -> None:
        """Keep `outside` up to date for one led partition."""
        for follower in state.followers:
            outside = self.outside.setdefault(follower, set())
            if follower in state.isr:
                outside.discard(key)
            else:
                outside.add(key)

    async def wait_changed(self) -> None:
        """Sleep until the next metadata change."""
        await self._changed.wait()

    def take_follow_changes(self) -> set[Key]:
        """The followed partitions whose leader or epoch changed since the last call."""
        changes, self._follow_changes = self._follow_changes, set()
        return changes

    # -- leader side --------------------------------------------------------------------------

    def state(self, key: Key) -> LeaderIsr | None:
        """The ISR state of a partition this broker leads, or None."""
        return self.leaders.get(key)

    def update_high_watermark(self, key: Key) -> None:
        """Recompute a led partition's HWM (A.1-A.2); wake waiting produces and fetches."""
        state = self.leaders.get(key)
        part = self.node.image.partition(*key)
        if state is None or part is None:
            return
        log = self.node.replica_log(*key)
        new = state.high_watermark(
            log.high_watermark, log.end_offset, self.min_isr(part), self.now_ms(), self.eligible
        )
        if log.advance_high_watermark(new):
            self.node.data_arrived(key)

    def appended(self, key: Key) -> None:
        """The leader wrote to a log: flush by flush.messages, move the HWM, wake sessions."""
        state = self.leaders.get(key)
        log = self.node.logs.get(key)
        if log is not None and state is not None:
            for f in state.followers.values():
                self._idle_fetch(state, key, f.broker_id)
                if f.log_end_offset < log.end_offset:
                    self.behind.setdefault(f.broker_id, set()).add(key)
        self.flush_by_count(key)
        self.update_high_watermark(key)
        self.node.fetch_sessions.changed(key)

    def _idle_fetch(self, state: LeaderIsr, key: Key, follower: int) -> None:
        """Apply a follower's last session fetch that did not name `key` (it was at the log end
        then, or `behind` would have had it applied at once), before the end's move counts."""
        f = state.followers[follower]
        session = self.node.fetch_sessions.of_replica(follower)
        cached = session.partitions.get(key) if session is not None else None
        if (
            session is not None
            and cached is not None
            and cached.current_leader_epoch == state.leader_epoch
            and session.last_fetch_ms > f.last_fetch_ms
        ):
            offset = cached.fetch_offset
            state.follower_fetched(
                follower, offset, session.replica_epoch, session.last_fetch_ms, offset
            )

    def flush_by_count(self, key: Key) -> None:
        """flush.messages: flush once that many records are unflushed."""
        log = self.node.logs.get(key)
        if log is None:
            return
        self._watch_flush(key, log)
        every = self._flush_setting(key[0], "flush.messages")
        if every is not None and log.end_offset - log.flushed_offset >= every:
            log.flush()
            self.unflushed.discard(key)

    def _watch_flush(self, key: Key, log: PartitionLog) -> None:
        """A log with unflushed records under flush.ms joins the periodic pass's flushes."""
        if (
            log.end_offset > log.flushed_offset
            and self._flush_setting(key[0], "flush.ms") is not None
        ):
            self.unflushed.add(key)

    def follower_fetched(self, key: Key, replica_id: int, replica_epoch: int, offset: int) -> None:
        """A follower's fetch at `offset`: its state, then a possible expansion and a new HWM."""
        state = self.leaders.get(key)
        if state is None:
            return
        log = self.node.replica_log(*key)
        state.follower_fetched(replica_id, offset, replica_epoch, self.now_ms(), log.end_offset)
        behind = self.behind.setdefault(replica_id, set())
        if offset >= log.end_offset:
            behind.discard(key)
        else:
            behind.add(key)
        if state.expansion(log.high_watermark, self._epoch_start(log, state), self.eligible):
            self._alter_wanted.set()
        self.update_high_watermark(key)

    def session_fetched(self, session: FetchSession, named: set[Key]) -> None:
        """A follower's incremental fetch: the partitions it is behind on and did not name count
        as fetched again at their session offsets, and so do those whose ISR it is outside
        (the fetch may bring it in); the others wait for `appended`."""
        replica = session.replica_id
        keys = self.behind.get(replica, set()) | self.outside.get(replica, set())
        for key in keys:
            cached = session.partitions.get(key)
            if key not in self.leaders:
                self.behind.get(replica, set()).discard(key)
                self.outside.get(replica, set()).discard(key)
            elif cached is not None and key not in named:
                self.follower_fetched(
                    key, session.replica_id, session.replica_epoch, cached.fetch_offset
                )

    @staticmethod
    def _epoch_start(log: PartitionLog, state: LeaderIsr) -> int:
        for epoch, start in log.epoch_starts:
            if epoch == state.leader_epoch:
                return start
        return log.end_offset

    # -- tasks --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Fetch as a follower, report ISR changes, shrink and flush, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow_leaders, self.node)
            nursery.start_soon(self._send_alter_partitions)
            nursery.start_soon(self._maintain)
            nursery.start_soon(report_assignments, self.node)

    async def _maintain(self) -> None:
        while True:
            await trio.sleep(MAINTENANCE_INTERVAL)
            self.maintain(self.now_ms())

    def maintain(self, now: int) -> None:
        """Shrink ISRs and move HWMs of partitions a follower is behind on; flush by flush.ms
        the logs that have it and unflushed records."""
        lagging: set[Key] = set()
        for keys in self.behind.values():
            for key in list(keys):
                if key in self.leaders:
                    lagging.add(key)
                else:
                    keys.discard(key)  # no longer led here
        for key in lagging:
            state = self.leaders[key]
            log = self.node.replica_log(*key)
            if state.shrink(now, log.end_offset) is not None:
                self._alter_wanted.set()
            elif all(f in state.maximal_isr for f in state.followers):
                # every follower is in the ISR: the HWM depends on no clock, only on fetches and
                # appends, which moved it already (a pass over thousands of partitions behind
                # after one produce would otherwise take the loop's time from the fetches)
                continue
            self.update_high_watermark(key)
        for key in list(self.unflushed):
            log = self.node.logs.get(key)
            if log is None or log.flushed_offset >= log.end_offset:
                self.unflushed.discard(key)
                continue
            every = self._flush_setting(key[0], "flush.ms")
            last = self._flushed_at.setdefault(key, now)
            if every is not None and now - last >= every:
                log.flush()
                self._flushed_at[key] = now
                self.unflushed.discard(key)

    async def _send_alter_partitions(self) -> None:
        while True:
            await self._alter_wanted.wait()
            self._alter_wanted = trio.Event()
            for key, state in list(self.leaders.items()):
                if state.pending is not None and not state.in_flight:
                    await self._alter_partition(key, state)

    async def _alter_partition(self, key: Key, state: LeaderIsr) -> None:
        proposal = state.pending
        topic = self.node.image.topics.get(key[0])
        if proposal is None or topic is None:
            return
        state.in_flight = True
        me = self.node.node_id
        body = {
            "broker_id": me,
            "broker_epoch": self.node.epoch,
            "topics": [
                {
                    "topic_id": topic.topic_id,
                    "partitions": [
                        {
                            "partition_index": key[1],
                            "leader_epoch": state.leader_epoch,
                            "new_isr_with_epochs": [
                                {"broker_id": b, "broker_epoch": self.node.epoch if b == me else e}
                                for b, e in proposal.isr_with_epochs
                            ],
                            "leader_recovery_state": proposal.leader_recovery_state,
                            "partition_epoch": state.partition_epoch,
                        }
                    ],
                }
            ],
        }
        connection = self.node.controller_connection
        assert connection is not None
        response = await connection.call(ApiKey.ALTER_PARTITION, ALTER_PARTITION_VERSION, body)
        if state is not self.leaders.get(key) or state.pending is not proposal:
            return  # leadership or the proposal changed while the request was out
        code = response["error_code"]
        reply = None
        if code == ErrorCode.NONE:
            reply = response["topics"][0]["partitions"][0]
            code = reply["error_code"]
        outcome = state.alter_partition_reply(code, reply)
        self.log.debug("AlterPartition %s %s: %s", key, proposal.isr, outcome.value)
        if outcome is Outcome.WAIT_FOR_METADATA:
            state.in_flight = True  # the next metadata for this partition settles it
        elif outcome is Outcome.RETRY:
            await trio.sleep(RETRY_BACKOFF)
            self._alter_wanted.set()
        else:
            self._track_isr(key, state)
            self.update_high_watermark(key)
