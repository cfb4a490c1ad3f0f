"""kipwire.mockbroker.controller: a sans-I/O KRaft controller (KIP-966, KIP-704, KIP-903).

`Controller` takes decoded request bodies and metadata records in and gives response bodies,
metadata records (`log`, `records_since`) and outgoing requests (`outbox`) out; `Semantics`
picks the Kafka release (or the KIP text) whose behaviour it imitates.

How a request flows (Kafka's QuorumController and ControllerResult): `Controller.handle` hands
a rule a read-only `ControllerView` and the decoded request; the rule writes records into a
`Draft` and returns a `ControllerResult(records, response)`; only the Controller appends the
records to the log and replays them into the state. Rules never import the Controller.

Where things are (rule numbers from kip-rules.md):

- `controller.py`: the Controller; append and replay, handle, faults and time.
- `result.py`: ControllerView and ControllerResult; `draft.py`: a rule's working copy and the
  partition-change helpers every rule shares; `apis.py`: versions, the rule of each API, the
  node boundary (`decode_at_node_boundary`).
- `state.py`: what replay rebuilds: brokers, topics, partitions, configs, features.
- `partition_change.py`: the builder, D.12's steps in order; `elr.py`: D.13-D.16;
  `election.py`: E.20-E.22.
- `alter_partition.py`: C.9-C.11; `brokers.py`: registration, heartbeats, fencing, controlled
  and unclean shutdown (D.17) and the ELR rule on clean shutdown (D.18,
  `elr_on_clean_shutdown`); `configs.py`: the configs the mock knows; `config_apis.py`: the
  config APIs and ClearElrRecord (D.19); `elect_leaders.py`: ElectLeaders and the periodic
  unclean election (E.25); `reassignments.py`: F.30; `topics.py`, `update_features.py`.
- `recovery.py`: the KIP's unclean recovery (E.26), its Balanced strategy in
  `balanced_strategy_may_start` / `balanced_strategy_may_elect`; `metrics.py`: I.34 and the
  KIP's gauges.
"""

from .controller import Controller
from .election import Election
from .metadata_log import METADATA_TOPIC, LogEntry
from .result import ControllerResult, ControllerView
from .semantics import Semantics
from .state import BrokerState, PartitionState, ReplayError

__all__ = [
    "METADATA_TOPIC",
    "BrokerState",
    "Controller",
    "ControllerResult",
    "ControllerView",
    "Election",
    "LogEntry",
    "PartitionState",
    "ReplayError",
    "Semantics",
]
