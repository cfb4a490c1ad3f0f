"""Where a group's committed offsets live, whichever kind of group holds its id.

One lookup serves every writer of committed offsets that is not a member's own OffsetCommit:
a committed transaction's TxnOffsetCommit (`transactions.py` takes it as its `OffsetStores`),
whose member and epoch are checked here as Kafka 4.4's OffsetMetadataManager checks them
(`check_txn_commit`).
A KIP-1071 streams group keeps its own offsets; a KIP-848 consumer group its own; any other id
is a classic group's, created when new (a transaction may commit for a group nobody joined).
Share groups commit no offsets (their progress is share-partition state).
"""

from __future__ import annotations

import uuid
from collections.abc import MutableMapping

from kipwire.codec import ErrorCode

from .consumer_group import LEAVE_EPOCH
from .consumer_groups import ConsumerGroupCoordinator
from .groups import CommittedOffset, Group, GroupState
from .streams_groups import StreamsCoordinator

#: TxnOffsetCommit v6 answers GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH; older versions get
#: ILLEGAL_GENERATION for both (TxnOffsetCommitRequest#supportsGroupIdNotFoundError,
#: #supportsStaleMemberEpochError).
NEW_ERRORS_FROM = 6


class GroupOffsets:
    """The committed offsets of any group id, across the streams, consumer and classic kinds."""

    def __init__(self, consumer: ConsumerGroupCoordinator, streams: StreamsCoordinator) -> None:
        self.consumer = consumer
        self.streams = streams

    def offsets_for(self, group_id: str) -> MutableMapping[tuple[str, int], CommittedOffset]:
        """A streams group's own offsets, else the consumer (or classic) group's."""
        streams = self.streams.group(group_id)
        if streams is not None:
            return streams.offsets
        return self.consumer.offsets_for(group_id)

    def check_txn_commit(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        epoch: int,
        partitions: list[tuple[uuid.UUID, int]],
        version: int,
    ) -> int:
        """Whether a TxnOffsetCommit of `partitions` (topic id, index) may write for the group,
        as Kafka 4.4's OffsetMetadataManager#validateTransactionalOffsetCommit decides."""
        code = self._txn_commit_code(group_id, member_id, instance_id, epoch, partitions)
        if version < NEW_ERRORS_FROM and code in (
            ErrorCode.STALE_MEMBER_EPOCH,
            ErrorCode.GROUP_ID_NOT_FOUND,
        ):
            return ErrorCode.ILLEGAL_GENERATION
        return code

    def _txn_commit_code(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        epoch: int,
        partitions: list[tuple[uuid.UUID, int]],
    ) -> int:
        consumer = self.consumer.group(group_id)
        if consumer is not None:
            return consumer.check_txn_commit(member_id, instance_id, epoch, partitions)
        streams = self.streams.group(group_id)
        if streams is not None:
            if (epoch < 0 and not streams.members) or (
                epoch == LEAVE_EPOCH and not member_id and instance_id is None
            ):
                return ErrorCode.NONE
            # the member at its current epoch; Kafka 4.4 also takes an older epoch for the
            # tasks the member held by then (KIP-1251), which the mock does not track
            return streams.check_commit(member_id, epoch)
        classic = self.consumer.classic.group(group_id)
        if classic is None:
            # a producer without group metadata commits for a simple group, created as it stores
            return ErrorCode.NONE if epoch < 0 else ErrorCode.GROUP_ID_NOT_FOUND
        return _classic_txn_commit_code(classic, member_id, instance_id, epoch)


def _classic_txn_commit_code(
    group: Group, member_id: str, instance_id: str | None, epoch: int
) -> int:
    """ClassicGroup#validateOffsetCommit for a transactional commit: no member named, any
    state; a named member must belong to the group's current generation."""
    if group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if epoch < 0 and not member_id and instance_id is None:
        return ErrorCode.NONE
    if epoch < 0 and group.state is GroupState.EMPTY:
        return ErrorCode.NONE
    if member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if epoch != group.generation:
        return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE
