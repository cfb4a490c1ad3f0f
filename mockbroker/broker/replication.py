"""A broker's replication runtime: the ISR state of the partitions it leads, its AlterPartition
requests to the controller, the periodic ISR shrink and flush, and its followers' fetchers.

The decisions are `isr.LeaderIsr`'s; this module feeds it the broker's clock, metadata and
follower fetches, and sends its proposals (AlterPartition v3, NewIsrWithEpochs) on the broker's
controller connection.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kipwire.codec import ApiKey, ErrorCode

from .fetcher import follow_leaders
from .isr import RECOVERING, LeaderIsr, Outcome

if TYPE_CHECKING:
    from .log import PartitionLog
    from .metadata_image import PartitionInfo
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
        self._seen_topics: set[str] = set()
        self._flushed_at: dict[Key, float] = {}

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

    def metadata_changed(self) -> None:
        """Take leadership and ISR changes from the image; wake the fetchers."""
        image = self.node.image
        led: set[Key] = set()
        for topic in image.topics.values():
            self._seen_topics.add(topic.name)
            for part in topic.partitions.values():
                if part.leader == self.node.node_id:
                    led.add((topic.name, part.index))
                    self._lead(part)
        for key in [k for k in self.leaders if k not in led]:
            del self.leaders[key]
        gone = {t for t in self._seen_topics if t not in image.topics}
        for key in [k for k in self.node.logs if k[0] in gone]:
            del self.node.logs[key]
        self._seen_topics -= gone
        self._changed.set()
        self._changed = trio.Event()

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
            log.leader_epoch = part.leader_epoch
            if not log.epoch_starts or log.epoch_starts[-1][0] < part.leader_epoch:
                # Kafka's leader-epoch cache gets the new epoch at the log end at once
                log.epoch_starts.append((part.leader_epoch, log.end_offset))
            if part.leader_recovery_state == RECOVERING and state.recovered() is not None:
                self._alter_wanted.set()
        else:
            state.metadata(part.isr, part.partition_epoch, part.leader_recovery_state)
        self.update_high_watermark(key)

    async def wait_changed(self) -> None:
        """Sleep until the next metadata change."""
        await self._changed.wait()

    def followed(self) -> dict[Key, tuple[int, int]]:
        """Partitions this broker follows: key -> (leader id, leader epoch)."""
        me = self.node.node_id
        return {
            (topic.name, part.index): (part.leader, part.leader_epoch)
            for topic in self.node.image.topics.values()
            for part in topic.partitions.values()
            if me in part.replicas and part.leader not in (-1, me)
        }

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
            self.node.data_arrived()

    def appended(self, key: Key) -> None:
        """The leader wrote to a log: flush by flush.messages, move the HWM."""
        self.flush_by_count(key)
        self.update_high_watermark(key)

    def flush_by_count(self, key: Key) -> None:
        """flush.messages: flush once that many records are unflushed."""
        log = self.node.logs.get(key)
        every = self._flush_setting(key[0], "flush.messages")
        if log is not None and every is not None and log.end_offset - log.flushed_offset >= every:
            log.flush()

    def follower_fetched(self, key: Key, replica_id: int, replica_epoch: int, offset: int) -> None:
        """A follower's fetch at `offset`: its state, then a possible expansion and a new HWM."""
        state = self.leaders.get(key)
        if state is None:
            return
        log = self.node.replica_log(*key)
        state.follower_fetched(replica_id, offset, replica_epoch, self.now_ms(), log.end_offset)
        if state.expansion(log.high_watermark, self._epoch_start(log, state), self.eligible):
            self._alter_wanted.set()
        self.update_high_watermark(key)

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

    async def _maintain(self) -> None:
        while True:
            await trio.sleep(MAINTENANCE_INTERVAL)
            now = self.now_ms()
            for key, state in list(self.leaders.items()):
                log = self.node.replica_log(*key)
                if state.shrink(now, log.end_offset) is not None:
                    self._alter_wanted.set()
                self.update_high_watermark(key)
            for key, log in self.node.logs.items():
                every = self._flush_setting(key[0], "flush.ms")
                last = self._flushed_at.setdefault(key, now)
                if every is not None and now - last >= every:
                    log.flush()
                    self._flushed_at[key] = now

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
            self.update_high_watermark(key)
