"""One partition on one broker, as handlers see it: its log, its leader state, and `append`.

`Partition.append(records, acks, timeout_ms)` is Kafka's `Partition.appendRecordsToLeader` with
the produce purgatory's wait, the whole acks=all rule of kip-rules A.3 in one place: below min ISR
(the committed ISR) an acks=all append is refused with NOT_ENOUGH_REPLICAS before anything is
written; otherwise the batches go to the log and the answer waits until the high watermark passes
them, then NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR shrank below min ISR meanwhile,
REQUEST_TIMED_OUT when the request's timeout runs out first. Its two halves, `write` (never
waits) and `replicated` (the wait), let a produce of several partitions write them all and then
wait, without a task per partition. The decisions are `isr.LeaderIsr`'s (sans-I/O); the
broker's replication runtime (`replication.py`) moves its high watermark.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import trio

from kipwire.codec import ErrorCode

from .isr import LeaderIsr
from .log import LogError, PartitionLog
from .metadata_image import MetadataImage, PartitionInfo

#: Produce's acks for "every in-sync replica".
ACKS_ALL = -1
#: Kafka's message.max.bytes default: the largest record batch a topic accepts.
DEFAULT_MAX_MESSAGE_BYTES = "1048588"
#: message.timestamp.type's value for broker-stamped timestamps.
LOG_APPEND = "LogAppendTime"
_BATCH_LENGTH = struct.Struct(">i")
_BATCH_LENGTH_AT, _BATCH_OVERHEAD = 8, 12
Key = tuple[str, int]


class Replicas(Protocol):
    """The broker's replication runtime, as a partition uses it."""

    def state(self, key: Key) -> LeaderIsr | None: ...
    def min_isr(self, part: PartitionInfo) -> int: ...
    def appended(self, key: Key) -> None: ...
    def follower_fetched(
        self, key: Key, replica_id: int, replica_epoch: int, offset: int
    ) -> None: ...


class PartitionHost(Protocol):
    """What a partition needs of the broker holding it."""

    node_id: int
    image: MetadataImage
    logs: Mapping[Key, PartitionLog]
    replication: Replicas

    def replica_log(self, topic: str, index: int) -> PartitionLog: ...
    def data_arrived(self) -> None: ...
    async def wait_for_data(self, key: Key | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class Appended:
    """Where a produce landed (the original's offset for a repeated batch), and the log start."""

    base_offset: int
    log_start_offset: int
    #: The broker's time stamped into the batches (LogAppendTime topics), else -1.
    log_append_time: int = -1


class Partition:
    """A partition this broker holds a replica of (`leader_isr` is set while it leads it)."""

    def __init__(self, host: PartitionHost, topic: str, index: int) -> None:
        self._host = host
        self.topic = topic
        self.index = index
        self.key: Key = (topic, index)

    @property
    def log(self) -> PartitionLog:
        """This broker's log of the partition."""
        return self._host.replica_log(self.topic, self.index)

    @property
    def info(self) -> PartitionInfo | None:
        """The partition as the broker's metadata image last described it."""
        return self._host.image.partition(self.topic, self.index)

    @property
    def leader_isr(self) -> LeaderIsr | None:
        """The leader's ISR and HWM state machine, while this broker leads the partition."""
        return self._host.replication.state(self.key)

    @property
    def serves_fetches(self) -> bool:
        """False while a KIP-704 leader is RECOVERING under `recovering_rejects_fetch`."""
        state = self.leader_isr
        return state is None or state.serves_fetches

    def follower_fetched(self, replica_id: int, replica_epoch: int, offset: int) -> None:
        """A follower fetched at `offset`: the leader's ISR and HWM decisions take it in."""
        self._host.replication.follower_fetched(self.key, replica_id, replica_epoch, offset)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool) -> None:
        """A transaction's COMMIT or ABORT marker, written by the leader."""
        self.log.append_marker(producer_id, producer_epoch, commit)
        self._written()

    async def append(self, records: bytes | None, acks: int, timeout_ms: int) -> Appended:
        """Append a produce's batches as the leader; with acks=all, answer once replicated (A.3).

        Raises LogError with the partition's error code: NOT_ENOUGH_REPLICAS before the append,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT after it.
        """
        appended, end = self.write(records, acks)
        if acks == ACKS_ALL:
            await self.replicated(end, trio.current_time() + max(timeout_ms, 0) / 1000)
        return appended

    def write(self, records: bytes | None, acks: int) -> tuple[Appended, int]:
        """`append`'s first half, which never waits: the batches written, and the log end an
        acks=all answer waits for (`replicated`). A produce naming several partitions writes
        each, then waits for them: one deadline, no task per partition."""
        if acks == ACKS_ALL:
            self._check_min_isr()
        if records is None:
            raise LogError(ErrorCode.INVALID_RECORD, "a produce without records")
        check_batch_sizes(self._host.image, self.topic, records)
        log = self.log
        end = log.end_offset
        stamp = None
        if self._host.image.topic_config(self.topic, "message.timestamp.type", "") == LOG_APPEND:
            stamp = int(time.time() * 1000)
        result = log.append(records, log_append_time=stamp)
        appended = Appended(
            result.base_offset, log.log_start_offset, -1 if stamp is None else stamp
        )
        self._written()
        # a repeated batch waits for the end it was first written below
        return appended, max(log.end_offset, end)

    def _written(self) -> None:
        self._host.replication.appended(self.key)
        self._host.data_arrived()

    def _check_min_isr(self) -> None:
        """A.3: the committed ISR must reach min ISR before an acks=all append."""
        state, part = self.leader_isr, self.info
        if state is None or part is None:
            raise LogError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {self._host.node_id} does not lead"
            )
        if not state.enough_replicas_to_append(self._host.replication.min_isr(part)):
            raise LogError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"ISR {list(state.isr)} is smaller than min.insync.replicas",
            )

    async def replicated(self, end: int, deadline: float) -> None:
        """Hold the acks=all answer until the HWM reaches `end`, by trio time `deadline` (A.3);
        at once when it already has."""
        while True:
            state, part = self.leader_isr, self.info
            log = self._host.logs.get(self.key)
            if state is None or part is None or log is None:
                raise LogError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership moved")
            if log.high_watermark >= end:
                if not state.enough_replicas_after_append(self._host.replication.min_isr(part)):
                    raise LogError(
                        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                        f"ISR {list(state.maximal_isr)} shrank below min.insync.replicas",
                    )
                return
            if trio.current_time() >= deadline:
                raise LogError(ErrorCode.REQUEST_TIMED_OUT, "replicas did not catch up in time")
            with trio.move_on_at(deadline):
                await self._host.wait_for_data(self.key)


def check_batch_sizes(image: MetadataImage, topic: str, records: bytes) -> None:
    """MESSAGE_TOO_LARGE when a batch exceeds the topic's max.message.bytes, as Kafka answers."""
    default = image.topic_config(topic, "message.max.bytes", DEFAULT_MAX_MESSAGE_BYTES)
    limit = int(image.topic_config(topic, "max.message.bytes", default))
    view = memoryview(records)
    pos = 0
    # only the length fields are read: a truncated or corrupt batch is the log's to report
    while pos + _BATCH_OVERHEAD <= len(view):
        size = _BATCH_OVERHEAD + _BATCH_LENGTH.unpack_from(view, pos + _BATCH_LENGTH_AT)[0]
        if size > limit:
            raise LogError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"the record batch size in the append to {topic} is {size} bytes, which exceeds"
                f" the maximum configured value of {limit}",
            )
        if size <= _BATCH_OVERHEAD:
            return
        pos += size
