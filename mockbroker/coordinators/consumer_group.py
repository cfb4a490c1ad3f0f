"""One KIP-848 consumer group's state: its members, epochs, target assignment and offsets.

`consumer_groups.py` moves it (heartbeats, reconciliation, timers); this module holds what a
group is and what reading it takes: its state as ConsumerGroupDescribe and ListGroups report it,
the partitions each member owns, and the member-epoch checks of OffsetCommit and OffsetFetch.
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from kipwire.codec import ErrorCode

from .assignors import Assignment
from .groups import CommittedOffset

JOIN_EPOCH, LEAVE_EPOCH, LEAVE_STATIC_EPOCH = 0, -1, -2
#: OffsetCommit v9 carries a member epoch; members of consumer groups must use it.
MEMBER_EPOCH_COMMITS_FROM = 9
#: Topics the group may see: name -> (topic id, partition count).
Topics = Mapping[str, tuple[uuid.UUID, int]]
Offsets = dict[tuple[str, int], CommittedOffset]


class MemberState(enum.Enum):
    """Where a member stands on its way to its target assignment (Kafka's MemberState)."""

    STABLE = "STABLE"
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"


class ConsumerGroupState(enum.Enum):
    """The states ConsumerGroupDescribe and ListGroups report for a consumer group."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class ClassicMetadata:
    """What a member speaking the classic protocol (JoinGroup) inside a consumer group sent."""

    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    #: the ConsumerProtocolSubscription version it speaks (its assignment is sent back in it)
    version: int


@dataclass(slots=True)
class ConsumerMember:
    """A member of a consumer group."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = "/127.0.0.1"
    rebalance_timeout_ms: int = -1
    subscribed_names: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    server_assignor: str | None = None
    epoch: int = 0
    previous_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    revoking: Assignment = field(default_factory=dict)
    session_deadline: float = 0.0
    revoke_deadline: float = 0.0
    #: set for a member that joined with JoinGroup (a consumer group's online migration)
    classic: ClassicMetadata | None = None
    #: (topic id, partition) -> the member epoch it was assigned at, for every partition the
    #: member holds or is revoking (KIP-1251's assignment and pending-revocation epochs)
    assignment_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)

    def settle_assignment_epochs(self) -> None:
        """Partitions newly assigned take the current epoch; those let go are forgotten."""
        held = {
            (t, p) for part in (self.assigned, self.revoking) for t, ps in part.items() for p in ps
        }
        for key in [k for k in self.assignment_epochs if k not in held]:
            del self.assignment_epochs[key]
        for topic, partitions in self.assigned.items():
            for index in partitions:
                self.assignment_epochs.setdefault((topic, index), self.epoch)

    def subscription(self) -> tuple:
        """What a change of bumps the group epoch."""
        return (self.subscribed_names, self.subscribed_regex, self.server_assignor)

    def topics(self, topics: Topics) -> set[str]:
        """The existing topics this member subscribes to, by name or by its regex."""
        names = {n for n in self.subscribed_names if n in topics}
        if self.subscribed_regex is not None:
            pattern = re.compile(self.subscribed_regex)
            names.update(n for n in topics if pattern.fullmatch(n))
        return names


class ConsumerGroup:
    """One consumer group: members, epochs, the target assignment and committed offsets."""

    def __init__(self, group_id: str, offsets: Offsets | None = None) -> None:
        self.group_id = group_id
        self.epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.target: dict[str, Assignment] = {}
        self.subscription: dict[str, tuple[uuid.UUID, int]] = {}
        self.offsets: Offsets = offsets if offsets is not None else {}

    @property
    def state(self) -> ConsumerGroupState:
        """Empty, Assigning (target behind the group epoch), Reconciling, or Stable."""
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.assignment_epoch < self.epoch:
            return ConsumerGroupState.ASSIGNING
        settled = all(
            m.epoch == self.assignment_epoch and m.state is MemberState.STABLE
            for m in self.members.values()
        )
        return ConsumerGroupState.STABLE if settled else ConsumerGroupState.RECONCILING

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        """The member holding a group.instance.id."""
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for, else the default (first configured)."""
        votes: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor is not None:
                votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
        if votes:
            return max(sorted(votes), key=votes.__getitem__)
        return default

    def subscribed_topics(self, topics: Topics) -> set[str]:
        """Every existing topic some member subscribes to."""
        return set().union(*(m.topics(topics) for m in self.members.values()))

    def check_commit(self, member_id: str, member_epoch: int, version: int) -> int:
        """Whether an OffsetCommit may write (Kafka's ConsumerGroup#validateOffsetCommit): a
        memberless commit while the group is empty, else a member at its current epoch."""
        if member_epoch < 0 and not self.members:
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is not None:
            # a classic member commits with its generation, which is its member epoch
            return ErrorCode.NONE if member_epoch == member.epoch else ErrorCode.ILLEGAL_GENERATION
        if version < MEMBER_EPOCH_COMMITS_FROM:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def check_txn_commit(
        self,
        member_id: str,
        instance_id: str | None,
        member_epoch: int,
        partitions: list[tuple[uuid.UUID, int]],
    ) -> int:
        """Whether a TxnOffsetCommit may write, as Kafka 4.4's ConsumerGroup#validateOffsetCommit
        checks a transactional commit: a producer without group metadata (epoch -1, no member)
        always; else a known member at its epoch, or at an older one for partitions it was
        assigned by then (KIP-1251); STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for a classic
        member) otherwise."""
        if member_epoch < 0 and not self.members:
            return ErrorCode.NONE
        if member_epoch == LEAVE_EPOCH and not member_id and instance_id is None:
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        stale = ErrorCode.ILLEGAL_GENERATION if member.classic else ErrorCode.STALE_MEMBER_EPOCH
        if member_epoch > member.epoch:
            return stale
        for key in partitions if member_epoch < member.epoch else ():
            assigned_at = member.assignment_epochs.get(key)
            if assigned_at is None or member_epoch < assigned_at:
                return stale
        return ErrorCode.NONE

    def check_fetch(self, member_id: str | None, member_epoch: int) -> int:
        """Whether an OffsetFetch (v9+) may read: an admin (no member, epoch -1) or a member at
        its current epoch."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def is_subscribed(self, topic: str, topics: Topics) -> bool:
        """Whether a member subscribes to the topic (OffsetDelete refuses its offsets)."""
        return any(topic in m.topics(topics) for m in self.members.values())

    def owners(self, excluding: str) -> set[tuple[uuid.UUID, int]]:
        """Partitions another member still owns (assigned or waiting for its revocation)."""
        owned = set()
        for member in self.members.values():
            if member.member_id == excluding:
                continue
            for held in (member.assigned, member.revoking):
                owned.update((t, p) for t, ps in held.items() for p in ps)
        return owned


def overlaps(a: Assignment, b: Assignment) -> bool:
    """Whether two assignments share a partition."""
    return any(a.get(t, frozenset()) & ps for t, ps in b.items())


def within(owned: Assignment | None, assigned: Assignment) -> bool:
    """Whether every owned partition is in the assignment (False when owned is unknown)."""
    return owned is not None and all(ps <= assigned.get(t, frozenset()) for t, ps in owned.items())
