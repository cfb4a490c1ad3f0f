"""The link layer across processes: each node dials from a loopback address of its own, so the
process that accepts a connection knows which node dialed it without asking anyone.

Linux answers on all of 127.0.0.0/8: broker `n` dials from 127.1.(n >> 8).(n & 255), the
controller from 127.2.0.1; clients keep 127.0.0.1 and stay clients. Every process holds its own
`network.Network` (cuts and link latency act on the dialing side, as in-process), kept in step
with the parent's by the fault mirror (`faults.py` in this package).
"""

from __future__ import annotations

from collections.abc import Callable

from ..network import CONTROLLER, Network, NodeId

CONTROLLER_HOST = "127.2.0.1"
_BROKER_PREFIX = "127.1."
MAX_BROKER_ID = 0xFFFF


def node_host(node: NodeId) -> str:
    """The loopback address `node` dials from."""
    if node == CONTROLLER:
        return CONTROLLER_HOST
    if not isinstance(node, int) or not 0 <= node <= MAX_BROKER_ID:
        raise ValueError(f"process mode numbers brokers 0..{MAX_BROKER_ID}, got {node!r}")
    return f"{_BROKER_PREFIX}{node >> 8}.{node & 0xFF}"


def node_of(host: str) -> NodeId | None:
    """The node that dials from `host`; None for a client."""
    if host == CONTROLLER_HOST:
        return CONTROLLER
    if host.startswith(_BROKER_PREFIX):
        high, low = host[len(_BROKER_PREFIX) :].split(".")
        return int(high) << 8 | int(low)
    return None


class SourcesByAddress(dict):
    """`Network.sources` read from the dialing address itself (see the module docstring)."""

    def get(self, peer: object, default: object = None) -> object:
        """The node that dialed from `peer` = (host, port), or `default` for a client."""
        if isinstance(peer, tuple) and peer and isinstance(peer[0], str):
            node = node_of(peer[0])
            if node is not None:
                return node
        return default


def process_network(resolve: Callable[[NodeId], str]) -> Network:
    """A `Network` whose nodes dial from their own loopback addresses."""
    network = Network(resolve)
    network.sources = SourcesByAddress()
    network.local_host = node_host
    return network
