"""The cluster as plain data: what `GET /v1/cluster` and `GET /v1/topics/{t}/partitions/{p}`
answer, and `Cluster.describe()` / `Cluster.describe_partition()` return (one implementation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import UnknownResource
from .metrics import leader_high_watermark
from .network import CONTROLLER

if TYPE_CHECKING:
    from .cluster import Cluster

RUNNING, STOPPED, FENCED = "running", "stopped", "fenced"


def broker_state(cluster: Cluster, broker_id: int) -> str:
    """ "running", "stopped", or "fenced" (running but fenced by the controller)."""
    node = cluster.nodes.get(broker_id)
    if node is None:
        raise UnknownResource(f"no broker {broker_id} (brokers: {sorted(cluster.nodes)})")
    if not node.running:
        return STOPPED
    registration = cluster.controller.state.brokers.get(broker_id)
    return FENCED if registration is None or registration.fenced else RUNNING


def describe_cluster(cluster: Cluster) -> dict[str, Any]:
    """Every broker (id, host, port, state) and the controller (id, port)."""
    brokers = [
        {"id": i, "host": n.host, "port": n.port, "state": broker_state(cluster, i)}
        for i, n in sorted(cluster.nodes.items())
    ]
    return {
        "brokers": brokers,
        "controller": {"id": CONTROLLER, "port": cluster.controller_node.port},
    }


def describe_partition(cluster: Cluster, topic: str, index: int) -> dict[str, Any]:
    """Leader (-1 without one), epoch, ISR, ELR, last known ELR and the leader's high watermark
    (-1 without a running leader)."""
    try:
        p = cluster.controller.partition(topic, index)
    except KeyError:
        raise UnknownResource(f"no partition {topic}-{index}") from None
    hwm = leader_high_watermark(cluster, topic, index)
    return {
        "topic": topic,
        "partition": index,
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "elr": list(p.elr),
        "last_known_elr": list(p.last_known_elr),
        "high_watermark": -1 if hwm is None else hwm,
    }
