"""The partition-change builder: a partition state and targets in, one record out (D.12)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple
from uuid import UUID

from kipwire.codec import LeaderRecoveryState

from .directories import new_directories
from .election import Candidates, Election, elect
from .elr import last_known_leader, target_elr
from .features import MV_3_2_IV0, MV_3_6_IV0, MV_3_7_IV2, MV_4_0_IV1
from .semantics import Semantics
from .state import NO_LEADER, PartitionState


class Rules(NamedTuple):
    """What the builder needs to know beyond the partition: cluster settings and liveness."""

    acceptable: Callable[[int], bool]
    min_isr: int
    elr_enabled: bool
    metadata_version: int
    semantics: Semantics
    #: The directory a replica new to the partition starts in (`directories.default_dir`);
    #: None leaves the Directories field alone.
    default_dir: Callable[[int], UUID] | None = None


@dataclass
class Target:
    """What the caller wants; None keeps the partition's current value."""

    isr: Sequence[int] | None = None
    replicas: Sequence[int] | None = None
    adding: Sequence[int] | None = None
    removing: Sequence[int] | None = None
    leader_recovery_state: int | None = None
    election: Election = Election.ONLINE
    unclean_shutdown: Collection[int] = field(default_factory=tuple)
    designated_leader: int | None = None
    #: broker -> the log directory it reports the replica in (AssignReplicasToDirs).
    directories: Mapping[int, UUID] | None = None


class Change(NamedTuple):
    """The record to append (None when nothing changes) and how its leader was chosen."""

    record: dict | None
    unclean: bool = False
    from_elr: bool = False


def complete_reassignment(
    replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int], isr: Sequence[int]
) -> tuple[list[int], list[int]] | None:
    """F.30: (replicas, ISR) once the ISR minus removing is non-empty and holds every target."""
    if not adding and not removing:
        return None
    new_isr = [r for r in isr if r not in removing]
    new_replicas = [r for r in replicas if r not in removing]
    if not new_isr or not set(new_replicas) <= set(new_isr):
        return None
    return new_replicas, new_isr


def build_change(p: PartitionState, t: Target, rules: Rules) -> Change:
    """Run D.12's steps in order and return the PartitionChangeRecord they produce."""
    isr = list(p.isr if t.isr is None else t.isr)
    replicas = list(p.replicas if t.replicas is None else t.replicas)
    adding = list(p.adding_replicas if t.adding is None else t.adding)
    removing = list(p.removing_replicas if t.removing is None else t.removing)
    lrs = p.leader_recovery_state if t.leader_recovery_state is None else t.leader_recovery_state
    elr_on = rules.elr_enabled
    set_semantics = rules.semantics.last_known_elr == "set"

    # 1. complete the reassignment if possible
    done = complete_reassignment(replicas, adding, removing, isr)
    if done is not None:
        replicas, isr = done
        adding, removing = [], []

    # 2. maybePopulateTargetElr
    elr, lke = list(p.elr), list(p.last_known_elr)
    if elr_on:
        elr, lke = target_elr(
            p.isr, p.elr, p.last_known_elr, isr, rules.min_isr, t.unclean_shutdown
        )

    # 3. the election
    record: dict = {"partition_id": p.partition_id, "topic_id": p.topic_id}
    lkl = None
    if (
        elr_on
        and not set_semantics
        and not isr
        and not elr
        and len(p.last_known_elr) == 1
        and (
            not rules.semantics.last_known_leader_must_be_live
            or rules.acceptable(p.last_known_elr[0])
        )
    ):
        lkl = p.last_known_elr[0]
    candidates = Candidates(isr, elr, replicas, rules.acceptable, lkl)
    leader, unclean = elect(candidates, p.leader, t.election, t.designated_leader)
    from_elr = False
    if leader != p.leader:
        record["leader"] = leader
        if unclean:
            # The new leader may lack committed data: it is the only replica known to be in sync.
            record["isr"] = [leader]
            recovering = LeaderRecoveryState.RECOVERING
            if p.leader_recovery_state != recovering and rules.metadata_version >= MV_3_2_IV0:
                record["leader_recovery_state"] = recovering
        elif leader != NO_LEADER and not isr and leader in elr:
            from_elr = True
            isr = [leader]
            elr = [r for r in elr if r != leader]

    # 4. the leader-epoch bump for replica removal
    if "leader" not in record and not set(p.replicas) <= set(replicas):
        record["leader"] = p.leader

    # 5. maybeUpdateRecordElr
    if "isr" in record or not elr_on:
        elr, lke = [], []
    if rules.metadata_version >= MV_4_0_IV1:
        if elr != p.elr:
            record["eligible_leader_replicas"] = elr
        if set_semantics and lke != p.last_known_elr:
            record["last_known_elr"] = lke

    # 6. set the ISR (an empty ISR only with ELR on, D.15)
    if "isr" not in record and (isr or elr_on) and isr != p.isr:
        record["isr"] = isr

    # 7. (old MVs only) the leader-epoch bump for an ISR shrink
    if (
        rules.metadata_version < MV_3_6_IV0
        and "leader" not in record
        and "isr" in record
        and not set(p.isr) <= set(record["isr"])
    ):
        record["leader"] = p.leader

    # 8. maybeUpdateLastKnownLeader
    if elr_on and not set_semantics:
        update = last_known_leader(
            p.leader, p.last_known_elr, record.get("isr"), record.get("leader", -2)
        )
        if update is not None:
            record["last_known_elr"] = update

    # 9. the assignment fields, the directories first (setAssignmentChanges)
    if rules.default_dir is not None and rules.metadata_version >= MV_3_7_IV2:
        dirs = new_directories(p, replicas, t.directories or {}, rules.default_dir)
        if dirs is not None:
            record["directories"] = dirs
    if replicas != p.replicas:
        record["replicas"] = replicas
    if adding != p.adding_replicas:
        record["adding_replicas"] = adding
    if removing != p.removing_replicas:
        record["removing_replicas"] = removing

    # 10. LeaderRecoveryState
    if "leader_recovery_state" not in record and lrs != p.leader_recovery_state:
        record["leader_recovery_state"] = lrs

    # 11. drop the record if nothing changed
    if len(record) == 2:
        return Change(None)
    return Change(record, unclean=unclean and leader != p.leader, from_elr=from_elr)
