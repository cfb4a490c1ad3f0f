"""KIP-966's controller metrics (I.34): election counters from the log, gauges from the state."""

from __future__ import annotations

from typing import Any

from .draft import min_isr
from .metadata_log import LogEntry
from .recovery import Recovery
from .state import NO_LEADER, NO_LEADER_CHANGE, ClusterState


class Metrics:
    """Counters fed by every appended record, before it is replayed."""

    def __init__(self, elr_metric: bool) -> None:
        self.elr_metric = elr_metric
        self.unclean_elections = 0
        self.elr_elections = 0

    def observe(self, state: ClusterState, entry: LogEntry) -> None:
        """Count the election a PartitionChangeRecord makes (ControllerMetricsChanges)."""
        if entry.name != "PartitionChangeRecord":
            return
        leader = entry.record.get("leader", NO_LEADER_CHANGE)
        if leader in (NO_LEADER_CHANGE, NO_LEADER):
            return
        topic = state.topics.get(entry.record["topic_id"])
        p = topic.partitions.get(entry.record["partition_id"]) if topic is not None else None
        if p is None or leader in p.isr:
            return
        # Before 4.1 an ELR election is counted as unclean (its leader was not in the ISR).
        if self.elr_metric and leader in p.elr:
            self.elr_elections += 1
        else:
            self.unclean_elections += 1

    def report(self, state: ClusterState, recovery: Recovery) -> dict[str, Any]:
        """The metrics as a dict of names to numbers (per-partition gauges keyed topic-index)."""
        electable = {}
        under = at = offline = 0
        for p in state.partitions():
            electable[f"{p.topic}-{p.partition_id}"] = len(p.isr) + len(p.elr)
            least = min_isr(state, p.topic)
            under += len(p.isr) < least
            at += len(p.isr) == least
            offline += p.leader == NO_LEADER
        return {
            "electable_leaders": electable,
            "global_under_min_isr_partition_count": under,
            "at_min_isr_partition_count": at,
            "offline_partition_count": offline,
            "unclean_leader_elections": self.unclean_elections,
            "election_from_eligible_leader_replicas": self.elr_elections,
            # The KIP's recovery gauges; shipped Kafka has no recovery manager, so they stay 0.
            "unclean_recovery_partitions_count": (
                len(recovery.pending) + recovery.waiting(state) if recovery.enabled else 0
            ),
            "manual_leader_election_required_partition_count": (
                recovery.waiting_for_operator(state) if recovery.enabled else 0
            ),
            "unclean_recovery_finished_count": recovery.finished,
        }
