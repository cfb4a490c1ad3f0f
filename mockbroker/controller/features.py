"""Feature levels the controller knows: metadata.version thresholds and the ELR feature."""

from __future__ import annotations

METADATA_VERSION = "metadata.version"
ELR_VERSION = "eligible.leader.replicas.version"

# metadata.version feature levels (Kafka's MetadataVersion) at which behaviour changes.
MV_3_2_IV0 = 3  # LeaderRecoveryState (KIP-704)
MV_3_3_IV2 = 6  # BrokerRegistrationChangeRecord fences and unfences
MV_3_3_IV3 = 7  # InControlledShutdown in registrations
MV_3_4_IV0 = 8  # RegisterBrokerRecord v2
MV_3_6_IV0 = 12  # no leader-epoch bump on an ISR shrink
MV_3_7_IV2 = 17  # directories: PartitionRecord v1, RegisterBrokerRecord v3
MV_4_0_IV1 = 23  # ELR: PartitionRecord / PartitionChangeRecord v2
MV_LATEST = 27  # 4.1-IV1, the level used when no metadata.version was replayed
MV_MIN = 1

# The features the controller finalizes, with the levels it supports.
SUPPORTED_FEATURES = {METADATA_VERSION: (MV_MIN, MV_LATEST), ELR_VERSION: (0, 1)}


def partition_record_version(mv: int) -> int:
    """PartitionRecord and PartitionChangeRecord version for a metadata.version level."""
    if mv >= MV_4_0_IV1:
        return 2
    return 1 if mv >= MV_3_7_IV2 else 0


def register_broker_record_version(mv: int) -> int:
    """RegisterBrokerRecord version for a metadata.version level."""
    if mv >= MV_3_7_IV2:
        return 3
    if mv >= MV_3_4_IV0:
        return 2
    return 1 if mv >= MV_3_3_IV3 else 0


def record_version(name: str, mv: int, latest: int) -> int:
    """The version the controller writes a metadata record at, on a metadata.version level."""
    if name in ("PartitionRecord", "PartitionChangeRecord"):
        return partition_record_version(mv)
    if name == "RegisterBrokerRecord":
        return register_broker_record_version(mv)
    return latest
