"""kipwire.mockbroker.controller: a sans-I/O KRaft controller (KIP-966, KIP-704, KIP-903).

`Controller` takes request bodies and metadata records in and gives response bodies, metadata
records (`log`, `records_since`) and outgoing requests (`outbox`) out; `Semantics` picks the
Kafka release (or the KIP text) whose behaviour it imitates.
"""

from .controller import Controller
from .election import Election
from .metadata_log import METADATA_TOPIC, LogEntry
from .semantics import Semantics
from .state import BrokerState, PartitionState, ReplayError

__all__ = [
    "METADATA_TOPIC",
    "BrokerState",
    "Controller",
    "Election",
    "LogEntry",
    "PartitionState",
    "ReplayError",
    "Semantics",
]
