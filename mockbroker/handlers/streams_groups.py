"""Streams groups (KIP-1071): StreamsGroupHeartbeat (88), StreamsGroupDescribe (89) and
KIP-1331's StreamsGroupTopologyDescriptionUpdate (93).

Behavior: the group coordinator keeps the members of a Kafka Streams application
(`group.protocol=streams`). The first member registers the topology; the coordinator plans its
tasks and creates the missing repartition and changelog topics itself (through the controller,
before answering), reports MISSING_SOURCE_TOPICS while a source topic is absent, and hands out
active and standby tasks (`streams.num.standby.replicas`, else `group.streams.num.standby.replicas`,
0) with KIP-848's reconciliation. Topology descriptions are kept only with the mock-only
`kipwire.streams.topology.description.store` config (Kafka 4.4 keeps them only through a plugin
and has none by default): then v1 asks for one (TopologyDescriptionRequired) until a member has
sent it for the current topology epoch; without it, an update is UNSUPPORTED_VERSION as in Kafka.
Version notes: v1 adds TopologyDescriptionRequired and AcceptableRecoveryLag as int64.
"""

from __future__ import annotations

import enum
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from ..broker.metadata_image import MetadataImage
from ..coordinators.share_settings import group_setting
from ..coordinators.streams_assignor import InternalTopic, Tasks, TopologyPlan, plan
from ..coordinators.streams_groups import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    STREAMS,
    StreamsGroup,
    StreamsMember,
    WarmupSettings,
)
from .groups import group_type, not_coordinator
from .registry import BrokerView, RequestContext, handles
from .share_groups import CLIENT_HOST

CREATE_TOPICS_VERSION = 7
#: The streams group configs the mock acts on, by what they set.
_SETTINGS = {
    "session_timeout_ms": "streams.session.timeout.ms",
    "heartbeat_interval_ms": "streams.heartbeat.interval.ms",
    "standbys": "streams.num.standby.replicas",
}
#: group.streams.* values Kafka 4.4 answers with (the lag is acted on by the warm-up extension)
ACCEPTABLE_RECOVERY_LAG = 10000
WARMUP_REPLICAS = 2
#: The mock's own setting: assign KIP-1071 warm-up tasks, which Kafka 4.4 never does
#: (`coordinators/streams_assignor.py` says why and how).
WARMUP_TASKS = "kipwire.streams.warmup.tasks"
TASK_OFFSET_INTERVAL_MS = 60000
TOPOLOGY_DESCRIPTION_FROM = 1
#: The mock's own setting (Kafka has no built-in store: a plugin provides one): keep the
#: descriptions members send (KIP-1331) and ask members for them.
DESCRIPTION_STORE = "kipwire.streams.topology.description.store"
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


class DescriptionStatus(enum.IntEnum):
    """StreamsGroupDescribe v1 `TopologyDescriptionStatus`."""

    NOT_REQUESTED = 0
    NOT_STORED = 1
    ERROR = 2
    AVAILABLE = 3


def _setting(image: MetadataImage, group_id: str, name: str) -> int:
    return int(group_setting(image, group_id, _SETTINGS[name]))


def _acceptable_lag(image: MetadataImage) -> int:
    return int(
        image.cluster_config("group.streams.acceptable.recovery.lag", str(ACCEPTABLE_RECOVERY_LAG))
    )


def _warmup(image: MetadataImage) -> WarmupSettings | None:
    """The warm-up extension's settings, None unless the cluster turns it on."""
    if image.cluster_config(WARMUP_TASKS, "false").strip().lower() != "true":
        return None
    replicas = int(image.cluster_config("group.streams.num.warmup.replicas", str(WARMUP_REPLICAS)))
    return WarmupSettings(replicas, _acceptable_lag(image))


def _fail(body: Any, code: int, version: int) -> dict:
    # Kafka 4.4 answers an error with every field at its default: no member id, epoch 0
    return {
        "error_code": code,
        "member_id": "",
        "member_epoch": 0,
        "heartbeat_interval_ms": 0,
        "status": [],
        "endpoint_information_epoch": 0,
    }


def _invalid(body: Any, message: str) -> dict:
    return {**_fail(body, ErrorCode.INVALID_REQUEST, 0), "error_message": message}


def _tasks(entries: Any) -> Tasks | None:
    if entries is None:
        return None
    return {e["subtopology_id"]: sorted(e["partitions"]) for e in entries}


def _task_list(tasks: Tasks | None) -> list[dict] | None:
    if tasks is None:
        return None
    return [{"subtopology_id": s, "partitions": sorted(p)} for s, p in sorted(tasks.items()) if p]


def partition_counts(image: MetadataImage) -> dict[str, int]:
    """Every topic's partition count."""
    return {name: len(info.partitions) for name, info in image.topics.items()}


async def _create_internal(broker: BrokerView, topics: list[InternalTopic]) -> None:
    """Create missing internal topics through the controller (as Kafka's coordinator does)."""
    live = max(len(broker.image.live_brokers()), 1)
    default_rf = int(broker.image.cluster_config("default.replication.factor", "1"))
    await broker.forward(
        ApiKey.CREATE_TOPICS,
        CREATE_TOPICS_VERSION,
        {
            "topics": [
                {
                    "name": t.name,
                    "num_partitions": t.partitions,
                    "replication_factor": min(t.replication_factor or default_rf, live),
                    "configs": [{"name": k, "value": v} for k, v in sorted(t.configs.items())],
                }
                for t in topics
            ],
            "timeout_ms": 0,
        },
    )


async def _plan(broker: BrokerView, topology: dict | None) -> TopologyPlan | None:
    """The topology's tasks once its internal topics exist (created here when missing)."""
    if topology is None:
        return None
    subtopologies = topology["subtopologies"]
    planned = plan(subtopologies, partition_counts(broker.image))
    missing = [
        t for t in planned.internal if t.name not in broker.image.topics and t.partitions > 0
    ]
    if missing:
        await _create_internal(broker, missing)
        planned = plan(subtopologies, partition_counts(broker.image))
    return planned


def _member(ctx: RequestContext, body: Any) -> StreamsMember:
    endpoint = body.get("user_endpoint")
    topology = body.get("topology")
    return StreamsMember(
        body["member_id"],
        process_id=body.get("process_id") or "",
        instance_id=body.get("instance_id"),
        rack_id=body.get("rack_id"),
        client_id=ctx.client_id or "",
        client_host=CLIENT_HOST,
        user_endpoint=(endpoint["host"], endpoint["port"]) if endpoint else None,
        client_tags={kv["key"]: kv["value"] for kv in body.get("client_tags") or []},
        topology_epoch=topology["epoch"] if topology else 0,
        owned=_tasks(body.get("active_tasks")),
        task_offsets=list(body.get("task_offsets") or []),
        task_end_offsets=list(body.get("task_end_offsets") or []),
    )


def _topology(body: Any) -> dict | None:
    topology = body.get("topology")
    if topology is None:
        return None
    return {
        "epoch": topology["epoch"],
        "subtopologies": [dict(s) for s in topology["subtopologies"]],
    }


@handles(ApiKey.STREAMS_GROUP_HEARTBEAT, fail=_fail)
async def streams_group_heartbeat(ctx: RequestContext, body: Any) -> dict:
    """Join, stay in or leave a streams group; tasks when they changed."""
    group_id, member_id, epoch = body["group_id"], body["member_id"], body["member_epoch"]
    if not group_id:
        return _invalid(body, "GroupId can't be empty.")
    if not member_id:
        return _invalid(body, "MemberId can't be empty.")
    if epoch == 0:
        problem = _join_problem(body)
        if problem is not None:
            return _invalid(body, problem)
    if epoch < STATIC_LEAVE_EPOCH:
        return _invalid(body, f"MemberEpoch {epoch} is invalid.")
    if not_coordinator(ctx, group_id):
        return _fail(body, ErrorCode.NOT_COORDINATOR, ctx.api_version)
    broker = ctx.broker
    classic = broker.groups.group(group_id)
    if (classic is not None and classic.members) or group_type(broker, group_id) not in (
        None,
        STREAMS,
    ):
        return {
            **_fail(body, ErrorCode.GROUP_ID_NOT_FOUND, ctx.api_version),
            "error_message": f"Group {group_id} is not a streams group.",
        }
    streams = broker.streams_groups
    if classic is not None and epoch == 0:
        # an empty classic group becomes the streams group, keeping its committed offsets
        # (KIP-1071's upgrade of an application from the classic protocol)
        created = streams.group(group_id, create=True)
        assert created is not None
        created.offsets.update(classic.offsets)
        del broker.groups.groups[group_id]
    group = streams.group(group_id)
    topology = _topology(body)
    if (
        group is not None
        and group.topology is not None
        and (topology is None or topology["epoch"] <= group.topology_epoch)
    ):
        topology_now = group.topology
    else:
        topology_now = topology
    planned = (
        None if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH) else await _plan(broker, topology_now)
    )
    result = streams.heartbeat(
        group_id,
        _member(ctx, body),
        epoch,
        topology,
        planned,
        _setting(broker.image, group_id, "session_timeout_ms"),
        _setting(broker.image, group_id, "standbys"),
        _warmup(broker.image),
    )
    if result.error:
        return {**_fail(body, result.error, ctx.api_version), "error_message": result.message}
    if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        # as Kafka: the leaving member's id and epoch, every other field at its default
        left = {"member_id": member_id, "member_epoch": result.member_epoch}
        return {**_fail(body, ErrorCode.NONE, ctx.api_version), **left}
    group = streams.group(group_id)
    assert group is not None
    out: dict[str, Any] = {
        "error_code": ErrorCode.NONE,
        "member_id": member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": _setting(broker.image, group_id, "heartbeat_interval_ms"),
        "task_offset_interval_ms": TASK_OFFSET_INTERVAL_MS,
        "status": [{"status_code": c, "status_detail": d} for c, d in result.status],
        "active_tasks": _task_list(result.active),
        "standby_tasks": _task_list(result.standby),
        "warmup_tasks": _task_list(result.warmup),
        "endpoint_information_epoch": group.endpoint_epoch,
    }
    if ctx.api_version == 0:
        out["acceptable_recovery_lag_legacy"] = _acceptable_lag(broker.image)
    else:
        out["acceptable_recovery_lag"] = _acceptable_lag(broker.image)
        out["topology_description_required"] = bool(
            _stores_descriptions(broker.image)
            and group.topology is not None
            and group.description_epoch != group.topology_epoch
        )
    if body["endpoint_information_epoch"] < group.endpoint_epoch:
        out["partitions_by_user_endpoint"] = _endpoints(group)
    return out


def _join_problem(body: Any) -> str | None:
    """Why a joining heartbeat is refused, checked in Kafka 4.4's order and words."""
    for field, name in (
        ("active_tasks", "ActiveTasks"),
        ("standby_tasks", "StandbyTasks"),
        ("warmup_tasks", "WarmupTasks"),
    ):
        if body.get(field) != []:
            return f"{name} must be empty when (re-)joining."
    if body.get("rebalance_timeout_ms", -1) == -1:
        return "RebalanceTimeoutMs must be provided in first request."
    if body.get("topology") is None:
        return "Topology must be non-null when (re-)joining."
    if not body.get("process_id"):
        return "ProcessId can't be null."
    return None


def _stores_descriptions(image: MetadataImage) -> bool:
    """Whether topology descriptions are kept: like Kafka 4.4 without a topology description
    plugin the mock keeps none, unless the cluster sets this mock-only config to true."""
    return image.cluster_config(DESCRIPTION_STORE, "false").strip().lower() == "true"


def _endpoints(group: StreamsGroup) -> list[dict]:
    """Each member with a user endpoint and the source partitions of its tasks (for IQ)."""
    sources: dict[str, list[str]] = {}
    for sub in (group.topology or {}).get("subtopologies", []):
        names = list(sub["source_topics"]) + [t["name"] for t in sub["repartition_source_topics"]]
        sources[sub["subtopology_id"]] = names
    out = []
    for member in group.members.values():
        if member.user_endpoint is None:
            continue
        host, port = member.user_endpoint

        def partitions(tasks: Tasks) -> list[dict]:
            by_topic: dict[str, list[int]] = {}
            for sub, parts in tasks.items():
                for topic in sources.get(sub, []):
                    by_topic.setdefault(topic, []).extend(parts)
            return [{"topic": t, "partitions": sorted(p)} for t, p in sorted(by_topic.items())]

        out.append(
            {
                "user_endpoint": {"host": host, "port": port},
                "active_partitions": partitions(member.active),
                "standby_partitions": partitions(member.standby),
            }
        )
    return out


def _describe_fail(body: Any, code: int, version: int) -> dict:
    return {
        "groups": [
            {"error_code": code, "group_id": g, "group_state": "", "members": []}
            for g in body["group_ids"]
        ]
    }


def _assignment(active: Tasks, standby: Tasks, warmup: Tasks) -> dict:
    return {
        "active_tasks": _task_list(active),
        "standby_tasks": _task_list(standby),
        "warmup_tasks": _task_list(warmup),
    }


def _describe_topology(group: StreamsGroup, image: MetadataImage) -> dict | None:
    """The registered topology with internal topics' partition counts as planned (Kafka
    describes the resolved counts, not the 0 a member sent)."""
    if group.topology is None:
        return None
    sized = {
        t.name: t.partitions
        for t in plan(group.topology["subtopologies"], partition_counts(image)).internal
    }
    keys = ("subtopology_id", "source_topics", "repartition_sink_topics")

    def resolved(infos: list) -> list[dict]:
        return [{**i, "partitions": i["partitions"] or sized.get(i["name"], 0)} for i in infos]

    return {
        "epoch": group.topology_epoch,
        "subtopologies": [
            {
                **{k: s[k] for k in keys},
                "state_changelog_topics": resolved(s["state_changelog_topics"]),
                "repartition_source_topics": resolved(s["repartition_source_topics"]),
            }
            for s in group.topology["subtopologies"]
        ],
    }


@handles(ApiKey.STREAMS_GROUP_DESCRIBE, fail=_describe_fail)
async def streams_group_describe(ctx: RequestContext, body: Any) -> dict:
    """Each streams group's epochs, topology and members with their tasks."""
    broker = ctx.broker
    described = []
    for group_id in body["group_ids"]:
        entry: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "group_id": group_id,
            "group_state": "",
            "members": [],
        }
        group = broker.streams_groups.group(group_id)
        if not_coordinator(ctx, group_id):
            entry["error_code"] = ErrorCode.NOT_COORDINATOR
        elif group is None:
            entry.update(
                error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id} not found.",
            )
        else:
            entry.update(
                group_state=group.state.value,
                group_epoch=group.epoch,
                assignment_epoch=group.assignment_epoch,
                topology=_describe_topology(group, broker.image),
                members=[_describe_member(group, m) for m in group.members.values()],
            )
            if ctx.api_version >= TOPOLOGY_DESCRIPTION_FROM:
                entry["assignor_name"] = "sticky"
                if body.get("include_topology_description"):
                    stored = group.description is not None
                    entry["topology_description"] = group.description
                    entry["topology_description_status"] = (
                        DescriptionStatus.AVAILABLE if stored else DescriptionStatus.NOT_STORED
                    )
        described.append(entry)
    return {"groups": described}


def _describe_member(group: StreamsGroup, m: StreamsMember) -> dict:
    target = group.target.get(m.member_id, ({}, {}))
    return {
        "member_id": m.member_id,
        "member_epoch": m.epoch,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "topology_epoch": m.topology_epoch,
        "process_id": m.process_id,
        "user_endpoint": (
            {"host": m.user_endpoint[0], "port": m.user_endpoint[1]} if m.user_endpoint else None
        ),
        "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())],
        "task_offsets": m.task_offsets,
        "task_end_offsets": m.task_end_offsets,
        "assignment": _assignment(m.active, m.standby, m.warmup),
        "target_assignment": _assignment(*target, group.warmup_target.get(m.member_id, {})),
        "is_classic": False,
    }


@handles(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE)
async def streams_group_topology_description_update(ctx: RequestContext, body: Any) -> dict:
    """KIP-1331: a member sends the description of the group's current topology."""
    group_id = body["group_id"]
    if not_coordinator(ctx, group_id):
        return {"error_code": ErrorCode.NOT_COORDINATOR}
    if not _stores_descriptions(ctx.broker.image):
        return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": NO_PLUGIN}
    group = ctx.broker.streams_groups.group(group_id)
    if group is None:
        return {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": f"no group {group_id}"}
    if body["member_id"] not in group.members:
        return {"error_code": ErrorCode.UNKNOWN_MEMBER_ID}
    if body["topology_epoch"] != group.topology_epoch:
        return {
            "error_code": ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH,
            "error_message": f"topology epoch {body['topology_epoch']} is not current",
        }
    group.description = body["topology_description"]
    group.description_epoch = group.topology_epoch
    return {"error_code": ErrorCode.NONE}
