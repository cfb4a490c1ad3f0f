"""Feature levels the controller knows: metadata.version thresholds, the ELR feature, and each
Kafka release's features (what a broker supports, what a fresh cluster finalizes)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from kipwire.codec import ApiKey

METADATA_VERSION = "metadata.version"
ELR_VERSION = "eligible.leader.replicas.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"

# metadata.version feature levels (Kafka's MetadataVersion) at which behaviour changes.
MV_3_2_IV0 = 3  # LeaderRecoveryState (KIP-704)
MV_3_3_IV2 = 6  # BrokerRegistrationChangeRecord fences and unfences
MV_3_3_IV3 = 7  # InControlledShutdown in registrations
MV_3_4_IV0 = 8  # RegisterBrokerRecord v2
MV_3_6_IV0 = 12  # no leader-epoch bump on an ISR shrink
MV_3_7_IV2 = 17  # directories: PartitionRecord v1, RegisterBrokerRecord v3
MV_4_0_IV1 = 23  # ELR: PartitionRecord / PartitionChangeRecord v2
MV_4_1_IV1 = 27  # the latest level of Kafka 4.1
MV_4_3_IV0 = 30  # cordoned log dirs (KIP-1066): RegisterBrokerRecord v4
MV_4_4_IV2 = 33  # the latest level of Kafka 4.4
MV_MIN = 1

#: release -> the metadata.version in force when no FeatureLevelRecord set one: the release's
#: latest, which is what a freshly formatted cluster of that release finalizes.
LATEST_METADATA_VERSION = {"4.1": MV_4_1_IV1, "4.4": MV_4_4_IV2}

#: release -> the features the controller finalizes (UpdateFeatures), with the levels it takes.
CONTROLLER_FEATURES: Mapping[str, Mapping[str, tuple[int, int]]] = {
    release: {METADATA_VERSION: (MV_MIN, latest), ELR_VERSION: (0, 1)}
    for release, latest in LATEST_METADATA_VERSION.items()
}

#: release -> what a broker of that release reports it supports (ApiVersions SupportedFeatures).
BROKER_FEATURES: Mapping[str, Mapping[str, tuple[int, int]]] = {
    "4.1": {
        METADATA_VERSION: (MV_3_3_IV3, MV_4_1_IV1),
        KRAFT_VERSION: (0, 1),
        TRANSACTION_VERSION: (0, 2),
        GROUP_VERSION: (0, 1),
        ELR_VERSION: (0, 1),
    },
    "4.4": {
        METADATA_VERSION: (MV_3_3_IV3, MV_4_4_IV2),
        KRAFT_VERSION: (0, 1),
        TRANSACTION_VERSION: (0, 2),
        GROUP_VERSION: (0, 1),
        ELR_VERSION: (0, 1),
        SHARE_VERSION: (0, 2),
        STREAMS_VERSION: (0, 1),
    },
}

#: release -> the levels a freshly formatted Kafka cluster of that release finalizes, beside
#: metadata.version (share groups and the streams protocol are production features from 4.2).
KAFKA_FRESH_FEATURES: Mapping[str, Mapping[str, int]] = {
    "4.1": {TRANSACTION_VERSION: 2, GROUP_VERSION: 1, ELR_VERSION: 1},
    "4.4": {
        TRANSACTION_VERSION: 2,
        GROUP_VERSION: 1,
        ELR_VERSION: 1,
        SHARE_VERSION: 2,
        STREAMS_VERSION: 1,
    },
}

#: Features whose levels above 0 turn on a protocol: the API keys the mock's brokers must serve
#: before the mock finalizes the feature as Kafka does. Until then the feature stays unset, so no
#: client negotiates a protocol the mock cannot answer (a client picks KIP-848, KIP-932 and
#: KIP-1071 groups by these APIs, and transactions v2 by `transaction.version`). No API key
#: lifts transactions v2: the mock's transaction coordinator does v1 (explicit
#: AddPartitionsToTxn) and the feature stays unset.
FEATURE_NEEDS: Mapping[str, frozenset[int] | None] = {
    GROUP_VERSION: frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE}),
    SHARE_VERSION: frozenset(
        {
            ApiKey.SHARE_GROUP_HEARTBEAT,
            ApiKey.SHARE_GROUP_DESCRIBE,
            ApiKey.SHARE_FETCH,
            ApiKey.SHARE_ACKNOWLEDGE,
        }
    ),
    STREAMS_VERSION: frozenset({ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE}),
    TRANSACTION_VERSION: None,
}


def fresh_features(release: str, served: Collection[int]) -> dict[str, int]:
    """The feature levels (beside metadata.version) a fresh mock cluster of a release finalizes:
    Kafka's, less the features whose protocol the brokers serving `served` API keys lack."""
    out = {}
    for name, level in KAFKA_FRESH_FEATURES[release].items():
        needs = FEATURE_NEEDS.get(name, frozenset())
        if needs is not None and needs <= set(served):
            out[name] = level
    return out


def partition_record_version(mv: int) -> int:
    """PartitionRecord and PartitionChangeRecord version for a metadata.version level."""
    if mv >= MV_4_0_IV1:
        return 2
    return 1 if mv >= MV_3_7_IV2 else 0


def register_broker_record_version(mv: int) -> int:
    """RegisterBrokerRecord version for a metadata.version level (Kafka's
    MetadataVersion#registerBrokerRecordVersion)."""
    if mv >= MV_4_3_IV0:
        return 4
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
