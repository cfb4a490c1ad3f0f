"""Eligible leader replicas: the target ELR and LastKnownElr (kip-rules D.13-D.16)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .state import NO_LEADER


def target_elr(
    current_isr: Sequence[int],
    current_elr: Sequence[int],
    current_last_known_elr: Sequence[int],
    target_isr: Sequence[int],
    min_isr: int,
    unclean_shutdown: Collection[int] = (),
) -> tuple[list[int], list[int]]:
    """D.13: the ELR and (set-semantics) LastKnownElr a target ISR leaves behind."""
    if len(target_isr) >= min_isr:
        return [], []
    # Only replicas in the last ISR snapshot while it drops under min ISR hold the data up to the
    # HWM, so the ELR grows from the current ISR and never from anywhere else.
    union = set(current_elr).union(current_isr)
    in_isr = set(target_isr)
    elr = sorted(r for r in union if r not in in_isr and r not in unclean_shutdown)
    left = union.union(current_last_known_elr) - in_isr - set(elr)
    return elr, sorted(left)


def last_known_leader(
    current_leader: int,
    current_last_known_elr: Sequence[int],
    record_isr: Sequence[int] | None,
    record_leader: int,
) -> list[int] | None:
    """D.16: the LastKnownElr a change record must carry, or None to leave it unchanged."""
    if (
        record_isr is not None
        and not record_isr
        and current_leader != NO_LEADER
        and list(current_last_known_elr) != [current_leader]
    ):
        return [current_leader]
    # The partition will have, or keeps, a leader: the last known leader is history.
    keeps_leader = record_leader >= 0 or (
        current_leader != NO_LEADER and record_leader != NO_LEADER
    )
    if keeps_leader and current_last_known_elr:
        return []
    return None


def effective_min_isr(min_insync_replicas: int, replica_count: int) -> int:
    """D.13: min(min.insync.replicas, the replica count of partition 0)."""
    return min(min_insync_replicas, replica_count)
