"""Broker lifecycle: registration, heartbeats, fencing, controlled and unclean shutdown (D.17,
D.18). The ELR rule on clean shutdown is `elr_on_clean_shutdown`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kipwire.codec import ErrorCode

from .draft import Draft, change_partition, election_mode, is_active
from .features import METADATA_VERSION, MV_3_3_IV2, MV_3_3_IV3
from .partition_change import Target
from .result import ControllerResult, ControllerView
from .state import NO_LEADER, PartitionState

# BrokerRegistrationChangeRecord values (Kafka's BrokerRegistrationFencingChange and
# BrokerRegistrationInControlledShutdownChange).
FENCE = 1
UNFENCE = -1
IN_CONTROLLED_SHUTDOWN = 1


def has_live_session(draft: Draft, broker_id: int) -> bool:
    """A heartbeat arrived within the session timeout and the broker is unfenced."""
    last = draft.session(broker_id)
    b = draft.state.brokers.get(broker_id)
    if last is None or b is None or b.fenced:
        return False
    return draft.now_ms - last <= draft.settings.session_timeout_ms


def _isr_partitions(draft: Draft, broker_id: int) -> list[PartitionState]:
    return [p for p in draft.state.partitions() if broker_id in p.isr]


def _elr_partitions(draft: Draft, broker_id: int) -> list[PartitionState]:
    return [p for p in draft.state.partitions() if broker_id in p.elr]


def update_partitions(
    draft: Draft,
    partitions: Iterable[PartitionState],
    *,
    remove: int = NO_LEADER,
    add: int = NO_LEADER,
    unclean: int = NO_LEADER,
) -> None:
    """RCM#generateLeaderAndIsrUpdates: drop `remove`/`unclean` from each ISR, re-elect (D.17)."""

    def acceptable(r: int) -> bool:
        return r != remove and r != unclean and (r == add or is_active(draft.state, r))

    gone = tuple(b for b in (remove, unclean) if b != NO_LEADER)
    for p in partitions:
        target = Target(
            isr=[r for r in p.isr if r not in gone],
            election=election_mode(draft.state, p.topic),
            unclean_shutdown=(unclean,) if unclean != NO_LEADER else (),
        )
        change_partition(draft, p, target, acceptable)


def _change_record(draft: Draft, broker_id: int, version: int, **fields: int) -> None:
    # Kafka writes v0 to fence or unfence and v1 for controlled shutdown, whatever the MV.
    b = draft.state.brokers[broker_id]
    draft.add(
        "BrokerRegistrationChangeRecord",
        {"broker_id": broker_id, "broker_epoch": b.epoch, **fields},
        version,
    )


def write_fence(draft: Draft, broker_id: int) -> None:
    """RCM#handleBrokerFenced (D.17): leave every ISR and leadership, then the fence record."""
    b = draft.state.brokers.get(broker_id)
    if b is None:
        raise KeyError(f"broker {broker_id} is not registered")
    update_partitions(draft, _isr_partitions(draft, broker_id), remove=broker_id)
    draft.end_session(broker_id)
    if b.fenced:
        return
    if draft.state.metadata_version >= MV_3_3_IV2:
        _change_record(draft, broker_id, 0, fenced=FENCE)
    else:
        draft.add("FenceBrokerRecord", {"id": broker_id, "epoch": b.epoch})


def fence(view: ControllerView, broker_id: int) -> ControllerResult:
    """Fence a broker as a missed session timeout does (D.17); KeyError if it is unknown."""
    draft = Draft(view)
    write_fence(draft, broker_id)
    return draft.result()


def _unfence(draft: Draft, broker_id: int) -> None:
    """RCM#handleBrokerUnfenced (D.17): the unfence record, then elections for leaderless
    partitions (the KIP's recovery rescans after every request, E.26)."""
    b = draft.state.brokers[broker_id]
    if draft.state.metadata_version >= MV_3_3_IV2:
        _change_record(draft, broker_id, 0, fenced=UNFENCE)
    else:
        draft.add("UnfenceBrokerRecord", {"id": broker_id, "epoch": b.epoch})
    update_partitions(draft, draft.state.leaderless_partitions(), add=broker_id)


def _controlled_shutdown(draft: Draft, broker_id: int) -> None:
    """RCM#handleBrokerInControlledShutdown (D.17): mark it, then leave every ISR and lead."""
    b = draft.state.brokers[broker_id]
    if not b.in_controlled_shutdown and draft.state.metadata_version >= MV_3_3_IV3:
        _change_record(draft, broker_id, 1, in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN)
    update_partitions(draft, _isr_partitions(draft, broker_id), remove=broker_id)


def elr_on_clean_shutdown(draft: Draft, broker_id: int, clean: bool) -> None:
    """D.18, the ELR rule on clean shutdown (RCM#handleBrokerShutdown), for a new incarnation:
    a clean stop (or ELR off) takes the fence path over ISR partitions, so the broker stays in
    every ELR; an unclean stop with ELR on drops it from every ISR, then from every ELR."""
    if draft.state.elr_enabled and not clean:
        update_partitions(draft, _isr_partitions(draft, broker_id), unclean=broker_id)
        update_partitions(draft, _elr_partitions(draft, broker_id), unclean=broker_id)
    else:
        write_fence(draft, broker_id)


def leads_anything(draft: Draft, broker_id: int) -> bool:
    """Whether the broker leads any partition."""
    return any(p.leader == broker_id for p in draft.state.partitions())


def expire_sessions(view: ControllerView) -> ControllerResult:
    """Fence every unfenced broker whose heartbeat session timed out (D.17), in id order."""
    draft = Draft(view)
    for broker_id, last in sorted(view.sessions.items()):
        if draft.now_ms - last > draft.settings.session_timeout_ms:
            b = draft.state.brokers.get(broker_id)
            if b is not None and not b.fenced:
                write_fence(draft, broker_id)
            draft.end_session(broker_id)
    return draft.result()


# -- the APIs ----------------------------------------------------------------------------------


def _clean_restart(version: int, body: Any, epoch: int, draft: Draft) -> bool:
    # D.18 [4.x]: clean when the request (v3+) carries the epoch the stopped broker registered.
    return (
        draft.settings.semantics.clean_shutdown_detection
        and version >= 3
        and body.get("previous_broker_epoch", -1) == epoch
    )


def register_broker(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """BrokerRegistration v0-v4 (CCM#registerBroker, D.18): a new incarnation's cleanup
    records, then a RegisterBrokerRecord whose offset is the new broker epoch; starts fenced."""
    draft = Draft(view)
    broker_id = body["broker_id"]
    if body["cluster_id"] != draft.settings.cluster_id:
        return draft.result({"error_code": ErrorCode.INCONSISTENT_CLUSTER_ID})
    existing = draft.state.brokers.get(broker_id)
    incarnation = body["incarnation_id"]
    if (
        existing is not None
        and existing.incarnation_id != incarnation
        and has_live_session(draft, broker_id)
    ):
        return draft.result({"error_code": ErrorCode.DUPLICATE_BROKER_REGISTRATION})
    mv = draft.state.metadata_version
    for feature in body["features"]:
        if feature["name"] == METADATA_VERSION and not (
            feature["min_supported_version"] <= mv <= feature["max_supported_version"]
        ):
            return draft.result({"error_code": ErrorCode.UNSUPPORTED_VERSION})
    if existing is not None and existing.incarnation_id != incarnation:
        clean = _clean_restart(version, body, existing.epoch, draft)
        elr_on_clean_shutdown(draft, broker_id, clean)
    draft.end_session(broker_id)
    # Kafka's broker epoch is the offset of the registration record.
    epoch = draft.next_offset
    draft.add(
        "RegisterBrokerRecord",
        {
            "broker_id": broker_id,
            "incarnation_id": incarnation,
            "broker_epoch": epoch,
            "end_points": [
                {
                    "name": lst["name"],
                    "host": lst["host"],
                    "port": lst["port"],
                    "security_protocol": lst["security_protocol"],
                }
                for lst in body["listeners"]
            ],
            "features": [dict(f) for f in body["features"]],
            "rack": body["rack"],
            "fenced": True,
            "in_controlled_shutdown": False,
            "log_dirs": list(body.get("log_dirs") or ()),
        },
    )
    return draft.result({"error_code": ErrorCode.NONE, "broker_epoch": epoch})


def broker_heartbeat(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """BrokerHeartbeat v0-v2 (BrokerHeartbeatManager#calculateNextBrokerState): unfence a
    caught-up broker, walk a shutting-down one through controlled shutdown (D.17).

    v2's CordonedLogDirs (KIP-1066) are accepted and not recorded: the mock's brokers have one
    in-memory log per partition, so there is no log dir to keep new replicas off.
    """
    draft = Draft(view)
    broker_id = body["broker_id"]
    b = draft.state.brokers.get(broker_id)
    if b is None or b.epoch != body["broker_epoch"]:
        return draft.result({"error_code": ErrorCode.STALE_BROKER_EPOCH, "is_fenced": True})
    draft.start_session(broker_id)
    caught_up = body["current_metadata_offset"] >= b.register_offset
    want_fence, want_shutdown = body["want_fence"], body["want_shut_down"]
    shutdown_now = False
    if b.fenced:
        if want_shutdown:
            shutdown_now = True
        elif not want_fence and caught_up:
            _unfence(draft, broker_id)
    elif b.in_controlled_shutdown:
        _controlled_shutdown(draft, broker_id)
        if not leads_anything(draft, broker_id):
            shutdown_now = True
    elif want_fence:
        shutdown_now = want_shutdown
        write_fence(draft, broker_id)
    elif want_shutdown:
        if leads_anything(draft, broker_id):
            _controlled_shutdown(draft, broker_id)
        else:
            shutdown_now = True
    if shutdown_now:
        write_fence(draft, broker_id)
    b = draft.state.brokers[broker_id]
    return draft.result(
        {
            "error_code": ErrorCode.NONE,
            "is_caught_up": caught_up,
            "is_fenced": b.fenced,
            "should_shut_down": shutdown_now,
        }
    )


def unregister_broker(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """UnregisterBroker v0 (RCM#handleBrokerUnregistered, D.17): ISR and ELR, then the record."""
    draft = Draft(view)
    broker_id = body["broker_id"]
    b = draft.state.brokers.get(broker_id)
    if b is None:
        return draft.result({"error_code": ErrorCode.BROKER_ID_NOT_REGISTERED})
    update_partitions(draft, _isr_partitions(draft, broker_id), remove=broker_id)
    # As in Kafka, the ELR pass only re-runs elections: the builder drops no one from an ELR
    # for being removed, so the broker stays listed there.
    update_partitions(draft, _elr_partitions(draft, broker_id), remove=broker_id)
    draft.add("UnregisterBrokerRecord", {"broker_id": broker_id, "broker_epoch": b.epoch})
    draft.end_session(broker_id)
    return draft.result({"error_code": ErrorCode.NONE})
