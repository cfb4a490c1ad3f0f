"""The follower side of replication: one fetcher per leader, dialing it through the cluster's link
layer (so a network cut stops it), as Kafka's ReplicaFetcherThread with its FetchSessionHandler.

A partition joins its leader's fetcher when this broker starts following it there; it is first
truncated by OffsetForLeaderEpoch (the end of the last epoch both logs share, one request for
every partition due), then fetched in the fetcher's incremental fetch session (KIP-227): the
first Fetch v17 (with ReplicaState: its id and broker epoch, KIP-903) names every partition,
later ones name only those whose fetch offset or log start moved, and forget those that left.
The leader long-polls it (`REPLICA_FETCH_WAIT_MS`, replica.fetch.wait.max.ms) and answers early
when one of its partitions has news, so an idle follower sends one small fetch per leader per
wait, whatever the number of partitions. It appends the leader's batches as they are and keeps
min(leader HWM, its log end) as its HWM. A partition the leader refuses leaves the session and
is truncated again after `FETCH_BACKOFF`; a refused session starts a new one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from kipwire.codec import ApiKey, ErrorCode, IsolationLevel

from .controller_channel import ControllerConnection
from .fetch_sessions import INT32_MAX

if TYPE_CHECKING:
    from .state import BrokerState

FETCH_VERSION, OFFSET_FOR_LEADER_EPOCH_VERSION = 17, 4
REPLICA_FETCH_WAIT_MS = 500
REPLICA_FETCH_BYTES = 8 << 20
#: replica.fetch.backoff.ms: the pause after a failed fetch or a refused connection.
FETCH_BACKOFF = 0.05
_DISCONNECTED = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)
#: Partitions handled between two checkpoints of a long loop (bounded work per task switch, so
#: heartbeats and the controller's turns are never held up by a big reassignment).
BATCH = 500
_SESSION_LOST = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH)
log = logging.getLogger("kipwire.mockbroker.fetcher")
Key = tuple[str, int]


class _Refetch(Exception):
    """The leader refused the whole fetch; reconnect after a backoff."""


async def follow_leaders(node: BrokerState) -> None:
    """Keep one fetcher per leader, and each followed partition in its leader's fetcher."""
    fetchers: dict[int, LeaderFetcher] = {}
    placed: dict[Key, int] = {}
    async with trio.open_nursery() as nursery:
        while True:
            following = node.replication.following
            for n, key in enumerate(node.replication.take_follow_changes()):
                if n % BATCH == BATCH - 1:
                    await trio.lowlevel.checkpoint()
                old = placed.pop(key, None)
                wanted = following.get(key)
                if old is not None and (wanted is None or wanted[0] != old):
                    fetchers[old].remove(key)
                if wanted is None:
                    continue
                leader_id, epoch = wanted
                fetcher = fetchers.get(leader_id)
                if fetcher is None:
                    fetcher = fetchers[leader_id] = LeaderFetcher(node, leader_id)
                    nursery.start_soon(fetcher.run)
                fetcher.assign(key, epoch)
                placed[key] = leader_id
            await node.replication.wait_changed()


class LeaderFetcher:
    """The partitions this broker follows on one leader, and their fetch session there."""

    def __init__(self, node: BrokerState, leader_id: int) -> None:
        self.node = node
        self.leader_id = leader_id
        #: key -> the leader epoch it is followed at
        self.wanted: dict[Key, int] = {}
        #: partitions to truncate before they are fetched, and when they may be tried
        self.to_truncate: dict[Key, float] = {}
        #: what the session holds: key -> (topic id, the fetch state last sent)
        self.sent: dict[Key, tuple[Any, tuple[int, ...]]] = {}
        self.unsent: set[Key] = set()
        self.session_id, self.session_epoch = 0, 0
        self._changed = trio.Event()

    def assign(self, key: Key, epoch: int) -> None:
        """Follow `key` here at leader epoch `epoch` (truncated first)."""
        if self.wanted.get(key) == epoch:
            return
        self.wanted[key] = epoch
        self._leave_session(key)
        self.to_truncate[key] = 0.0
        self._wake()

    def remove(self, key: Key) -> None:
        """Stop following `key` here."""
        self.wanted.pop(key, None)
        self.to_truncate.pop(key, None)
        self._leave_session(key)
        self._wake()

    def _leave_session(self, key: Key) -> None:
        self.unsent.discard(key)
        if key in self.sent:
            self.unsent.add(key)  # sent again as forgotten

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def run(self) -> None:
        """Connect, fetch until the connection fails, and again, until cancelled."""
        while True:
            while not self.wanted:  # a leader of nothing we follow is not dialled
                await self._changed.wait()
            try:
                stream = await self.node.network.connect(self.node.node_id, self.leader_id)
            except _DISCONNECTED:
                await trio.sleep(FETCH_BACKOFF)
                continue
            connection = ControllerConnection(stream, f"replica-{self.node.node_id}")
            self._reset_session()
            try:
                while True:
                    await self._step(connection)
            except (_Refetch, *_DISCONNECTED) as exc:
                log.debug("broker %d fetching from %d: %s", self.node.node_id, self.leader_id, exc)
                await trio.sleep(FETCH_BACKOFF)
            finally:
                with trio.CancelScope(shield=True):
                    await connection.aclose()

    def _reset_session(self) -> None:
        self.session_id, self.session_epoch = 0, 0
        self.sent.clear()
        self.unsent = {k for k in self.wanted if k not in self.to_truncate}

    async def _step(self, connection: ControllerConnection) -> None:
        await self._truncate(connection)
        body = self._request()
        if body is None:
            await self._wait_for_work()
            return
        response = await connection.call(ApiKey.FETCH, FETCH_VERSION, body)
        code = response["error_code"]
        if code in _SESSION_LOST:
            self._reset_session()
            return
        if code:
            raise _Refetch(ErrorCode(code).name)
        if response["session_id"] == 0:
            self._reset_session()  # the leader keeps no session: every fetch is full
        elif self.session_epoch == 0:
            self.session_id, self.session_epoch = response["session_id"], 1
        else:
            self.session_epoch = 1 if self.session_epoch >= INT32_MAX else self.session_epoch + 1
        for topic in response["responses"]:
            info = self.node.image.topics_by_id.get(topic["topic_id"])
            for part in topic["partitions"]:
                if info is not None:
                    self._take(body, (info.name, part["partition_index"]), part)

    async def _wait_for_work(self) -> None:
        """Nothing to fetch: wait for a partition, or for a truncation's backoff to end."""
        due = min(self.to_truncate.values(), default=None)
        with trio.move_on_at(due if due is not None else float("inf")):
            await self._changed.wait()

    async def _truncate(self, connection: ControllerConnection) -> None:
        """Cut each due partition's log back to where it stops agreeing with the leader's."""
        now = trio.current_time()
        due = [k for k, at in self.to_truncate.items() if at <= now]
        topics: dict[str, list[dict]] = {}
        for key in due:
            partition_log = self.node.replica_log(*key)
            if not partition_log.batches:
                self._truncated(key)
                continue
            topics.setdefault(key[0], []).append(
                {
                    "partition": key[1],
                    "current_leader_epoch": self.wanted[key],
                    "leader_epoch": partition_log.batches[-1].leader_epoch,
                }
            )
        if not topics:
            return
        body = {
            "replica_id": self.node.node_id,
            "topics": [{"topic": t, "partitions": parts} for t, parts in topics.items()],
        }
        response = await connection.call(
            ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, body
        )
        for topic in response["topics"]:
            for part in topic["partitions"]:
                key = (topic["topic"], part["partition"])
                if key not in self.to_truncate:
                    continue  # reassigned while the request was out
                if part["error_code"]:
                    self.to_truncate[key] = trio.current_time() + FETCH_BACKOFF
                    continue
                _truncate_to_leader(self.node, key, part["leader_epoch"], part["end_offset"])
                self._truncated(key)

    def _truncated(self, key: Key) -> None:
        del self.to_truncate[key]
        self.unsent.add(key)

    def _request(self) -> dict | None:
        """The next fetch: every partition in a new session, else only what changed."""
        image = self.node.image
        full = self.session_id == 0
        keys = [k for k in self.wanted if k not in self.to_truncate] if full else self.unsent
        topics: dict[str, tuple[Any, list[dict]]] = {}
        forgotten: dict[Any, list[int]] = {}
        for key in sorted(keys):
            topic = image.topics.get(key[0])
            if key not in self.wanted or key in self.to_truncate or topic is None:
                if key in self.sent and not full:
                    forgotten.setdefault(self.sent[key][0], []).append(key[1])
                self.sent.pop(key, None)
                continue
            partition_log = self.node.replica_log(*key)
            state = (
                self.wanted[key],
                partition_log.end_offset,
                partition_log.batches[-1].leader_epoch if partition_log.batches else -1,
                partition_log.log_start_offset,
            )
            self.sent[key] = (topic.topic_id, state)
            topics.setdefault(key[0], (topic.topic_id, []))[1].append(
                {
                    "partition": key[1],
                    "current_leader_epoch": state[0],
                    "fetch_offset": state[1],
                    "last_fetched_epoch": state[2],
                    "log_start_offset": state[3],
                    "partition_max_bytes": REPLICA_FETCH_BYTES,
                }
            )
        self.unsent = set()
        if not self.sent and not forgotten:
            self.session_id, self.session_epoch = 0, 0  # an empty session is not worth a fetch
            return None
        return {
            "replica_state": {"replica_id": self.node.node_id, "replica_epoch": self.node.epoch},
            "max_wait_ms": REPLICA_FETCH_WAIT_MS,
            "min_bytes": 1,
            "max_bytes": REPLICA_FETCH_BYTES,
            "isolation_level": IsolationLevel.READ_UNCOMMITTED,
            "session_id": self.session_id,
            "session_epoch": self.session_epoch,
            "topics": [{"topic_id": tid, "partitions": parts} for tid, parts in topics.values()],
            "forgotten_topics_data": [
                {"topic_id": tid, "partitions": indexes} for tid, indexes in forgotten.items()
            ],
            "rack_id": "",
        }

    def _take(self, body: dict, key: Key, part: dict) -> None:
        """One partition of the leader's answer: its records, its marks, or its error."""
        sent = self.sent.get(key)
        if sent is None or self.wanted.get(key) != sent[1][0] or key in self.to_truncate:
            return  # left or reassigned while the fetch was out
        if part["error_code"]:
            log.debug("broker %d fetching %s: %s", self.node.node_id, key, part["error_code"])
            self._leave_session(key)
            self.to_truncate[key] = trio.current_time() + FETCH_BACKOFF
            return
        partition_log = self.node.replica_log(*key)
        if part["records"]:
            partition_log.append_replicated(part["records"])
            self.node.replication.flush_by_count(key)
            self.unsent.add(key)
        if partition_log.advance_high_watermark(part["high_watermark"]):
            self.node.data_arrived()
        start = part["log_start_offset"]
        if partition_log.log_start_offset < start <= partition_log.high_watermark:
            partition_log.delete_before(start)
            self.unsent.add(key)


def _truncate_to_leader(node: BrokerState, key: Key, their_epoch: int, their_end: int) -> None:
    """Truncate to the end of the last epoch both logs share, by the leader's answer."""
    partition_log = node.replica_log(*key)
    last_epoch = partition_log.batches[-1].leader_epoch
    if their_epoch < 0 or their_end < 0:
        target = partition_log.log_start_offset  # the leader holds nothing of these epochs
    elif their_epoch == last_epoch:
        target = their_end
    else:
        mine_epoch, mine_end = partition_log.end_offset_for_epoch(their_epoch)
        target = min(their_end, mine_end) if mine_epoch == their_epoch else their_end
    partition_log.truncate_to(min(target, partition_log.end_offset))
