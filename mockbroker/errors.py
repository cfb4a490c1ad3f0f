"""The errors of the cluster's test API (the Python one and the HTTP control API alike)."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """A cluster operation that could not be done (a controller error, an unknown broker).

    `error_code` is the Kafka error the controller answered, when one did.
    """

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code


class UnknownResource(ClusterError, LookupError):
    """No such broker, node, topic, partition or fault."""


class WrongState(ClusterError):
    """The operation does not fit the resource's state: a broker already stopped or running."""
