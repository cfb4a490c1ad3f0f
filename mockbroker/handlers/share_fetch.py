"""Share consumption (KIP-932): ShareFetch (78) and ShareAcknowledge (79), v1-v2.

Behavior: a member's requests to one broker form a share session: epoch 0 opens it with the
partitions it names, later requests (epoch +1 each) add partitions and forget others, -1 closes
it and releases what the member still holds. ShareFetch first applies the acknowledgements it
carries, then acquires records of every session partition this broker leads (released records
again first, then new ones up to the HWM), each under an acquisition lock of
`record_lock_duration_ms`; with nothing to give it waits up to MaxWaitMs for records, a release
or an expired lock. A share partition starts at `share.auto.offset.reset` (latest unless the
group's config says earliest) the first time a leader serves it.
Version notes: v0 is withdrawn; v2 adds ShareAcquireMode (record_limit caps the records at
MaxRecords exactly), IsRenewAck (RENEW acknowledgements, no acquisition) and ShareAcknowledge's
AcquisitionLockTimeoutMs.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import iter_batches

from ..broker.log import LogError, PartitionLog
from ..broker.topic_names import topic_name
from ..coordinators.share_groups import ShareCoordinator, ShareSession
from ..coordinators.share_partition import (
    AcknowledgeError,
    Acquired,
    AcquireMode,
    SharePartition,
)
from ..coordinators.share_settings import OffsetReset, ShareSettings
from .registry import BrokerView, RequestContext, handles

CLOSE_EPOCH = -1
#: What Kafka's broker takes for MaxRecords when a request leaves it at 0 (the consumer's
#: `max.poll.records` default).
DEFAULT_MAX_RECORDS = 500


def _fail(body: Any, code: int, version: int) -> dict:
    return {"error_code": code, "responses": [], "node_endpoints": []}


class _SessionError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _session(
    shares: ShareCoordinator, body: Any, broker: int, *, may_open: bool
) -> ShareSession | None:
    """The request's share session after its epoch check; None when the request closes it."""
    group_id, member_id, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
    if epoch == 0:
        if not may_open:
            raise _SessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a session"
            )
        return shares.open_session(group_id, member_id, broker)
    session = shares.session(group_id, member_id, broker)
    if session is None:
        raise _SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session for {member_id}")
    if epoch == CLOSE_EPOCH:
        return None
    if epoch != session.next_epoch:
        raise _SessionError(
            ErrorCode.INVALID_SHARE_SESSION_EPOCH,
            f"share session epoch {epoch} is not {session.next_epoch}",
        )
    session.next_epoch = 1 if session.next_epoch == 2**31 - 1 else session.next_epoch + 1
    return session


def _check_ids(body: Any) -> str | None:
    if not body.get("group_id"):
        return "GroupId must be set"
    if not body.get("member_id"):
        return "MemberId must be set"
    return None


def share_partition(
    broker: BrokerView, settings: ShareSettings, group_id: str, topic: str, index: int
) -> tuple[SharePartition, PartitionLog]:
    """The group's share partition (initialised on first use) and this leader's log of it."""
    log = broker.partition_log(topic, index)
    group = broker.share_groups.group(group_id, create=True)
    assert group is not None
    state = group.partitions.get((topic, index))
    if state is None:
        start = _start_offset(log, settings)
        state = group.partitions[topic, index] = SharePartition(start)
    state.skip_to(log.log_start_offset)
    return state, log


def _start_offset(log: PartitionLog, settings: ShareSettings) -> int:
    """Where a share partition without state starts (`share.auto.offset.reset`)."""
    reset = settings.auto_offset_reset
    if reset is OffsetReset.EARLIEST:
        return log.log_start_offset
    if reset is OffsetReset.BY_DURATION:
        since = int(time.time() * 1000) - settings.reset_duration_ms
        offset = log.offset_for_time(since)[0]
        # no record that recent: start at the end, as Kafka does
        return offset if offset >= 0 else log.high_watermark
    return log.high_watermark


def _acknowledge(
    broker: BrokerView,
    settings: ShareSettings,
    body: Any,
    topic: Any,
    part: Any,
) -> tuple[int, str | None]:
    """Apply one partition's acknowledgement batches: (error code, message)."""
    name = topic_name(broker.image, topic)
    if name is None:
        return ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id"
    now = trio.current_time()
    try:
        state, _ = share_partition(
            broker, settings, body["group_id"], name, part["partition_index"]
        )
        for batch in part["acknowledgement_batches"]:
            state.acknowledge(
                body["member_id"],
                batch["first_offset"],
                batch["last_offset"],
                list(batch["acknowledge_types"]),
                delivery_limit=settings.delivery_count_limit,
                renewed_deadline=now + settings.record_lock_duration_ms / 1000,
            )
    except (LogError, AcknowledgeError) as exc:
        return exc.code, str(exc)
    broker.share_groups.wake()
    return ErrorCode.NONE, None


def _leader(broker: BrokerView, name: str | None, index: int) -> dict:
    info = broker.image.partition(name, index) if name is not None else None
    if info is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": info.leader, "leader_epoch": info.leader_epoch}


def _endpoints(broker: BrokerView, leaders: set[int]) -> list[dict]:
    out = []
    for node in sorted(leaders):
        info = broker.image.brokers.get(node)
        if info is not None:
            out.append({"node_id": node, "host": info.host, "port": info.port, "rack": info.rack})
    return out


def _records_for(log: PartitionLog, runs: list[Acquired]) -> bytes:
    """The whole batches holding the acquired offsets (the client reads only those offsets)."""
    parts = []
    for stored in log.batches_from(runs[0].first_offset):
        if stored.base_offset > runs[-1].last_offset:
            break
        if any(
            r.first_offset <= stored.last_offset and stored.base_offset <= r.last_offset
            for r in runs
        ):
            parts.append(stored.data)
    return b"".join(parts)


async def _wait_for_change(broker: BrokerView, deadline: float) -> None:
    """Until new records arrive on this broker, share state changes, or the deadline."""
    with trio.move_on_at(deadline):
        async with trio.open_nursery() as nursery:

            async def first(wait: Callable[[], Awaitable[Any]]) -> None:
                await wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(first, broker.wait_for_data)
            nursery.start_soon(first, broker.share_groups.changed.wait)


@handles(ApiKey.SHARE_FETCH, fail=_fail)
async def share_fetch(ctx: RequestContext, body: Any) -> dict:
    """Acknowledge what the request carries, then acquire and return records."""
    broker = ctx.broker
    problem = _check_ids(body)
    if problem is not None:
        return {**_fail(body, ErrorCode.INVALID_REQUEST, ctx.api_version), "error_message": problem}
    settings = ShareSettings.of(broker.image, body["group_id"])
    shares = broker.share_groups
    shares.remember_limit(body["group_id"], settings.delivery_count_limit)
    acks = [(t, p) for t in body["topics"] for p in t["partitions"] if p["acknowledgement_batches"]]
    if body["share_session_epoch"] == 0 and acks:
        return {
            **_fail(body, ErrorCode.INVALID_REQUEST, ctx.api_version),
            "error_message": "acknowledgements cannot open a share session",
        }
    try:
        session = _session(shares, body, broker.node_id, may_open=True)
    except _SessionError as exc:
        # Kafka 4.4 answers session errors without a message
        return _fail(body, exc.code, ctx.api_version)
    entries: dict[tuple[Any, int], dict] = {}
    for topic, part in acks:
        code, message = _acknowledge(broker, settings, body, topic, part)
        entry = _entry(entries, broker, topic, part["partition_index"])
        entry.update(acknowledge_error_code=code, acknowledge_error_message=message)
    lock_ms = settings.record_lock_duration_ms
    if session is None:
        shares.close_session(
            body["group_id"], body["member_id"], broker.node_id, settings.delivery_count_limit
        )
        return _response(broker, entries, lock_ms)
    for topic in body["topics"]:
        name = topic_name(broker.image, topic)
        for part in topic["partitions"]:
            if name is None:
                entry = _entry(entries, broker, topic, part["partition_index"])
                entry.update(error_code=ErrorCode.UNKNOWN_TOPIC_ID)
            else:
                session.partitions.add((name, part["partition_index"]))
    for topic in body.get("forgotten_topics_data") or []:
        name = topic_name(broker.image, topic)
        for index in topic["partitions"]:
            session.partitions.discard((name or "", index))
    if body.get("is_renew_ack"):
        return _response(broker, entries, lock_ms)
    deadline = trio.current_time() + max(body["max_wait_ms"], 0) / 1000
    while True:
        got = _acquire(broker, settings, body, session, entries)
        failed = any(e["error_code"] for e in entries.values())
        if got or acks or failed or trio.current_time() >= deadline:
            return _response(broker, entries, lock_ms)
        await _wait_for_change(broker, deadline)


def _entry(
    entries: dict[tuple[Any, int], dict], broker: BrokerView, topic: Any, index: int
) -> dict:
    key = (topic["topic_id"], index)
    if key not in entries:
        name = topic_name(broker.image, topic)
        entries[key] = {
            "partition_index": index,
            "error_code": ErrorCode.NONE,
            "acknowledge_error_code": ErrorCode.NONE,
            "current_leader": _leader(broker, name, index),
            "records": b"",
            "acquired_records": [],
        }
    return entries[key]


def _acquire(
    broker: BrokerView,
    settings: ShareSettings,
    body: Any,
    session: ShareSession,
    entries: dict[tuple[Any, int], dict],
) -> int:
    """Acquire from every session partition this broker leads; the records acquired."""
    budget = body.get("max_records") or DEFAULT_MAX_RECORDS
    mode = AcquireMode(body.get("share_acquire_mode", AcquireMode.BATCH_OPTIMIZED))
    deadline = trio.current_time() + settings.record_lock_duration_ms / 1000
    total = 0
    for name, index in sorted(session.partitions):
        info = broker.image.topics.get(name)
        if info is None:
            continue
        topic = {"topic_id": info.topic_id}
        try:
            state, log = share_partition(broker, settings, body["group_id"], name, index)
        except LogError as exc:
            entry = _entry(entries, broker, topic, index)
            entry.update(error_code=exc.code, error_message=str(exc))
            continue
        if total >= budget:
            break
        end = log.last_stable_offset if settings.read_committed else log.high_watermark
        runs = state.acquire(
            body["member_id"],
            ((b.base_offset, b.last_offset) for b in log.batches_from(state.next_offset)),
            end,
            budget - total,
            deadline=deadline,
            max_in_flight=settings.max_record_locks,
            mode=mode,
        )
        if runs and settings.read_committed:
            runs = state.archive(runs, _aborted(log, runs[0].first_offset, runs[-1].last_offset))
        if not runs:
            continue
        total += sum(r.last_offset - r.first_offset + 1 for r in runs)
        entry = _entry(entries, broker, topic, index)
        entry["records"] = _records_for(log, runs)
        entry["acquired_records"] = [
            {
                "first_offset": r.first_offset,
                "last_offset": r.last_offset,
                "delivery_count": r.delivery_count,
            }
            for r in runs
        ]
    if total:
        broker.share_groups.wake()  # the timer learns the new lock deadlines
    return total


def _aborted(log: PartitionLog, first: int, last: int) -> set[int]:
    """Offsets in [first, last] of records whose transaction aborted (the marker excluded)."""
    out: set[int] = set()
    for txn in log.aborted_in(first, last + 1):
        for stored in log.batches_from(txn.first_offset):
            if stored.base_offset >= txn.last_offset:
                break
            for batch in iter_batches(stored.data, verify_crc=False):
                if batch.producer_id == txn.producer_id and not batch.is_control:
                    out.update(range(batch.base_offset, batch.last_offset + 1))
    return {o for o in out if first <= o <= last}


def _response(broker: BrokerView, entries: dict[tuple[Any, int], dict], lock_ms: int) -> dict:
    topics: dict[Any, list[dict]] = {}
    leaders: set[int] = set()
    for (tid, _), entry in entries.items():
        topics.setdefault(tid, []).append(entry)
        if entry["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            leaders.add(entry["current_leader"]["leader_id"])
    return {
        "error_code": ErrorCode.NONE,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": [{"topic_id": tid, "partitions": parts} for tid, parts in topics.items()],
        "node_endpoints": _endpoints(broker, leaders),
    }


@handles(ApiKey.SHARE_ACKNOWLEDGE, fail=_fail)
async def share_acknowledge(ctx: RequestContext, body: Any) -> dict:
    """Apply acknowledgements within the member's share session (-1 also closes it)."""
    broker = ctx.broker
    problem = _check_ids(body)
    if problem is not None:
        return {**_fail(body, ErrorCode.INVALID_REQUEST, ctx.api_version), "error_message": problem}
    settings = ShareSettings.of(broker.image, body["group_id"])
    shares = broker.share_groups
    try:
        session = _session(shares, body, broker.node_id, may_open=False)
    except _SessionError as exc:
        return _fail(body, exc.code, ctx.api_version)
    responses = []
    leaders: set[int] = set()
    for topic in body["topics"]:
        parts = []
        name = topic_name(broker.image, topic)
        for part in topic["partitions"]:
            if not part["acknowledgement_batches"]:
                continue  # Kafka answers only the partitions that acknowledged something
            code, message = _acknowledge(broker, settings, body, topic, part)
            leader = _leader(broker, name, part["partition_index"])
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                leaders.add(leader["leader_id"])
            parts.append(
                {
                    "partition_index": part["partition_index"],
                    "error_code": code,
                    "error_message": message,
                    "current_leader": leader,
                }
            )
        if parts:
            responses.append({"topic_id": topic["topic_id"], "partitions": parts})
    if session is None:
        shares.close_session(
            body["group_id"], body["member_id"], broker.node_id, settings.delivery_count_limit
        )
    return {
        "error_code": ErrorCode.NONE,
        "acquisition_lock_timeout_ms": settings.record_lock_duration_ms,
        "responses": responses,
        "node_endpoints": _endpoints(broker, leaders),
    }
