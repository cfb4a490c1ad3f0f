"""Leader elections on request (ElectLeaders v0-v3) and the periodic unclean election (E.25)."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ElectionType, ErrorCode, UncleanRecoveryStrategy

from .configs import unclean_election_enabled
from .draft import Draft, change_partition, is_active
from .election import Election
from .partition_change import Target
from .result import ControllerResult, ControllerView
from .state import NO_LEADER

# ElectLeaders v3 (a project extension, the KIP's kafka-leader-election.sh): unclean recovery.
_RECOVERY_STRATEGIES = {
    ElectionType.LONGEST_LOG_AGGRESSIVE: UncleanRecoveryStrategy.AGGRESSIVE,
    ElectionType.LONGEST_LOG_BALANCED: UncleanRecoveryStrategy.BALANCED,
}


def elect_one(
    draft: Draft, topic: str, index: int, election_type: int, desired: int | None = None
) -> tuple[int, str | None]:
    """RCM#electLeader for one partition (E.22, E.25): (error code, message)."""
    t = draft.state.topic(topic)
    p = t.partitions.get(index) if t is not None else None
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {topic}-{index}"
    if desired is not None:
        if p.leader != NO_LEADER:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        change = change_partition(
            draft, p, Target(election=Election.DESIGNATED, designated_leader=desired)
        )
        if change.record is None or change.record.get("leader", NO_LEADER) == NO_LEADER:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"{desired} cannot lead"
        return ErrorCode.NONE, None
    if election_type in _RECOVERY_STRATEGIES:
        if p.leader != NO_LEADER:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        if not any(is_active(draft.state, r) for r in p.replicas):
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no live replica to ask"
        draft.start_recovery(p, _RECOVERY_STRATEGIES[election_type])
        return ErrorCode.NONE, None
    if election_type == ElectionType.PREFERRED and p.replicas and p.leader == p.replicas[0]:
        return ErrorCode.ELECTION_NOT_NEEDED, None
    if election_type == ElectionType.UNCLEAN and p.leader != NO_LEADER:
        return ErrorCode.ELECTION_NOT_NEEDED, None
    election = Election.PREFERRED if election_type == ElectionType.PREFERRED else Election.UNCLEAN
    change = change_partition(draft, p, Target(election=election))
    if change.record is None:
        if election_type == ElectionType.PREFERRED:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
    return ErrorCode.NONE, None


def elect_leaders(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """ElectLeaders v0-v3 (RCM#electLeaders, E.22, E.25); v3 adds DesiredLeaders (designation)
    and the longest-log election types (the KIP's unclean recovery, E.26)."""
    draft = Draft(view)
    election_type = (
        body.get("election_type", ElectionType.PREFERRED)
        if version >= 1
        else ElectionType.PREFERRED
    )
    allowed = (ElectionType.PREFERRED, ElectionType.UNCLEAN) + (
        tuple(_RECOVERY_STRATEGIES) if version >= 3 else ()
    )
    if election_type not in allowed:
        return draft.result(
            {"error_code": ErrorCode.INVALID_REQUEST, "replica_election_results": []}
        )
    results = []
    if body["topic_partitions"] is None:
        # Every partition; those that already have the wanted leader are left out, as in Kafka
        # (which still lists each topic, with no partitions when none needed an election).
        for t in list(draft.state.topics.values()):
            parts = []
            for index in sorted(t.partitions):
                code, msg = elect_one(draft, t.name, index, election_type)
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
                    code, msg = elect_one(draft, t["topic"], index, election_type, wanted)
                parts.append({"partition_id": index, "error_code": code, "error_message": msg})
            results.append({"topic": t["topic"], "partition_result": parts})
    return draft.result({"error_code": ErrorCode.NONE, "replica_election_results": results})


def elect_unclean_leaders(view: ControllerView) -> ControllerResult:
    """RCM#maybeElectUncleanLeaders: UNCLEAN elections for leaderless partitions of topics that
    allow them (E.25); with the KIP's recovery on, the recovery manager takes them instead."""
    draft = Draft(view)
    if draft.settings.semantics.unclean_recovery:
        return draft.result()
    # only the leaderless partitions (an index kept by replay): an idle tick costs nothing
    enabled: dict[str, bool] = {}
    for p in draft.state.leaderless_partitions():
        if p.topic not in enabled:
            enabled[p.topic] = unclean_election_enabled(draft.state, p.topic)
        if enabled[p.topic]:
            change_partition(draft, p, Target(election=Election.UNCLEAN))
    return draft.result()
