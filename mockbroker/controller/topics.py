"""Topics: CreateTopics, DeleteTopics and CreatePartitions (replica placement included)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from kipwire.codec import ConfigResourceType, ConfigSource, ErrorCode, LeaderRecoveryState

from .config_apis import write_configs
from .configs import validate
from .directories import default_dir
from .draft import Draft, is_active
from .features import MV_3_7_IV2, MV_4_0_IV1
from .result import ControllerResult, ControllerView

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


class _Refused(Exception):
    """A topic-level refusal: error code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def place(active: list[int], count: int, rf: int, first_partition: int) -> list[list[int]]:
    """Replica lists striped over the active brokers: partition p starts at broker p mod n."""
    n = len(active)
    return [
        [active[(p + r) % n] for r in range(rf)]
        for p in range(first_partition, first_partition + count)
    ]


def _check_assignment(draft: Draft, replicas: list[int], index: int) -> list[int]:
    if not replicas or len(set(replicas)) != len(replicas):
        raise _Refused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"partition {index}: replicas {replicas} are empty or repeat a broker",
        )
    unknown = [b for b in replicas if b not in draft.state.brokers]
    if unknown:
        raise _Refused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"partition {index}: unknown brokers {unknown}"
        )
    isr = [b for b in replicas if is_active(draft.state, b)]
    if not isr:
        raise _Refused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"partition {index}: every assigned broker is fenced or shutting down",
        )
    return isr


def _partition_record(
    draft: Draft, topic_id: uuid.UUID, index: int, replicas: list[int], isr: list[int]
) -> dict:
    record = {
        "partition_id": index,
        "topic_id": topic_id,
        "replicas": replicas,
        "isr": isr,
        "removing_replicas": [],
        "adding_replicas": [],
        "leader": isr[0],
        "leader_recovery_state": LeaderRecoveryState.RECOVERED,
        "leader_epoch": 0,
        "partition_epoch": 0,
    }
    if draft.state.metadata_version >= MV_3_7_IV2:
        record["directories"] = [default_dir(draft.state, b) for b in replicas]
    if draft.state.metadata_version >= MV_4_0_IV1:
        # F.29: version 2 carries the ELR fields as [] whether or not ELR is on.
        record["eligible_leader_replicas"] = []
        record["last_known_elr"] = []
    return record


def _plan_partitions(
    draft: Draft, count: int, rf: int, assignments: list[list[int]] | None, first: int
) -> list[tuple[list[int], list[int]]]:
    if assignments:
        if len(assignments) != count:
            raise _Refused(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"{len(assignments)} assignments for {count} partitions",
            )
        return [
            (list(r), _check_assignment(draft, list(r), first + i))
            for i, r in enumerate(assignments)
        ]
    active = sorted(b for b in draft.state.brokers if is_active(draft.state, b))
    if rf < 1 or rf > len(active):
        raise _Refused(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {rf} with {len(active)} unfenced brokers",
        )
    return [(r, list(r)) for r in place(active, count, rf, first)]


def _create_one(draft: Draft, t: Any, validate_only: bool) -> dict:
    name = t["name"]
    if not _LEGAL_NAME.match(name) or name in (".", ".."):
        raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, f"illegal topic name {name!r}")
    if draft.state.topic(name) is not None:
        raise _Refused(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
    assignments = {a["partition_index"]: list(a["broker_ids"]) for a in t["assignments"]}
    count, rf = t["num_partitions"], t["replication_factor"]
    if assignments:
        if count != -1 or rf != -1:
            raise _Refused(
                ErrorCode.INVALID_REQUEST, "assignments given with a partition count or RF"
            )
        if sorted(assignments) != list(range(len(assignments))):
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partition indexes have gaps")
        count = len(assignments)
    if count == -1:
        # num.partitions may have been changed since start (a dynamic cluster-wide config)
        dynamic = draft.state.config(ConfigResourceType.BROKER, "", "num.partitions")
        count = int(dynamic) if dynamic is not None else draft.settings.default_partitions
    if count < 1:
        raise _Refused(ErrorCode.INVALID_PARTITIONS, f"{count} partitions")
    if rf == -1:
        rf = draft.settings.default_replication_factor
    if rf < 1 and not assignments:
        raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR, f"replication factor {rf}")
    configs = {}
    for cfg in t["configs"]:
        problem = validate(cfg["name"], cfg["value"], draft.settings.semantics.release)
        if problem is not None:
            raise _Refused(ErrorCode.INVALID_CONFIG, f"{cfg['name']}: {problem}")
        configs[cfg["name"]] = cfg["value"]
    ordered = [assignments[i] for i in range(count)] if assignments else None
    plan = _plan_partitions(draft, count, rf, ordered, 0)
    topic_id = uuid.uuid4()
    if not validate_only:
        draft.add("TopicRecord", {"name": name, "topic_id": topic_id})
        # Configs go between the TopicRecord and the PartitionRecords, as in Kafka, which also
        # writes a ClearElrRecord after a min.insync.replicas there (recorded from Kafka 4.1).
        write_configs(draft, ConfigResourceType.TOPIC, name, configs)
        for index, (replicas, isr) in enumerate(plan):
            draft.add("PartitionRecord", _partition_record(draft, topic_id, index, replicas, isr))
    return {
        "name": name,
        "topic_id": topic_id,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "num_partitions": count,
        "replication_factor": len(plan[0][0]),
        "configs": [
            {
                "name": k,
                "value": v,
                "read_only": False,
                "config_source": ConfigSource.DYNAMIC_TOPIC_CONFIG,
                "is_sensitive": False,
            }
            for k, v in configs.items()
        ],
    }


def create_topics(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """CreateTopics v0-v7: TopicRecord, its ConfigRecords, one PartitionRecord per partition."""
    draft = Draft(view)
    names = [t["name"] for t in body["topics"]]
    topics = []
    for t in body["topics"]:
        try:
            if names.count(t["name"]) > 1:
                raise _Refused(ErrorCode.INVALID_REQUEST, f"topic {t['name']!r} listed twice")
            topics.append(_create_one(draft, t, body.get("validate_only", False)))
        except _Refused as e:
            topics.append(
                {
                    "name": t["name"],
                    "error_code": e.code,
                    "error_message": e.message,
                    "configs": None,
                }
            )
    return draft.result({"topics": topics})


def delete_topics(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """DeleteTopics v0-v6 by name or (v6) topic id: one RemoveTopicRecord per topic."""
    draft = Draft(view)
    if version >= 6:
        wanted = [(t["name"], t["topic_id"]) for t in body["topics"]]
    else:
        wanted = [(n, None) for n in body["topic_names"]]
    responses = []
    for name, topic_id in wanted:
        zero = topic_id is None or topic_id == uuid.UUID(int=0)
        topic = (
            draft.state.topic(name)
            if zero and name is not None
            else draft.state.topics.get(topic_id)
        )
        if topic is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if zero else ErrorCode.UNKNOWN_TOPIC_ID
            responses.append(
                {"name": name, "topic_id": topic_id or uuid.UUID(int=0), "error_code": code}
            )
            continue
        draft.add("RemoveTopicRecord", {"topic_id": topic.topic_id})
        responses.append(
            {"name": topic.name, "topic_id": topic.topic_id, "error_code": ErrorCode.NONE}
        )
    return draft.result({"responses": responses})


def create_partitions(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """CreatePartitions v0-v3: PartitionRecords for the new partitions of existing topics."""
    draft = Draft(view)
    results = []
    for t in body["topics"]:
        topic = draft.state.topic(t["name"])
        try:
            if topic is None:
                raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {t['name']!r}")
            have = len(topic.partitions)
            if t["count"] <= have:
                raise _Refused(
                    ErrorCode.INVALID_PARTITIONS, f"topic has {have} partitions, asked {t['count']}"
                )
            rf = len(topic.partitions[0].replicas)
            assignments = t["assignments"]
            plan = _plan_partitions(
                draft,
                t["count"] - have,
                rf,
                [list(a["broker_ids"]) for a in assignments] if assignments else None,
                have,
            )
            if not body["validate_only"]:
                for i, (replicas, isr) in enumerate(plan):
                    draft.add(
                        "PartitionRecord",
                        _partition_record(draft, topic.topic_id, have + i, replicas, isr),
                    )
            results.append({"name": t["name"], "error_code": ErrorCode.NONE})
        except _Refused as e:
            results.append({"name": t["name"], "error_code": e.code, "error_message": e.message})
    return draft.result({"results": results})
