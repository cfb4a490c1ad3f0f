"""kipwire.mockbroker: a mock KRaft controller and mock brokers for integration tests.

`MockCluster` (sync: trio in a thread) and `open_cluster` (trio) start a controller and N
brokers on 127.0.0.1 that real Kafka clients produce to, consume from and administer;
`CONTROLLER` names the controller node in network faults (`partition_network(2, CONTROLLER)`);
`ConfigError` is an unknown config or a bad value, refused with Kafka's message.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster import Cluster, ClusterError, open_cluster
    from .controller import Semantics
    from .controller.broker_configs import ConfigError
    from .network import CONTROLLER
    from .sync_cluster import MockCluster

__all__ = [
    "CONTROLLER",
    "Cluster",
    "ClusterError",
    "ConfigError",
    "MockCluster",
    "Semantics",
    "open_cluster",
]

# Loaded on first use, so importing the sans-I/O controller alone does not start up trio.
_WHERE = {
    "Cluster": ".cluster",
    "ClusterError": ".cluster",
    "ConfigError": ".controller.broker_configs",
    "open_cluster": ".cluster",
    "MockCluster": ".sync_cluster",
    "Semantics": ".controller",
    "CONTROLLER": ".network",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name], __name__), name)
