"""One mock broker's state: partition logs, producer state, its view of the cluster metadata."""
