"""kipwire.mockbroker.controller: a sans-I/O KRaft controller (KIP-966, KIP-704, KIP-903).

`Controller` takes request bodies and metadata records in and gives response bodies, metadata
records (`log`, `records_since`) and outgoing requests (`outbox`) out; `Semantics` picks the
Kafka release (or the KIP text) whose behaviour it imitates.

Where things are (rule numbers from kip-rules.md):

- `controller.py`: the Controller; the log, replay, dispatch, faults and time.
- `state.py`: what replay rebuilds: brokers, topics, partitions, configs, features.
- `partition_change.py`: the builder, D.12's steps in order; `elr.py`: D.13-D.16;
  `election.py`: E.20-E.22.
- `alter_partition.py`: C.9-C.11; `brokers.py`: registration, heartbeats, fencing, controlled
  and unclean shutdown (D.17, D.18); `configs.py`: configs and ClearElrRecord (D.19);
  `elect_leaders.py`: ElectLeaders and the periodic unclean election (E.25);
  `reassignments.py`: F.30; `topics.py`, `update_features.py`, `apis.py` (versions, dispatch).
- `recovery.py`: the KIP's unclean recovery (E.26); `metrics.py`: I.34 and the KIP's gauges.
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
