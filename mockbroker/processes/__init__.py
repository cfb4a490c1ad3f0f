"""Process mode: each broker of a mock cluster, and its controller, in an OS process of its own
(`MockCluster(processes=True)`, `open_process_cluster`, `kipwire-broker serve --processes`)."""

from .cluster import ProcessCluster, open_process_cluster
from .nodes import BrokerProcess, ControllerProcess

__all__ = ["BrokerProcess", "ControllerProcess", "ProcessCluster", "open_process_cluster"]
