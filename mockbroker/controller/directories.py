"""Log directories of replicas (KIP-858): the directory a new replica starts in, and the
Directories field of a partition change.

A registered broker lists its log directories' ids (BrokerRegistration v2+ LogDirs); a partition
record carries one directory id per replica (`Directories`, PartitionRecord v1+). The controller
picks the id as Kafka's ClusterControlManager#defaultDir does: the broker's only directory, or
UNASSIGNED when it has several (the broker chooses and reports back), or MIGRATING when it listed
none. The broker's side, where each replica is, is `broker/replica_dirs.py`; the rule serving
AssignReplicasToDirs is `dir_assignment.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from uuid import UUID

from .features import MV_3_7_IV2
from .state import ClusterState, PartitionState

#: Kafka's reserved directory ids (DirectoryId): a replica placed before directories were
#: tracked, one waiting for its broker to choose, one in a directory that went offline.
MIGRATING = UUID(int=0)
UNASSIGNED = UUID(int=1)
LOST = UUID(int=2)
#: Ids below this are reserved (DirectoryId#reserved).
RESERVED_BELOW = 100


def default_dir(state: ClusterState, broker_id: int) -> UUID:
    """The directory a new replica on `broker_id` is recorded in (defaultDir)."""
    if state.metadata_version < MV_3_7_IV2:
        return MIGRATING
    broker = state.brokers.get(broker_id)
    if broker is None:
        return UNASSIGNED
    if not broker.log_dirs:
        return MIGRATING
    if len(broker.log_dirs) == 1:
        return broker.log_dirs[0]
    return UNASSIGNED


def current_dirs(p: PartitionState) -> list[UUID]:
    """The partition's directory per replica; a record without them means MIGRATING."""
    if len(p.directories) == len(p.replicas):
        return list(p.directories)
    return [MIGRATING] * len(p.replicas)


def new_directories(
    p: PartitionState,
    replicas: Sequence[int],
    chosen: Mapping[int, UUID],
    default: Callable[[int], UUID],
) -> list[UUID] | None:
    """The Directories field of a change to `replicas`, or None when it stays as it is: a kept
    replica keeps its directory unless `chosen` moves it, a new one starts in its `default`."""
    known = dict(zip(p.replicas, current_dirs(p), strict=True))
    known.update(chosen)
    dirs = [known[r] if r in known else default(r) for r in replicas]
    return None if dirs == current_dirs(p) else dirs
