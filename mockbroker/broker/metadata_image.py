"""A broker's view of the cluster, rebuilt by replaying the controller's metadata records.

Each record is applied as a delta: it touches only the partitions it names, and the image keeps
what changed since the last `take_delta()` (the partitions touched, whether brokers or configs
changed), so the broker's runtime revisits only those (cost per change, not per cluster).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kipwire.codec import ConfigResourceType

from ..controller.quota_image import Entity, replay_client_quota
from ..security.image import ACL_RECORDS, SCRAM_RECORDS, TOKEN_RECORDS, SecurityImage

NO_LEADER_CHANGE = -2
_SECURITY_RECORDS = frozenset((*SCRAM_RECORDS, *ACL_RECORDS, *TOKEN_RECORDS))


@dataclass(slots=True)
class BrokerInfo:
    """A registered broker as the metadata log describes it."""

    node_id: int
    epoch: int
    host: str
    port: int
    rack: str | None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(slots=True)
class PartitionInfo:
    """A partition's replicas, ISR, ELR and leadership."""

    topic: str
    index: int
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    leader_recovery_state: int = 0
    #: The log directory id of each replica (KIP-858); empty before metadata version 3.7-IV2.
    directories: list[uuid.UUID] = field(default_factory=list)


@dataclass(slots=True)
class MetadataDelta:
    """What replayed records changed: partitions by (topic, index), brokers, configs."""

    partitions: set[tuple[str, int]] = field(default_factory=set)
    brokers: bool = False
    configs: bool = False

    @property
    def cluster_wide(self) -> bool:
        """A change that can affect every partition (a broker's state, a config)."""
        return self.brokers or self.configs


@dataclass(slots=True)
class TopicInfo:
    """A topic: its id and partitions."""

    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)


class MetadataImage:
    """Brokers, topics, partitions, configs and features after replaying records in order."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.topics_by_id: dict[uuid.UUID, TopicInfo] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        #: (topic, config name) -> its value on the topic, else cluster-wide, else None
        self._topic_configs: dict[tuple[str, str], str | None] = {}
        self.features: dict[str, int] = {}
        #: SCRAM credentials and ACLs (security/image.py).
        self.security = SecurityImage()
        #: Client quotas by entity (controller/quota_image.py).
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.offset = -1  # the last metadata offset replayed
        self.delta = MetadataDelta()

    def replay(self, offset: int, name: str, record: Mapping[str, Any]) -> None:
        """Apply one metadata record; records this image does not model are skipped."""
        apply = getattr(self, "_" + name, None)
        if apply is not None:
            apply(record)
        elif name in _SECURITY_RECORDS:
            self.security.replay(name, record)
        self.offset = offset

    def take_delta(self) -> MetadataDelta:
        """What changed since the last call (and start collecting anew)."""
        delta, self.delta = self.delta, MetadataDelta()
        return delta

    def live_brokers(self) -> list[BrokerInfo]:
        """Registered, unfenced brokers in id order."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]

    def partition(self, topic: str, index: int) -> PartitionInfo | None:
        """A partition by topic name and index, or None."""
        info = self.topics.get(topic)
        return info.partitions.get(index) if info else None

    def topic_config(self, topic: str, name: str, default: str) -> str:
        """A topic's config: set on the topic, else cluster-wide, else `default`."""
        # remembered until a config record or a topic's removal replays: a produce asks for
        # several settings of its topic, on every partition it writes
        key = (topic, name)
        try:
            value = self._topic_configs[key]
        except KeyError:
            value = self.configs.get((ConfigResourceType.TOPIC, topic), {}).get(name)
            if value is None:
                value = self._cluster_value(name)
            self._topic_configs[key] = value
        return default if value is None else value

    def cluster_config(self, name: str, default: str) -> str:
        """A cluster-wide broker config, else `default`."""
        value = self._cluster_value(name)
        return default if value is None else value

    def _cluster_value(self, name: str) -> str | None:
        return self.configs.get((ConfigResourceType.BROKER, ""), {}).get(name)

    def _RegisterBrokerRecord(self, r: Mapping[str, Any]) -> None:
        self.delta.brokers = True
        endpoint = r["end_points"][0] if r["end_points"] else {"host": "", "port": -1}
        self.brokers[r["broker_id"]] = BrokerInfo(
            r["broker_id"],
            r["broker_epoch"],
            endpoint["host"],
            endpoint["port"],
            r["rack"],
            bool(r["fenced"]),
            bool(r.get("in_controlled_shutdown", False)),
        )

    def _UnregisterBrokerRecord(self, r: Mapping[str, Any]) -> None:
        self.delta.brokers = True
        self.brokers.pop(r["broker_id"], None)

    def _FenceBrokerRecord(self, r: Mapping[str, Any]) -> None:
        self.delta.brokers = True
        if r["id"] in self.brokers:
            self.brokers[r["id"]].fenced = True

    def _UnfenceBrokerRecord(self, r: Mapping[str, Any]) -> None:
        self.delta.brokers = True
        if r["id"] in self.brokers:
            self.brokers[r["id"]].fenced = False

    def _BrokerRegistrationChangeRecord(self, r: Mapping[str, Any]) -> None:
        self.delta.brokers = True
        broker = self.brokers.get(r["broker_id"])
        if broker is None:
            return
        # tri-state int8 fields: 0 = no change, 1 = true (fenced/shutting down), -1 = false
        fenced = r.get("fenced", 0)
        if fenced:
            broker.fenced = fenced == 1
        shutdown = r.get("in_controlled_shutdown", 0)
        if shutdown:
            broker.in_controlled_shutdown = shutdown == 1

    def _TopicRecord(self, r: Mapping[str, Any]) -> None:
        info = TopicInfo(r["name"], r["topic_id"])
        self.topics[info.name] = info
        self.topics_by_id[info.topic_id] = info

    def _RemoveTopicRecord(self, r: Mapping[str, Any]) -> None:
        info = self.topics_by_id.pop(r["topic_id"], None)
        if info is not None:
            self.delta.partitions.update((info.name, i) for i in info.partitions)
            self.topics.pop(info.name, None)
            self.configs.pop((ConfigResourceType.TOPIC, info.name), None)
            self._topic_configs.clear()

    def _PartitionRecord(self, r: Mapping[str, Any]) -> None:
        info = self.topics_by_id.get(r["topic_id"])
        if info is None:
            return
        self.delta.partitions.add((info.name, r["partition_id"]))
        info.partitions[r["partition_id"]] = PartitionInfo(
            info.name,
            r["partition_id"],
            list(r["replicas"]),
            list(r["isr"]),
            r["leader"],
            r["leader_epoch"],
            r["partition_epoch"],
            list(r.get("eligible_leader_replicas") or []),
            list(r.get("last_known_elr") or []),
            r.get("leader_recovery_state", 0),
            list(r.get("directories") or []),
        )

    def _PartitionChangeRecord(self, r: Mapping[str, Any]) -> None:
        info = self.topics_by_id.get(r["topic_id"])
        part = info.partitions.get(r["partition_id"]) if info else None
        if part is None:
            return
        self.delta.partitions.add((part.topic, part.index))
        if r.get("isr") is not None:
            part.isr = list(r["isr"])
        if r.get("replicas") is not None:
            part.replicas = list(r["replicas"])
        if r.get("eligible_leader_replicas") is not None:
            part.elr = list(r["eligible_leader_replicas"])
        if r.get("last_known_elr") is not None:
            part.last_known_elr = list(r["last_known_elr"])
        if r.get("directories") is not None:
            part.directories = list(r["directories"])
        if r.get("leader_recovery_state", -1) != -1:
            part.leader_recovery_state = r["leader_recovery_state"]
        leader = r.get("leader", NO_LEADER_CHANGE)
        if leader != NO_LEADER_CHANGE:
            part.leader = leader
            part.leader_epoch += 1
        part.partition_epoch += 1

    def _ClearElrRecord(self, r: Mapping[str, Any]) -> None:
        names = [r["topic_name"]] if r.get("topic_name") else list(self.topics)
        for name in names:
            for part in self.topics[name].partitions.values() if name in self.topics else ():
                # Replayed as a partition change, as the controller does (D.19): a partition whose
                # ELR fields it empties takes a new partition epoch, or the leader's next
                # AlterPartition would carry a stale one.
                if part.elr or part.last_known_elr:
                    self.delta.partitions.add((part.topic, part.index))
                    part.elr = []
                    part.last_known_elr = []
                    part.partition_epoch += 1

    def _ConfigRecord(self, r: Mapping[str, Any]) -> None:
        self.delta.configs = True
        self._topic_configs.clear()
        configs = self.configs.setdefault((r["resource_type"], r["resource_name"]), {})
        if r["value"] is None:
            configs.pop(r["name"], None)
        else:
            configs[r["name"]] = r["value"]

    def _ClientQuotaRecord(self, r: Mapping[str, Any]) -> None:
        replay_client_quota(self.quotas, r)

    def _FeatureLevelRecord(self, r: Mapping[str, Any]) -> None:
        self.delta.configs = True
        self.features[r["name"]] = r["feature_level"]
