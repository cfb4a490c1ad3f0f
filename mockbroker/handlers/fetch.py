"""Fetch (1): records up to the high watermark (or LSO), long-polled with MaxWaitMs/MinBytes.

Fetch sessions (KIP-227): a follower's fetch opening one (SessionId 0, SessionEpoch 0) gets a
session (`broker.fetch_sessions`), and its incremental fetches name only the partitions whose
fetch state changed and hear only of partitions with news; their long poll wakes on an append,
a moved mark or a metadata change to one of the session's partitions. A client's fetch is
answered the way a broker with a full session cache answers it: session id 0, so every fetch is
a full fetch, which clients handle; an unknown session id gets FETCH_SESSION_ID_NOT_FOUND.

A fetch from a follower (ReplicaState.ReplicaId, or ReplicaId before v15, >= 0) reads up to the
log end and tells the leader's ISR state machine the follower's offset and broker epoch. Under
`Semantics.KIP` a leader still RECOVERING (KIP-704) answers consumers NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

from typing import Any

import trio

from kipwire.codec import ApiKey, ErrorCode, IsolationLevel

from ..broker.fetch_sessions import CachedPartition, FetchSession, FetchSessions
from ..broker.fetcher import BATCH
from ..broker.log import LogError, PartitionLog
from ..broker.topic_names import response_topic, topic_name
from ..gathered import records_of
from ..security.context import PRINCIPAL
from .registry import BrokerView, PartitionShape, RequestContext, handles

#: Fetch names topics by id from this version on (KIP-516), by name before it.
TOPIC_IDS_SINCE = 13
#: What a sessionless fetch's long poll watches of a partition it read: a read answers
#: differently only once one of them moves (high watermark, last stable offset, log start, end).
Marks = tuple[int, int, int, int]
#: The long poll's cap while a session lacks a partition its follower should fetch here: the
#: follower names it in its next fetch, so that fetch should come soon.
MISSING_WAIT = 0.02
_SHAPE = PartitionShape(
    "topics",
    "partitions",
    "topic",
    "partition",
    "responses",
    "partitions",
    out_index="partition_index",
    extra={"error_code": ErrorCode.NONE, "session_id": 0},
    wait_key="max_wait_ms",
)


@handles(ApiKey.FETCH, min_version=4, fail=_SHAPE)
async def fetch(ctx: RequestContext, body: Any) -> dict:
    """Read every requested partition; wait for MinBytes until MaxWaitMs when there is less."""
    broker = ctx.broker
    replica_id, replica_epoch = _replica(body)
    session_id, session_epoch = body.get("session_id", 0), body.get("session_epoch", -1)
    by_id = ctx.api_version >= TOPIC_IDS_SINCE
    if replica_id >= 0 and (session_id != 0 or session_epoch == 0):
        answer = await _session_fetch(broker, body, replica_id, replica_epoch, by_id)
        if answer is not None:
            return answer
    elif session_id != 0:
        return {
            "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            "session_id": 0,
            "responses": [],
        }
    deadline = trio.current_time() + max(body["max_wait_ms"], 0) / 1000
    if replica_id >= 0:
        _record_follower_fetch(broker, body, replica_id, replica_epoch)
    else:
        body = _within_quota(ctx, body)
    while True:
        watched: list[tuple[PartitionLog, Marks]] = []
        responses, size, failed = _read(broker, body, replica_id >= 0, by_id, watched)
        if failed or size >= body["min_bytes"] or trio.current_time() >= deadline:
            return {"error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}
        await _wait_for_news(broker, watched, deadline)


def _within_quota(ctx: RequestContext, body: Any) -> Any:
    """A consumer's fetch bounded by its consumer_byte_rate (broker/quotas.py), as Kafka bounds
    MaxBytes and MinBytes by the quota's window."""
    cap = ctx.broker.quotas.max_fetch_bytes(PRINCIPAL.get(), ctx.client_id)
    if cap is None or cap >= body.get("max_bytes", 0x7FFFFFFF):
        return body
    return {**body, "max_bytes": cap, "min_bytes": min(body["min_bytes"], cap)}


async def _session_fetch(
    broker: Any, body: Any, replica_id: int, replica_epoch: int, by_id: bool
) -> dict | None:
    """A follower's fetch in a session; None when it closes its session (SessionEpoch -1) and
    is answered as a sessionless fetch."""
    sessions = broker.fetch_sessions
    session = _find_session(sessions, body, replica_id)
    if session is None or isinstance(session, dict):
        return session
    session.replica_epoch = replica_epoch
    session.last_fetch_ms = broker.replication.now_ms()
    full = body.get("session_id", 0) == 0
    named, unknown = await _take_request(broker, session, body)
    broker.replication.session_fetched(session, named)
    if full:
        session.missing = {
            k
            for k, state in broker.replication.leaders.items()
            if replica_id in state.followers and k not in session.partitions
        }
    deadline = trio.current_time() + max(body["max_wait_ms"], 0) / 1000
    wanted = set(session.partitions) if full else named | session.dirty
    while True:
        session.wake = trio.Event()
        session.dirty -= wanted
        responses, news = _read_session(broker, session, wanted, body, full, by_id)
        for topic, index in unknown:
            news = True
            named = {"topic_id": topic["topic_id"]} if by_id else {"topic": topic.get("topic")}
            responses.append({**named, "partitions": [_failed(index, ErrorCode.UNKNOWN_TOPIC_ID)]})
        now = trio.current_time()
        if news or full or now >= deadline or sessions.get(session.session_id) is not session:
            return {
                "error_code": ErrorCode.NONE,
                "session_id": session.session_id,
                "responses": responses,
            }
        # a session missing a partition answers soon: its follower's next fetch names it
        if session.missing:
            deadline = min(deadline, now + MISSING_WAIT)
        with trio.move_on_at(deadline):
            await session.wake.wait()
        unknown = []
        wanted = set(session.dirty)


def _find_session(
    sessions: FetchSessions, body: Any, replica_id: int
) -> FetchSession | dict | None:
    """The fetch's session (a new one for SessionId 0), an error answer, or None once closed."""
    session_id, session_epoch = body.get("session_id", 0), body["session_epoch"]
    if session_id == 0:
        return sessions.create(replica_id)
    found = sessions.get(session_id)
    if found is None or found.replica_id != replica_id:
        return _session_error(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session_epoch == -1:
        sessions.close(found)
        return None
    if session_epoch != found.epoch:
        return _session_error(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    found.advance_epoch()
    return found


async def _take_request(
    broker: Any, session: FetchSession, body: Any
) -> tuple[set[tuple[str, int]], list[tuple[Any, int]]]:
    """Apply the fetch to the session: forget what it forgets, take the fetch state of what it
    names (a follower fetch for each); the keys named, and the (topic, index) it named unknown."""
    replica_id = session.replica_id
    for topic in body.get("forgotten_topics_data") or []:
        for index in topic["partitions"]:
            key = session.forget(topic.get("topic_id"), index)
            state = broker.replication.leaders.get(key) if key is not None else None
            if state is not None and replica_id in state.followers:
                session.missing.add(key)
    image = broker.image
    named: set[tuple[str, int]] = set()
    unknown: list[tuple[Any, int]] = []
    for topic in body["topics"]:
        name = topic_name(image, topic, "topic")
        info = image.topics.get(name) if name is not None else None
        for request in topic["partitions"]:
            if len(named) % BATCH == BATCH - 1:
                await trio.lowlevel.checkpoint()  # bounded work per task switch
            index = request["partition"]
            if info is None:
                unknown.append((topic, index))
                continue
            key = (name, index)
            cached = CachedPartition(
                info.topic_id,
                request["fetch_offset"],
                request.get("current_leader_epoch", -1),
                request["partition_max_bytes"],
            )
            old = session.partitions.get(key)
            if old is not None:  # what the follower was told still stands
                cached.high_watermark = old.high_watermark
                cached.log_start_offset = old.log_start_offset
                cached.last_stable_offset = old.last_stable_offset
            session.add(key, cached, index)
            named.add(key)
            broker.replica(name, index).follower_fetched(
                replica_id, session.replica_epoch, request["fetch_offset"]
            )
    return named, unknown


def _session_error(code: ErrorCode) -> dict:
    return {"error_code": code, "session_id": 0, "responses": []}


def _failed(index: int, code: int) -> dict:
    return {"partition_index": index, "error_code": code, "high_watermark": -1, "records": b""}


def _read_session(
    broker: Any,
    session: FetchSession,
    keys: set[tuple[str, int]],
    body: Any,
    full: bool,
    by_id: bool,
) -> tuple[list[dict], bool]:
    """The session's partitions among `keys` with news (all of them in a full answer); a
    partition left out for want of bytes stays dirty."""
    budget = body.get("max_bytes", 0x7FFFFFFF)
    total = 0
    news = False
    by_topic: dict[str, list[dict]] = {}
    for key in sorted(keys):
        cached = session.partitions.get(key)
        if cached is None:
            continue
        if total >= budget:
            session.dirty.add(key)
            continue
        try:
            log = broker.partition(key[0], key[1], cached.current_leader_epoch).log
            records = records_of(
                log.read_parts(
                    cached.fetch_offset,
                    min(cached.max_bytes, budget - total),
                    committed=False,
                    min_one=total == 0,
                    replica=True,
                )
            )
        except LogError as exc:
            news = True
            by_topic.setdefault(key[0], []).append(_failed(key[1], exc.code))
            continue
        marks = (log.high_watermark, log.log_start_offset, log.last_stable_offset)
        told = (cached.high_watermark, cached.log_start_offset, cached.last_stable_offset)
        if records or marks != told or full:
            news = news or bool(records) or marks != told
            total += len(records)
            cached.high_watermark, cached.log_start_offset, cached.last_stable_offset = marks
            by_topic.setdefault(key[0], []).append(
                {
                    "partition_index": key[1],
                    "error_code": ErrorCode.NONE,
                    "high_watermark": marks[0],
                    "last_stable_offset": marks[2],
                    "log_start_offset": marks[1],
                    "records": records,
                }
            )
    image = broker.image
    responses = [
        {**response_topic(image, name, by_id=by_id, key="topic"), "partitions": parts}
        for name, parts in by_topic.items()
    ]
    return responses, news


def _replica(body: Any) -> tuple[int, int]:
    """(replica id, broker epoch) of a follower's fetch; (-1, -1) for a consumer."""
    state = body.get("replica_state")
    if state is not None and state.get("replica_id", -1) >= 0:
        return state["replica_id"], state.get("replica_epoch", -1)
    return body.get("replica_id", -1), -1


def _record_follower_fetch(
    broker: BrokerView, body: Any, replica_id: int, replica_epoch: int
) -> None:
    """The follower's fetch offset is its log end: the leader's ISR and HWM decisions use it."""
    for topic in body["topics"]:
        name = topic_name(broker.image, topic, "topic")
        for request in topic["partitions"]:
            if name is not None:
                broker.replica(name, request["partition"]).follower_fetched(
                    replica_id, replica_epoch, request["fetch_offset"]
                )


async def _wait_for_news(
    broker: BrokerView, watched: list[tuple[PartitionLog, Marks]], deadline: float
) -> None:
    """Sleep until the deadline, or until a read of the watched partitions could answer
    differently: one of their marks moved, or the metadata did. A wake (an append or a moved
    mark anywhere on the broker) costs a comparison per partition, not a read of each."""
    image, offset = broker.image, broker.image.offset
    with trio.move_on_at(deadline):
        while True:
            await broker.wait_for_data()
            if broker.image is not image or image.offset != offset:
                return
            if any(_marks(log) != marks for log, marks in watched):
                return


def _marks(log: PartitionLog) -> Marks:
    return log.high_watermark, log.last_stable_offset, log.log_start_offset, log.end_offset


def _read(
    broker: BrokerView,
    body: Any,
    replica: bool,
    by_id: bool,
    watched: list[tuple[PartitionLog, Marks]],
) -> tuple[list[dict], int, bool]:
    """Every requested partition's answer (a sessionless fetch lists them all, as Kafka's
    does), the bytes read and whether any partition failed; each log read joins `watched`."""
    image = broker.image
    committed = body.get("isolation_level", 0) == IsolationLevel.READ_COMMITTED
    budget = body.get("max_bytes", 0x7FFFFFFF)
    total = 0
    failed = False
    responses = []
    no_error = ErrorCode.NONE  # looked up once: a consumer's fetch may name thousands
    for topic in body["topics"]:
        name = topic_name(image, topic, "topic")
        parts = []
        for request in topic["partitions"]:
            offset = request["fetch_offset"]
            try:
                log = _leader_log(broker, name, request, replica)
                # KIP-74: until some bytes are read, a partition returns at least one whole batch
                records = records_of(
                    log.read_parts(
                        offset,
                        min(request["partition_max_bytes"], budget - total),
                        committed=committed,
                        min_one=total == 0,
                        replica=replica,
                    )
                )
            except LogError as exc:
                failed = True
                parts.append(_failed(request["partition"], exc.code))
                continue
            marks = log.high_watermark, log.last_stable_offset, log.log_start_offset, log.end_offset
            watched.append((log, marks))
            total += len(records)
            part = {
                "partition_index": request["partition"],
                "error_code": no_error,
                "high_watermark": marks[0],
                "last_stable_offset": marks[1],
                "log_start_offset": marks[2],
                "records": records,
            }
            if committed:
                part["aborted_transactions"] = _aborted(log, offset, marks[1])
            parts.append(part)
        responses.append(
            {**response_topic(image, name, by_id=by_id, key="topic"), "partitions": parts}
        )
    return responses, total, failed


def _leader_log(broker: BrokerView, name: str | None, request: Any, replica: bool) -> PartitionLog:
    """The log a fetch reads of a partition; LogError when this broker cannot serve it."""
    index = request["partition"]
    if name is None:
        raise LogError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
    log = broker.partition_log(name, index, request.get("current_leader_epoch", -1))
    if not replica and not broker.replica(name, index).serves_fetches:
        raise LogError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "the leader is RECOVERING (KIP-704)")
    return log


def _aborted(log: PartitionLog, offset: int, stable: int) -> list[dict]:
    """READ_COMMITTED's aborted transactions overlapping the read, [] at once when the log
    has none."""
    if not log.aborted:
        return []
    return [
        {"producer_id": t.producer_id, "first_offset": t.first_offset}
        for t in log.aborted_in(offset, stable)
    ]
