"""The registries rebuilt by replaying metadata records: brokers, topics, partitions, configs;
and DraftState, the copy-on-write view a rule's records are replayed into (see draft.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, TypeVar
from uuid import UUID

from kipwire.codec import ConfigResourceType, LeaderRecoveryState

from ..security.image import (
    ACL_RECORDS,
    SCRAM_RECORDS,
    TOKEN_RECORDS,
    AclBinding,
    replay_security,
)
from ..security.scram import ScramCredential
from ..security.tokens import TokenInfo
from .features import ELR_VERSION, LATEST_METADATA_VERSION, METADATA_VERSION, MV_4_0_IV1
from .quota_image import Entity, replay_client_quota

# The Leader field's values (PartitionRegistration): no leader, and (in a change) unchanged.
NO_LEADER = -1
NO_LEADER_CHANGE = -2

K = TypeVar("K")
V = TypeVar("V")


class ReplayError(ValueError):
    """A metadata record that cannot apply to the current state (e.g. a change to no partition)."""


class PartitionState:
    """One partition as the metadata log says it is (Kafka's PartitionRegistration)."""

    __slots__ = (
        "topic",
        "topic_id",
        "partition_id",
        "replicas",
        "isr",
        "elr",
        "last_known_elr",
        "leader",
        "leader_epoch",
        "partition_epoch",
        "leader_recovery_state",
        "adding_replicas",
        "removing_replicas",
        "directories",
    )

    def __init__(self, topic: str, topic_id: UUID, record: Mapping[str, Any]) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.partition_id: int = record["partition_id"]
        self.replicas: list[int] = list(record["replicas"])
        self.isr: list[int] = list(record["isr"])
        self.elr: list[int] = list(record.get("eligible_leader_replicas") or ())
        self.last_known_elr: list[int] = list(record.get("last_known_elr") or ())
        self.leader: int = record["leader"]
        self.leader_epoch: int = record["leader_epoch"]
        self.partition_epoch: int = record["partition_epoch"]
        self.leader_recovery_state: int = record.get(
            "leader_recovery_state", LeaderRecoveryState.RECOVERED
        )
        self.adding_replicas: list[int] = list(record.get("adding_replicas") or ())
        self.removing_replicas: list[int] = list(record.get("removing_replicas") or ())
        self.directories: list[UUID] = list(record.get("directories") or ())

    def clone(self) -> PartitionState:
        """A copy whose fields can be replaced without touching this one (merge replaces
        lists, never changes them in place, so they may be shared)."""
        other = object.__new__(PartitionState)
        other.topic = self.topic
        other.topic_id = self.topic_id
        other.partition_id = self.partition_id
        other.replicas = self.replicas
        other.isr = self.isr
        other.elr = self.elr
        other.last_known_elr = self.last_known_elr
        other.leader = self.leader
        other.leader_epoch = self.leader_epoch
        other.partition_epoch = self.partition_epoch
        other.leader_recovery_state = self.leader_recovery_state
        other.adding_replicas = self.adding_replicas
        other.removing_replicas = self.removing_replicas
        other.directories = self.directories
        return other

    def merge(self, change: Mapping[str, Any]) -> None:
        """Apply a PartitionChangeRecord (F.27, F.29): null fields and Leader -2 mean unchanged."""
        get = change.get
        v = get("isr")
        if v is not None:
            self.isr = list(v)
        v = get("leader", NO_LEADER_CHANGE)
        if v != NO_LEADER_CHANGE:
            self.leader = v
            self.leader_epoch += 1
        v = get("replicas")
        if v is not None:
            self.replicas = list(v)
        v = get("adding_replicas")
        if v is not None:
            self.adding_replicas = list(v)
        v = get("removing_replicas")
        if v is not None:
            self.removing_replicas = list(v)
        v = get("eligible_leader_replicas")
        if v is not None:
            self.elr = list(v)
        v = get("last_known_elr")
        if v is not None:
            self.last_known_elr = list(v)
        v = get("directories")
        if v is not None:
            self.directories = list(v)
        v = get("leader_recovery_state", -1)
        if v != -1:
            self.leader_recovery_state = v
        self.partition_epoch += 1

    def snapshot(self) -> tuple:
        """Every field as a tuple, to compare two states."""
        return tuple(getattr(self, name) for name in self.__slots__)

    def __repr__(self) -> str:
        return (
            f"<Partition {self.topic}-{self.partition_id} replicas={self.replicas} isr={self.isr}"
            f" elr={self.elr} lke={self.last_known_elr} leader={self.leader}"
            f" epochs={self.leader_epoch}/{self.partition_epoch} lrs={self.leader_recovery_state}>"
        )


class BrokerState:
    """One registered broker (Kafka's BrokerRegistration)."""

    __slots__ = (
        "broker_id",
        "epoch",
        "incarnation_id",
        "fenced",
        "in_controlled_shutdown",
        "listeners",
        "rack",
        "features",
        "log_dirs",
        "register_offset",
    )

    def __init__(self, record: Mapping[str, Any], offset: int) -> None:
        self.broker_id: int = record["broker_id"]
        self.epoch: int = record["broker_epoch"]
        self.incarnation_id: UUID = record["incarnation_id"]
        self.fenced: bool = bool(record.get("fenced", True))
        self.in_controlled_shutdown: bool = bool(record.get("in_controlled_shutdown", False))
        self.listeners: list[dict] = [dict(e) for e in record.get("end_points") or ()]
        self.rack: str | None = record.get("rack")
        self.features: list[dict] = [dict(f) for f in record.get("features") or ()]
        self.log_dirs: list[UUID] = list(record.get("log_dirs") or ())
        # A heartbeat whose CurrentMetadataOffset reaches this has seen its own registration.
        self.register_offset = offset

    def clone(self) -> BrokerState:
        """A copy whose fields can be replaced without touching this one."""
        other = BrokerState.__new__(BrokerState)
        for name in BrokerState.__slots__:
            setattr(other, name, getattr(self, name))
        return other

    @property
    def active(self) -> bool:
        """Unfenced and not shutting down: may lead and may join an ISR."""
        return not self.fenced and not self.in_controlled_shutdown

    def snapshot(self) -> tuple:
        """Every field as a tuple, to compare two states."""
        return tuple(
            repr(getattr(self, name)) if name in ("listeners", "features") else getattr(self, name)
            for name in self.__slots__
        )

    def __repr__(self) -> str:
        return (
            f"<Broker {self.broker_id} epoch={self.epoch} fenced={self.fenced}"
            f" in_controlled_shutdown={self.in_controlled_shutdown}>"
        )


class TopicState:
    """A topic: its name, id and partitions by index."""

    __slots__ = ("name", "topic_id", "partitions")

    def __init__(self, name: str, topic_id: UUID) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partitions: dict[int, PartitionState] = {}

    def clone(self) -> TopicState:
        """A copy with its own partition index (the partitions themselves are shared)."""
        other = TopicState(self.name, self.topic_id)
        other.partitions = dict(self.partitions)
        return other


class ClusterState:
    """Everything the metadata log describes; changed only by `replay`."""

    def __init__(self, latest_metadata_version: int = LATEST_METADATA_VERSION["4.4"]) -> None:
        # the level in force until a FeatureLevelRecord sets one: the release's latest
        self.latest_metadata_version = latest_metadata_version
        self.brokers: MutableMapping[int, BrokerState] = {}
        self.topics: MutableMapping[UUID, TopicState] = {}
        self.topic_ids: MutableMapping[str, UUID] = {}
        self.configs: MutableMapping[tuple[int, str], dict[str, str]] = {}
        self.features: MutableMapping[str, int] = {}
        # The offset of the last FeatureLevelRecord (ApiVersions' FinalizedFeaturesEpoch).
        self.features_epoch = -1
        # SCRAM credentials by (user, mechanism type), ACLs by id, delegation tokens by id
        # (security/image.py)
        self.scram: MutableMapping[tuple[str, int], ScramCredential] = {}
        self.acls: MutableMapping[UUID, AclBinding] = {}
        self.tokens: MutableMapping[str, TokenInfo] = {}
        # client quotas by entity (quota_image.py)
        self.quotas: MutableMapping[Entity, dict[str, float]] = {}
        # (topic id, index) of every partition without a leader: an index kept by replay, so
        # the periodic elections and recovery scans visit those alone.
        self.leaderless: set[tuple[UUID, int]] = set()

    @property
    def metadata_version(self) -> int:
        """The finalized metadata.version level (the latest known when none was replayed)."""
        return self.features.get(METADATA_VERSION, self.latest_metadata_version)

    @property
    def elr_enabled(self) -> bool:
        """ELR is on: feature eligible.leader.replicas.version >= 1 on an MV that supports it."""
        return self.features.get(ELR_VERSION, 0) >= 1 and self.metadata_version >= MV_4_0_IV1

    def topic(self, name: str) -> TopicState | None:
        """The topic of that name, or None."""
        topic_id = self.topic_ids.get(name)
        return None if topic_id is None else self.topics[topic_id]

    def config(self, resource_type: int, resource_name: str, name: str) -> str | None:
        """One config value as stored, or None."""
        return self.configs.get((resource_type, resource_name), {}).get(name)

    def partitions(self) -> list[PartitionState]:
        """Every partition, topics in creation order."""
        return [p for t in self.topics.values() for p in t.partitions.values()]

    def leaderless_partitions(self) -> list[PartitionState]:
        """The partitions without a leader, in `partitions()` order."""
        if not self.leaderless:
            return []
        ids = {topic_id for topic_id, _ in self.leaderless}
        return [
            p
            for t in self.topics.values()
            if t.topic_id in ids
            for p in t.partitions.values()
            if (t.topic_id, p.partition_id) in self.leaderless
        ]

    def replay(self, name: str, record: Mapping[str, Any], offset: int) -> None:
        """Replay one metadata record into the state."""
        handler = _REPLAY.get(name)
        if handler is not None:
            handler(self, record, offset)

    def draft(self) -> DraftState:
        """A state that starts equal to this one and takes replays without changing it."""
        return DraftState(self)

    def snapshot(self) -> tuple:
        """The whole state as comparable values (for the replay-equals-state invariant)."""
        return (
            sorted((b, s.snapshot()) for b, s in self.brokers.items()),
            sorted((str(t.topic_id), t.name) for t in self.topics.values()),
            sorted(((str(p.topic_id), p.partition_id), p.snapshot()) for p in self.partitions()),
            sorted((k, sorted(v.items())) for k, v in self.configs.items()),
            sorted(self.features.items()),
            sorted((repr(e), sorted(v.items())) for e, v in self.quotas.items()),
        )

    # What replay may change in place: everything here; in a DraftState, its own copies only.

    def _writable_broker(self, broker_id: int) -> BrokerState:
        return self.brokers[broker_id]

    def _writable_topic(self, topic_id: UUID) -> TopicState:
        return self.topics[topic_id]

    def _writable_leaderless(self) -> set[tuple[UUID, int]]:
        return self.leaderless

    def _writable_partition(self, topic_id: UUID, index: int) -> PartitionState:
        return self.topics[topic_id].partitions[index]

    def _writable_configs(self, key: tuple[int, str]) -> dict[str, str]:
        return self.configs[key]


class _Overlay(MutableMapping[K, V]):
    """A dict seen through the changes made to it since: writes and deletes stay here."""

    def __init__(self, base: Mapping[K, V]) -> None:
        self._base = base
        self._set: dict[K, V] = {}
        self._deleted: set[K] = set()

    def __getitem__(self, key: K) -> V:
        try:
            return self._set[key]
        except KeyError:
            if key in self._deleted:
                raise
        return self._base[key]

    def get(self, key: K, default: Any = None) -> Any:
        """The value of `key`, or `default`."""
        try:
            return self[key]
        except KeyError:
            return default

    def __setitem__(self, key: K, value: V) -> None:
        self._deleted.discard(key)
        self._set[key] = value

    def __delitem__(self, key: K) -> None:
        if key not in self:
            raise KeyError(key)
        self._set.pop(key, None)
        self._deleted.add(key)

    def __contains__(self, key: object) -> bool:
        return key in self._set or (key not in self._deleted and key in self._base)

    def __iter__(self) -> Iterator[K]:
        for key in self._base:
            if key not in self._deleted:
                yield key
        for key in self._set:
            if key not in self._base:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)


class DraftState(ClusterState):
    """A copy-on-write view of a ClusterState: replaying into it copies each broker, topic,
    partition or config set before changing it, so the base never changes and the draft costs
    only what it changes (a rule's working state, see draft.py)."""

    def __init__(self, base: ClusterState) -> None:
        self.brokers = _Overlay(base.brokers)
        self.topics = _Overlay(base.topics)
        self.topic_ids = _Overlay(base.topic_ids)
        self.configs = _Overlay(base.configs)
        self.features = _Overlay(base.features)
        self.features_epoch = base.features_epoch
        self.latest_metadata_version = base.latest_metadata_version
        self.scram = _Overlay(base.scram)
        self.acls = _Overlay(base.acls)
        self.tokens = _Overlay(base.tokens)
        self.quotas = _Overlay(base.quotas)
        self.leaderless = base.leaderless
        self._leaderless_owned = False
        # ids of the objects this draft made (or copied) itself, with the objects kept alive
        self._own: dict[int, object] = {}

    def _owned(self, obj: Any, clone: Callable[[], Any]) -> Any:
        if id(obj) in self._own:
            return obj
        mine = clone()
        self._own[id(mine)] = mine
        return mine

    def _writable_broker(self, broker_id: int) -> BrokerState:
        broker = self.brokers[broker_id]
        broker = self.brokers[broker_id] = self._owned(broker, broker.clone)
        return broker

    def _writable_topic(self, topic_id: UUID) -> TopicState:
        topic = self.topics[topic_id]
        topic = self.topics[topic_id] = self._owned(topic, topic.clone)
        return topic

    def _writable_partition(self, topic_id: UUID, index: int) -> PartitionState:
        topic = self._writable_topic(topic_id)
        partition = topic.partitions[index]
        partition = topic.partitions[index] = self._owned(partition, partition.clone)
        return partition

    def _writable_configs(self, key: tuple[int, str]) -> dict[str, str]:
        configs = self.configs[key]
        configs = self.configs[key] = self._owned(configs, configs.copy)
        return configs

    def _writable_leaderless(self) -> set[tuple[UUID, int]]:
        if not self._leaderless_owned:
            self.leaderless = set(self.leaderless)
            self._leaderless_owned = True
        return self.leaderless


def _register_broker(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    state.brokers[r["broker_id"]] = BrokerState(r, offset)


def _broker(state: ClusterState, broker_id: int, epoch: int) -> BrokerState:
    broker = state.brokers.get(broker_id)
    if broker is None or broker.epoch != epoch:
        raise ReplayError(f"no broker {broker_id} with epoch {epoch} is registered")
    return state._writable_broker(broker_id)


def _unregister_broker(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    _broker(state, r["broker_id"], r["broker_epoch"])
    del state.brokers[r["broker_id"]]


def _fence(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    _broker(state, r["id"], r["epoch"]).fenced = True


def _unfence(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    _broker(state, r["id"], r["epoch"]).fenced = False


def _broker_change(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    broker = _broker(state, r["broker_id"], r["broker_epoch"])
    # BrokerRegistrationFencingChange: 1 fences, -1 unfences, 0 leaves it.
    fenced = r.get("fenced", 0)
    if fenced:
        broker.fenced = fenced == 1
    if r.get("in_controlled_shutdown", 0) == 1:
        broker.in_controlled_shutdown = True
    if r.get("log_dirs"):
        broker.log_dirs = list(r["log_dirs"])


def _topic(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    if r["name"] in state.topic_ids:
        raise ReplayError(f"topic {r['name']!r} already exists")
    state.topics[r["topic_id"]] = TopicState(r["name"], r["topic_id"])
    state.topic_ids[r["name"]] = r["topic_id"]


def _topic_of(state: ClusterState, topic_id: UUID) -> TopicState:
    topic = state.topics.get(topic_id)
    if topic is None:
        raise ReplayError(f"no topic with id {topic_id}")
    return topic


def _partition(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    _topic_of(state, r["topic_id"])
    topic = state._writable_topic(r["topic_id"])
    p = topic.partitions[r["partition_id"]] = PartitionState(topic.name, topic.topic_id, r)
    _index_leader(state, p)


def _index_leader(state: ClusterState, p: PartitionState) -> None:
    key = (p.topic_id, p.partition_id)
    if (p.leader == NO_LEADER) != (key in state.leaderless):
        leaderless = state._writable_leaderless()
        if p.leader == NO_LEADER:
            leaderless.add(key)
        else:
            leaderless.discard(key)


def _partition_change(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    if r["partition_id"] not in _topic_of(state, r["topic_id"]).partitions:
        raise ReplayError(f"no partition {r['partition_id']} in topic {r['topic_id']}")
    p = state._writable_partition(r["topic_id"], r["partition_id"])
    p.merge(r)
    _index_leader(state, p)


def _remove_topic(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    topic = _topic_of(state, r["topic_id"])
    gone = {(topic.topic_id, index) for index in topic.partitions} & state.leaderless
    if gone:
        state._writable_leaderless().difference_update(gone)
    del state.topics[topic.topic_id]
    del state.topic_ids[topic.name]
    state.configs.pop((ConfigResourceType.TOPIC, topic.name), None)


def _config(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    key = (r["resource_type"], r["resource_name"])
    if r["value"] is None:
        if key in state.configs:
            configs = state._writable_configs(key)
            configs.pop(r["name"], None)
            if not configs:
                del state.configs[key]
    elif key in state.configs:
        state._writable_configs(key)[r["name"]] = r["value"]
    else:
        state.configs[key] = {r["name"]: r["value"]}


def _feature(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    if r["feature_level"] == 0:
        state.features.pop(r["name"], None)
    else:
        state.features[r["name"]] = r["feature_level"]
    state.features_epoch = offset


def _clear_elr(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    # D.19: a controller-side merge, so each partition that changes takes a new partition epoch.
    if r["topic_name"]:
        topic = state.topic(r["topic_name"])
        if topic is None:
            raise ReplayError(f"ClearElrRecord names unknown topic {r['topic_name']!r}")
        topics = [topic]
    else:
        topics = list(state.topics.values())
    for topic in topics:
        for index, p in list(topic.partitions.items()):
            if p.elr or p.last_known_elr:
                p = state._writable_partition(topic.topic_id, index)
                p.elr = []
                p.last_known_elr = []
                p.partition_epoch += 1


def _client_quota(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    replay_client_quota(state.quotas, r)


def _security(name: str) -> Callable[[ClusterState, Mapping[str, Any], int], None]:
    def replay(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
        replay_security(state.scram, state.acls, state.tokens, name, r)

    return replay


_REPLAY: dict[str, Callable[[ClusterState, Mapping[str, Any], int], None]] = {
    "RegisterBrokerRecord": _register_broker,
    "UnregisterBrokerRecord": _unregister_broker,
    "FenceBrokerRecord": _fence,
    "UnfenceBrokerRecord": _unfence,
    "BrokerRegistrationChangeRecord": _broker_change,
    "TopicRecord": _topic,
    "PartitionRecord": _partition,
    "PartitionChangeRecord": _partition_change,
    "RemoveTopicRecord": _remove_topic,
    "ConfigRecord": _config,
    "FeatureLevelRecord": _feature,
    "ClearElrRecord": _clear_elr,
    "ClientQuotaRecord": _client_quota,
    **{name: _security(name) for name in (*SCRAM_RECORDS, *ACL_RECORDS, *TOKEN_RECORDS)},
}
