"""A leader's incremental fetch sessions (KIP-227) for its followers, as Kafka's FetchSession
and FetchSessionCache keep them.

A follower's first fetch (SessionId 0, SessionEpoch 0) names every partition it follows here and
opens a session; later fetches carry the next epoch and name only the partitions whose fetch
state changed (and forget the ones it stopped following). The session remembers each partition's
fetch state and what the follower was last told (high watermark, log start, last stable offset),
so an answer lists only the partitions with news: records, a moved mark, an error.

The session is also what the leader's long poll waits on: an append, a moved high watermark or a
metadata change to one of its partitions marks that partition dirty and wakes the session's
waiting fetch (`touch`); nothing visits the session's partitions on a timer. `missing` holds the
partitions the follower should follow here but has not named yet: while it is not empty the
long poll is short, so a newly assigned partition starts replicating at once.

Only followers get sessions: a client's fetch is answered as a full fetch (SessionId 0), which
every client handles.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import trio

Key = tuple[str, int]
#: The largest session id and epoch (int32); both wrap to 1.
INT32_MAX = 2**31 - 1


@dataclass(slots=True)
class CachedPartition:
    """A partition's fetch state in a session, and what the follower was last told."""

    topic_id: uuid.UUID
    fetch_offset: int
    current_leader_epoch: int
    max_bytes: int
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1


@dataclass(slots=True)
class FetchSession:
    """One follower's session at this leader."""

    session_id: int
    replica_id: int
    replica_epoch: int = -1
    #: The epoch the next fetch must carry.
    epoch: int = 1
    partitions: dict[Key, CachedPartition] = field(default_factory=dict)
    by_id: dict[tuple[uuid.UUID, int], Key] = field(default_factory=dict)
    dirty: set[Key] = field(default_factory=set)
    missing: set[Key] = field(default_factory=set)
    wake: trio.Event = field(default_factory=trio.Event)
    #: When the follower last fetched (ms on the broker's clock).
    last_fetch_ms: int = 0

    def touch(self, key: Key) -> None:
        """Something the follower should hear about happened to `key`: wake its fetch."""
        self.dirty.add(key)
        self.wake.set()

    def add(self, key: Key, cached: CachedPartition, index: int) -> None:
        """Start or update a partition's fetch state."""
        self.partitions[key] = cached
        self.by_id[cached.topic_id, index] = key
        self.missing.discard(key)

    def forget(self, topic_id: uuid.UUID, index: int) -> Key | None:
        """The follower stopped fetching a partition; its key, if the session held it."""
        key = self.by_id.pop((topic_id, index), None)
        if key is not None:
            self.partitions.pop(key, None)
            self.dirty.discard(key)
        return key

    def advance_epoch(self) -> None:
        """The fetch carrying the expected epoch was taken: expect the next one."""
        self.epoch = 1 if self.epoch >= INT32_MAX else self.epoch + 1


class FetchSessions:
    """A broker's session cache: at most one session per follower (a follower opening a new one
    has dropped its old one, after a restart or a reconnection)."""

    def __init__(self) -> None:
        self._by_id: dict[int, FetchSession] = {}
        self._by_replica: dict[int, FetchSession] = {}
        self._next_id = 1

    def __iter__(self) -> Iterator[FetchSession]:
        return iter(list(self._by_replica.values()))

    def create(self, replica_id: int) -> FetchSession:
        """A new session for a follower, replacing its previous one."""
        old = self._by_replica.pop(replica_id, None)
        if old is not None:
            self._by_id.pop(old.session_id, None)
            old.wake.set()  # a fetch still waiting on the old session answers now
        while self._next_id in self._by_id:
            self._next_id = self._next_id % INT32_MAX + 1
        session = FetchSession(self._next_id, replica_id)
        self._next_id = self._next_id % INT32_MAX + 1
        self._by_id[session.session_id] = session
        self._by_replica[replica_id] = session
        return session

    def get(self, session_id: int) -> FetchSession | None:
        """A session by id, or None."""
        return self._by_id.get(session_id)

    def of_replica(self, replica_id: int) -> FetchSession | None:
        """A follower's current session, or None."""
        return self._by_replica.get(replica_id)

    def close(self, session: FetchSession) -> None:
        """End a session (the follower sent SessionEpoch -1)."""
        if self._by_id.get(session.session_id) is session:
            del self._by_id[session.session_id]
            del self._by_replica[session.replica_id]

    def changed(self, key: Key) -> None:
        """Records or marks of `key` moved: wake the sessions that fetch it."""
        for session in self._by_replica.values():
            if key in session.partitions:
                session.touch(key)

    def assigned(self, key: Key, followers: tuple[int, ...]) -> None:
        """Metadata changed `key`: wake its sessions; `followers` (empty when this broker does not
        lead it) should fetch it here, and a session that lacks it counts it as missing."""
        for session in self._by_replica.values():
            if key in session.partitions:
                session.touch(key)
            elif session.replica_id in followers:
                session.missing.add(key)
                session.wake.set()
            else:
                session.missing.discard(key)
