"""Who may lead a partition, and in which order the candidates are tried (kip-rules E.20-E.22)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum

from .state import NO_LEADER


class Election(Enum):
    """PartitionChangeBuilder's election modes; DESIGNATED is the KIP's ElectLeaders designation."""

    ONLINE = "online"
    UNCLEAN = "unclean"
    PREFERRED = "preferred"
    DESIGNATED = "designated"


class Candidates:
    """The targets an election runs against: E.20's valid and acceptable leaders."""

    __slots__ = ("isr", "elr", "replicas", "acceptable", "last_known_leader")

    def __init__(
        self,
        isr: Sequence[int],
        elr: Sequence[int],
        replicas: Sequence[int],
        acceptable: Callable[[int], bool],
        last_known_leader: int | None,
    ) -> None:
        self.isr = isr
        self.elr = elr
        self.replicas = replicas
        self.acceptable = acceptable
        # E.21 step 3: set only when it may be elected (ELR on, ISR and ELR empty, one entry).
        self.last_known_leader = last_known_leader

    def valid(self, replica: int) -> bool:
        """E.20: acceptable and in the target ISR, or in the target ELR when the ISR is empty."""
        if replica == NO_LEADER:
            return False
        in_set = replica in self.isr or (not self.isr and replica in self.elr)
        return in_set and self.acceptable(replica)


def elect(
    c: Candidates, current_leader: int, election: Election, designated: int | None = None
) -> tuple[int, bool]:
    """The new leader and whether the election was unclean (E.21, E.22); -1 for none."""
    if election is Election.DESIGNATED:
        return _designated(c, designated)
    if election is Election.PREFERRED:
        return _preferred(c, current_leader)
    if c.valid(current_leader):
        return current_leader, False
    for replica in c.replicas:
        if c.valid(replica):
            return replica, False
    if c.last_known_leader is not None:
        return c.last_known_leader, True
    if election is Election.UNCLEAN:
        for replica in c.replicas:
            if c.acceptable(replica):
                return replica, True
    return NO_LEADER, False


def _preferred(c: Candidates, current_leader: int) -> tuple[int, bool]:
    if c.replicas and c.valid(c.replicas[0]):
        return c.replicas[0], False
    if c.valid(current_leader):
        return current_leader, False
    for replica in c.replicas[1:]:
        if c.valid(replica):
            return replica, False
    if c.last_known_leader is not None:
        return c.last_known_leader, True
    return NO_LEADER, False


def _designated(c: Candidates, designated: int | None) -> tuple[int, bool]:
    # The operator picks the replica; it is clean only if E.20 would have allowed it anyway.
    if designated is None or designated not in c.replicas or not c.acceptable(designated):
        return NO_LEADER, False
    return designated, not c.valid(designated)
