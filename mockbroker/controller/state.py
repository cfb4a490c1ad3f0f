"""The registries rebuilt by replaying metadata records: brokers, topics, partitions, configs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from .features import ELR_VERSION, METADATA_VERSION, MV_4_0_IV1, MV_LATEST

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED = 0
RECOVERING = 1

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


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
        self.leader_recovery_state: int = record.get("leader_recovery_state", RECOVERED)
        self.adding_replicas: list[int] = list(record.get("adding_replicas") or ())
        self.removing_replicas: list[int] = list(record.get("removing_replicas") or ())
        self.directories: list[UUID] = list(record.get("directories") or ())

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


class ClusterState:
    """Everything the metadata log describes; changed only by `apply`."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerState] = {}
        self.topics: dict[UUID, TopicState] = {}
        self.topic_ids: dict[str, UUID] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.features: dict[str, int] = {}

    @property
    def metadata_version(self) -> int:
        """The finalized metadata.version level (the latest known when none was replayed)."""
        return self.features.get(METADATA_VERSION, MV_LATEST)

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

    def apply(self, name: str, record: Mapping[str, Any], offset: int) -> None:
        """Replay one metadata record into the state."""
        handler = _REPLAY.get(name)
        if handler is not None:
            handler(self, record, offset)

    def snapshot(self) -> tuple:
        """The whole state as comparable values (for the replay-equals-state invariant)."""
        return (
            sorted((b, s.snapshot()) for b, s in self.brokers.items()),
            sorted((str(t.topic_id), t.name) for t in self.topics.values()),
            sorted(((str(p.topic_id), p.partition_id), p.snapshot()) for p in self.partitions()),
            sorted((k, sorted(v.items())) for k, v in self.configs.items()),
            sorted(self.features.items()),
        )


def _register_broker(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    state.brokers[r["broker_id"]] = BrokerState(r, offset)


def _broker(state: ClusterState, broker_id: int, epoch: int) -> BrokerState:
    broker = state.brokers.get(broker_id)
    if broker is None or broker.epoch != epoch:
        raise ReplayError(f"no broker {broker_id} with epoch {epoch} is registered")
    return broker


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
    topic = _topic_of(state, r["topic_id"])
    topic.partitions[r["partition_id"]] = PartitionState(topic.name, topic.topic_id, r)


def _partition_change(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    partition = _topic_of(state, r["topic_id"]).partitions.get(r["partition_id"])
    if partition is None:
        raise ReplayError(f"no partition {r['partition_id']} in topic {r['topic_id']}")
    partition.merge(r)


def _remove_topic(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    topic = _topic_of(state, r["topic_id"])
    del state.topics[topic.topic_id]
    del state.topic_ids[topic.name]
    state.configs.pop((TOPIC_RESOURCE, topic.name), None)


def _config(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    key = (r["resource_type"], r["resource_name"])
    if r["value"] is None:
        configs = state.configs.get(key)
        if configs is not None:
            configs.pop(r["name"], None)
            if not configs:
                del state.configs[key]
    else:
        state.configs.setdefault(key, {})[r["name"]] = r["value"]


def _feature(state: ClusterState, r: Mapping[str, Any], offset: int) -> None:
    if r["feature_level"] == 0:
        state.features.pop(r["name"], None)
    else:
        state.features[r["name"]] = r["feature_level"]


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
        for p in topic.partitions.values():
            if p.elr or p.last_known_elr:
                p.elr = []
                p.last_known_elr = []
                p.partition_epoch += 1


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
}
