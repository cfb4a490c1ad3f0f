"""Leader elections on request (ElectLeaders v0-v3) and the periodic unclean election (E.25)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kipwire.codec import ErrorCode

from .configs import unclean_election_enabled
from .election import Election
from .partition_change import Target
from .state import NO_LEADER

if TYPE_CHECKING:
    from .controller import Controller

PREFERRED = 0
UNCLEAN = 1
# Project extension (ElectLeaders v3, the KIP's kafka-leader-election.sh): unclean recovery.
LONGEST_LOG_AGGRESSIVE = 2
LONGEST_LOG_BALANCED = 3


def elect_one(
    ctl: Controller, topic: str, index: int, election_type: int, desired: int | None = None
) -> tuple[int, str | None]:
    """RCM#electLeader for one partition: (error code, message)."""
    t = ctl.state.topic(topic)
    p = t.partitions.get(index) if t is not None else None
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {topic}-{index}"
    if desired is not None:
        if p.leader != NO_LEADER:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        change = ctl.change_partition(
            p, Target(election=Election.DESIGNATED, designated_leader=desired)
        )
        if change.record is None or change.record.get("leader", NO_LEADER) == NO_LEADER:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"{desired} cannot lead"
        return ErrorCode.NONE, None
    if election_type in (LONGEST_LOG_AGGRESSIVE, LONGEST_LOG_BALANCED):
        if p.leader != NO_LEADER:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        strategy = "Aggressive" if election_type == LONGEST_LOG_AGGRESSIVE else "Balanced"
        if not ctl.recovery.start(p, strategy):
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no live replica to ask"
        return ErrorCode.NONE, None
    if election_type == PREFERRED and p.replicas and p.leader == p.replicas[0]:
        return ErrorCode.ELECTION_NOT_NEEDED, None
    if election_type == UNCLEAN and p.leader != NO_LEADER:
        return ErrorCode.ELECTION_NOT_NEEDED, None
    election = Election.PREFERRED if election_type == PREFERRED else Election.UNCLEAN
    change = ctl.change_partition(p, Target(election=election))
    if change.record is None:
        if election_type == PREFERRED:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
    return ErrorCode.NONE, None


def handle(ctl: Controller, version: int, body: Any) -> dict:
    """ElectLeaders v0-v3 (RCM#electLeaders); v3 adds DesiredLeaders (designation)."""
    election_type = body.get("election_type", PREFERRED) if version >= 1 else PREFERRED
    allowed = (PREFERRED, UNCLEAN) + (
        (LONGEST_LOG_AGGRESSIVE, LONGEST_LOG_BALANCED) if version >= 3 else ()
    )
    if election_type not in allowed:
        return {"error_code": ErrorCode.INVALID_REQUEST, "replica_election_results": []}
    results = []
    if body["topic_partitions"] is None:
        # Every partition; those that already have the wanted leader are left out, as in Kafka
        # (which still lists each topic, with no partitions when none needed an election).
        for t in list(ctl.state.topics.values()):
            parts = []
            for index in sorted(t.partitions):
                code, msg = elect_one(ctl, t.name, index, election_type)
                if code != ErrorCode.ELECTION_NOT_NEEDED:
                    parts.append({"partition_id": index, "error_code": code, "error_message": msg})
            results.append({"topic": t.name, "partition_result": parts})
    else:
        for t in body["topic_partitions"]:
            desired = t.get("desired_leaders") if version >= 3 else None
            parts = []
            for i, index in enumerate(t["partitions"]):
                if desired is not None and len(desired) != len(t["partitions"]):
                    code, msg = ErrorCode.INVALID_REQUEST, "DesiredLeaders and Partitions differ"
                else:
                    wanted = desired[i] if desired is not None else None
                    code, msg = elect_one(ctl, t["topic"], index, election_type, wanted)
                parts.append({"partition_id": index, "error_code": code, "error_message": msg})
            results.append({"topic": t["topic"], "partition_result": parts})
    return {"error_code": ErrorCode.NONE, "replica_election_results": results}


def elect_unclean_leaders(ctl: Controller) -> None:
    """RCM#maybeElectUncleanLeaders: UNCLEAN elections for leaderless partitions of topics that
    allow them (E.25); with the KIP's recovery on, the recovery manager takes them instead."""
    for t in list(ctl.state.topics.values()):
        if not unclean_election_enabled(ctl.state, t.name):
            continue
        for p in list(t.partitions.values()):
            if p.leader == NO_LEADER and not ctl.semantics.unclean_recovery:
                ctl.change_partition(p, Target(election=Election.UNCLEAN))
