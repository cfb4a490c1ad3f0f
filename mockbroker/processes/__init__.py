"""Process mode: each broker of a mock cluster in an OS process of its own
(`MockCluster(processes=True)`, `open_process_cluster`, `kipwire-broker serve --processes`)."""

from .cluster import BrokerProcess, ProcessCluster, open_process_cluster

__all__ = ["BrokerProcess", "ProcessCluster", "open_process_cluster"]
