"""Broker lifecycle: registration, heartbeats, fencing, controlled shutdown (D.17, D.18)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kipwire.codec import ErrorCode

from .features import METADATA_VERSION, MV_3_3_IV2, MV_3_3_IV3
from .partition_change import Target
from .state import NO_LEADER, PartitionState

if TYPE_CHECKING:
    from .controller import Controller

# BrokerRegistrationChangeRecord values (Kafka's BrokerRegistrationFencingChange and
# BrokerRegistrationInControlledShutdownChange).
FENCE = 1
UNFENCE = -1
IN_CONTROLLED_SHUTDOWN = 1


def has_live_session(ctl: Controller, broker_id: int) -> bool:
    """A heartbeat arrived within the session timeout and the broker is unfenced."""
    last = ctl.sessions.get(broker_id)
    b = ctl.state.brokers.get(broker_id)
    if last is None or b is None or b.fenced:
        return False
    return ctl.now_ms - last <= ctl.session_timeout_ms


def _isr_partitions(ctl: Controller, broker_id: int) -> list[PartitionState]:
    return [p for p in ctl.state.partitions() if broker_id in p.isr]


def _elr_partitions(ctl: Controller, broker_id: int) -> list[PartitionState]:
    return [p for p in ctl.state.partitions() if broker_id in p.elr]


def update_partitions(
    ctl: Controller,
    partitions: Iterable[PartitionState],
    *,
    remove: int = NO_LEADER,
    add: int = NO_LEADER,
    unclean: int = NO_LEADER,
) -> None:
    """RCM#generateLeaderAndIsrUpdates: drop `remove`/`unclean` from each ISR, re-elect (D.17)."""

    def acceptable(r: int) -> bool:
        return r != remove and r != unclean and (r == add or ctl.is_active(r))

    gone = tuple(b for b in (remove, unclean) if b != NO_LEADER)
    for p in partitions:
        rules = ctl.rules(p.topic, acceptable)
        target = Target(
            isr=[r for r in p.isr if r not in gone],
            election=ctl.election_mode(p.topic),
            unclean_shutdown=(unclean,) if unclean != NO_LEADER else (),
        )
        ctl.change_partition(p, target, rules)


def _change_record(ctl: Controller, broker_id: int, version: int, **fields: int) -> None:
    # Kafka writes v0 to fence or unfence and v1 for controlled shutdown, whatever the MV.
    b = ctl.state.brokers[broker_id]
    ctl.append(
        "BrokerRegistrationChangeRecord",
        {"broker_id": broker_id, "broker_epoch": b.epoch, **fields},
        version,
    )


def fence(ctl: Controller, broker_id: int) -> None:
    """RCM#handleBrokerFenced: leave every ISR and leadership, then the fence record."""
    b = ctl.state.brokers.get(broker_id)
    if b is None:
        raise KeyError(f"broker {broker_id} is not registered")
    update_partitions(ctl, _isr_partitions(ctl, broker_id), remove=broker_id)
    ctl.sessions.pop(broker_id, None)
    if b.fenced:
        return
    if ctl.state.metadata_version >= MV_3_3_IV2:
        _change_record(ctl, broker_id, 0, fenced=FENCE)
    else:
        ctl.append("FenceBrokerRecord", {"id": broker_id, "epoch": b.epoch})


def unfence(ctl: Controller, broker_id: int) -> None:
    """RCM#handleBrokerUnfenced: the unfence record, then elections for leaderless partitions."""
    b = ctl.state.brokers[broker_id]
    if ctl.state.metadata_version >= MV_3_3_IV2:
        _change_record(ctl, broker_id, 0, fenced=UNFENCE)
    else:
        ctl.append("UnfenceBrokerRecord", {"id": broker_id, "epoch": b.epoch})
    leaderless = [p for p in ctl.state.partitions() if p.leader == NO_LEADER]
    update_partitions(ctl, leaderless, add=broker_id)
    ctl.recovery.broker_unfenced(broker_id)


def controlled_shutdown(ctl: Controller, broker_id: int) -> None:
    """RCM#handleBrokerInControlledShutdown: mark it, then leave every ISR and leadership."""
    b = ctl.state.brokers[broker_id]
    if not b.in_controlled_shutdown and ctl.state.metadata_version >= MV_3_3_IV3:
        _change_record(ctl, broker_id, 1, in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN)
    update_partitions(ctl, _isr_partitions(ctl, broker_id), remove=broker_id)


def shutdown_on_registration(ctl: Controller, broker_id: int, clean: bool) -> None:
    """RCM#handleBrokerShutdown (D.18): the unclean path if ELR is on and the stop was unclean."""
    if ctl.state.elr_enabled and not clean:
        update_partitions(ctl, _isr_partitions(ctl, broker_id), unclean=broker_id)
        update_partitions(ctl, _elr_partitions(ctl, broker_id), unclean=broker_id)
    else:
        fence(ctl, broker_id)


def leads_anything(ctl: Controller, broker_id: int) -> bool:
    """Whether the broker leads any partition."""
    return any(p.leader == broker_id for p in ctl.state.partitions())


def expire_sessions(ctl: Controller) -> None:
    """Fence every unfenced broker whose heartbeat session timed out."""
    for broker_id, last in sorted(ctl.sessions.items()):
        if ctl.now_ms - last > ctl.session_timeout_ms:
            b = ctl.state.brokers.get(broker_id)
            if b is not None and not b.fenced:
                fence(ctl, broker_id)
            ctl.sessions.pop(broker_id, None)


# -- the APIs ----------------------------------------------------------------------------------


def handle_registration(ctl: Controller, version: int, body: Any) -> dict:
    """BrokerRegistration v0-v4 (CCM#registerBroker)."""
    broker_id = body["broker_id"]
    if body["cluster_id"] != ctl.cluster_id:
        return {"error_code": ErrorCode.INCONSISTENT_CLUSTER_ID}
    existing = ctl.state.brokers.get(broker_id)
    incarnation = body["incarnation_id"]
    if (
        existing is not None
        and existing.incarnation_id != incarnation
        and has_live_session(ctl, broker_id)
    ):
        return {"error_code": ErrorCode.DUPLICATE_BROKER_REGISTRATION}
    mv = ctl.state.metadata_version
    for feature in body["features"]:
        if feature["name"] == METADATA_VERSION and not (
            feature["min_supported_version"] <= mv <= feature["max_supported_version"]
        ):
            return {"error_code": ErrorCode.UNSUPPORTED_VERSION}
    if existing is not None and existing.incarnation_id != incarnation:
        clean = (
            ctl.semantics.clean_shutdown_detection
            and version >= 3
            and body.get("previous_broker_epoch", -1) == existing.epoch
        )
        shutdown_on_registration(ctl, broker_id, clean)
        ctl.recovery.broker_registered(broker_id)
    ctl.sessions.pop(broker_id, None)
    # Kafka's broker epoch is the offset of the registration record.
    epoch = ctl.end_offset
    ctl.append(
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
    return {"error_code": ErrorCode.NONE, "broker_epoch": epoch}


def handle_heartbeat(ctl: Controller, version: int, body: Any) -> dict:
    """BrokerHeartbeat v0-v1 (BrokerHeartbeatManager#calculateNextBrokerState)."""
    broker_id = body["broker_id"]
    b = ctl.state.brokers.get(broker_id)
    if b is None or b.epoch != body["broker_epoch"]:
        return {"error_code": ErrorCode.STALE_BROKER_EPOCH, "is_fenced": True}
    ctl.sessions[broker_id] = ctl.now_ms
    caught_up = body["current_metadata_offset"] >= b.register_offset
    want_fence, want_shutdown = body["want_fence"], body["want_shut_down"]
    shutdown_now = False
    if b.fenced:
        if want_shutdown:
            shutdown_now = True
        elif not want_fence and caught_up:
            unfence(ctl, broker_id)
    elif b.in_controlled_shutdown:
        controlled_shutdown(ctl, broker_id)
        if not leads_anything(ctl, broker_id):
            shutdown_now = True
    elif want_fence:
        shutdown_now = want_shutdown
        fence(ctl, broker_id)
    elif want_shutdown:
        if leads_anything(ctl, broker_id):
            controlled_shutdown(ctl, broker_id)
        else:
            shutdown_now = True
    if shutdown_now:
        fence(ctl, broker_id)
    b = ctl.state.brokers[broker_id]
    return {
        "error_code": ErrorCode.NONE,
        "is_caught_up": caught_up,
        "is_fenced": b.fenced,
        "should_shut_down": shutdown_now,
    }


def handle_unregister(ctl: Controller, version: int, body: Any) -> dict:
    """UnregisterBroker v0 (RCM#handleBrokerUnregistered, D.17): ISR and ELR, then the record."""
    broker_id = body["broker_id"]
    b = ctl.state.brokers.get(broker_id)
    if b is None:
        return {"error_code": ErrorCode.BROKER_ID_NOT_REGISTERED}
    update_partitions(ctl, _isr_partitions(ctl, broker_id), remove=broker_id)
    # As in Kafka, the ELR pass only re-runs elections: the builder drops no one from an ELR
    # for being removed, so the broker stays listed there.
    update_partitions(ctl, _elr_partitions(ctl, broker_id), remove=broker_id)
    ctl.append("UnregisterBrokerRecord", {"broker_id": broker_id, "broker_epoch": b.epoch})
    ctl.sessions.pop(broker_id, None)
    return {"error_code": ErrorCode.NONE}
