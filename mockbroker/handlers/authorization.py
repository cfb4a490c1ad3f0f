"""Authorization of the served APIs on a cluster with `authorizer=True`, answered where Kafka's
KafkaApis answers: per partition (TOPIC_AUTHORIZATION_FAILED in Produce, Fetch, ListOffsets,
OffsetCommit ...), per topic or group (CreateTopics, DescribeGroups ...), or for the whole
request (GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED); Metadata leaves out topics the
principal may not DESCRIBE and auto-creates only with CREATE; `*_authorized_operations` fields
carry the allowed operations.

Each rule wraps the API's handler (`authorized(table)`): it splits off what the principal may
not do, lets the handler serve the rest, and merges the errors back, as partition faults do
(`registry.PartitionShape`). Connections with no principal (`security.context.PRINCIPAL` None:
the internal listener other nodes dial) are never checked. Which operation each API needs:
`security/authorizer.py`'s rules over the ACLs this broker replayed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from kipwire.codec import AclOperation as Op
from kipwire.codec import AclResourceType as Res
from kipwire.codec import ApiKey, ConfigResourceType, CoordinatorType, ErrorCode

from ..broker.topic_names import ZERO_UUID, topic_name
from ..security.authorizer import CLUSTER_NAME, Authorizer
from ..security.context import CLIENT_HOST, PRINCIPAL
from ..security.image import AclBinding
from .registry import Handler, PartitionShape, RequestContext

TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
#: The value of `*_authorized_operations` when the request did not ask for them.
NOT_ASKED = -(2**31)


@dataclass(frozen=True, slots=True)
class Caller:
    """The principal of the request being served, and what the broker knows to judge it."""

    authorizer: Authorizer
    acls: Mapping[UUID, AclBinding]
    principal: str
    host: str

    def may(self, operation: int, resource_type: int, name: str) -> bool:
        """Whether the caller may do `operation` on the resource."""
        return self.authorizer.authorize(
            self.acls, self.principal, self.host, operation, resource_type, name
        )

    def may_cluster(self, operation: int) -> bool:
        """Whether the caller may do `operation` on the cluster."""
        return self.may(operation, Res.CLUSTER, CLUSTER_NAME)

    def operations(self, resource_type: int, name: str) -> int:
        """The `*_authorized_operations` bits of the resource."""
        return self.authorizer.authorized_operations(
            self.acls, self.principal, self.host, resource_type, name
        )


Rule = Callable[[Caller, RequestContext, Any, Handler], Awaitable[dict | None]]
RULES: dict[int, Rule] = {}


def _caller(ctx: RequestContext) -> Caller | None:
    principal = PRINCIPAL.get()
    authorizer = getattr(ctx.broker, "authorizer", None)
    if principal is None or authorizer is None:
        return None
    acls = ctx.broker.image.security.acls
    return Caller(authorizer, acls, principal, CLIENT_HOST.get())


def authorized(table: Mapping[int, Handler]) -> dict[int, Handler]:
    """`table` with every API that has a rule checked by it first."""
    out = dict(table)
    for key, handler in table.items():
        rule = RULES.get(key)
        if rule is not None:
            out[key] = replace(handler, handle=_checked(rule, handler))
    return out


def _checked(rule: Rule, handler: Handler) -> Callable[[Any, Any], Awaitable[dict | None]]:
    async def handle(ctx: RequestContext, body: Any) -> dict | None:
        caller = _caller(ctx)
        if caller is None:
            return await handler.handle(ctx, body)
        return await rule(caller, ctx, body, handler)

    handle.__doc__ = f"{handler.handle.__doc__} (authorized first)"
    return handle


def rule(*keys: ApiKey) -> Callable[[Rule], Rule]:
    """Register the decorated rule for `keys`."""

    def register(fn: Rule) -> Rule:
        for key in keys:
            RULES[key] = fn
        return fn

    return register


# -- per partition --------------------------------------------------------------------------

_OPERATION = {
    ApiKey.PRODUCE: Op.WRITE,
    ApiKey.FETCH: Op.READ,
    ApiKey.LIST_OFFSETS: Op.DESCRIBE,
    ApiKey.DELETE_RECORDS: Op.DELETE,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: Op.DESCRIBE,
}


async def _per_topic(
    caller: Caller,
    ctx: RequestContext,
    body: Any,
    handler: Handler,
    shape: PartitionShape,
    operation: int,
) -> dict | None:
    """Partitions of topics the caller may not touch answer TOPIC_AUTHORIZATION_FAILED."""
    image = ctx.broker.image
    verdicts: dict[str, bool] = {}

    def code_of(topic: Any, part: Any) -> int | None:
        name = topic_name(image, topic, shape.name_key)
        if name is None:
            return None  # an unknown topic id: the handler answers it
        if name not in verdicts:
            verdicts[name] = caller.may(operation, Res.TOPIC, name)
        return None if verdicts[name] else TOPIC_DENIED

    rest, failed = shape.split(body, code_of)
    response = await handler.handle(ctx, rest if failed else body)
    return response if response is None or not failed else shape.merge(response, failed)


@rule(
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.LIST_OFFSETS,
    ApiKey.DELETE_RECORDS,
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
)
async def _partitions(caller: Caller, ctx: RequestContext, body: Any, handler: Handler) -> Any:
    assert handler.partitions is not None
    txn = body.get("transactional_id") if ctx.api_key == ApiKey.PRODUCE else None
    if txn and not caller.may(Op.WRITE, Res.TRANSACTIONAL_ID, txn):
        return handler.fail(body, TXN_DENIED, ctx.api_version)
    if ctx.api_key == ApiKey.FETCH and _replica_id(body) >= 0:
        if not caller.may_cluster(Op.CLUSTER_ACTION):
            return {"error_code": CLUSTER_DENIED, "responses": []}
        return await handler.handle(ctx, body)
    return await _per_topic(caller, ctx, body, handler, handler.partitions, _OPERATION[ctx.api_key])


def _replica_id(body: Any) -> int:
    state = body.get("replica_state")
    return state["replica_id"] if state else body.get("replica_id", -1)


# -- metadata -------------------------------------------------------------------------------


@rule(ApiKey.METADATA)
async def _metadata(caller: Caller, ctx: RequestContext, body: Any, handler: Handler) -> Any:
    image = ctx.broker.image
    requested = body["topics"]
    listing = requested is None or (ctx.api_version == 0 and not requested)
    refused: list[tuple[str | None, UUID]] = []
    if not listing:
        auto = body.get("allow_auto_topic_creation", True) and ctx.api_version >= 4
        creates = auto and ctx.broker.auto_create_topics
        may_create = creates and caller.may_cluster(Op.CREATE)
        kept = []
        for entry in requested:
            tid = entry.get("topic_id") or ZERO_UUID
            name = topic_name(image, entry)
            if name is None:
                kept.append(entry)
            elif name in image.topics:
                ok = caller.may(Op.DESCRIBE, Res.TOPIC, name)
                (kept.append(entry) if ok else refused.append((name, tid)))
            elif not caller.may(Op.DESCRIBE, Res.TOPIC, name) or (
                creates and not may_create and not caller.may(Op.CREATE, Res.TOPIC, name)
            ):
                refused.append((name, tid))
            else:
                kept.append(entry)
        body = {**body, "topics": kept}
    response = await handler.handle(ctx, body)
    topics = response["topics"]
    if listing:
        topics = [t for t in topics if caller.may(Op.DESCRIBE, Res.TOPIC, t["name"])]
    topics += [
        {"error_code": TOPIC_DENIED, "name": name, "topic_id": tid, "partitions": []}
        for name, tid in refused
    ]
    if body.get("include_topic_authorized_operations"):
        for topic in topics:
            if topic["error_code"] == ErrorCode.NONE:
                topic["topic_authorized_operations"] = caller.operations(Res.TOPIC, topic["name"])
    response["topics"] = topics
    if body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = _cluster_operations(caller)
    return response


def _cluster_operations(caller: Caller) -> int:
    # Kafka fills the cluster's operations only for a principal that may DESCRIBE it
    if not caller.may_cluster(Op.DESCRIBE):
        return 0
    return caller.operations(Res.CLUSTER, CLUSTER_NAME)


@rule(ApiKey.DESCRIBE_CLUSTER)
async def _describe_cluster(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    response = await h.handle(ctx, body)
    if body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = _cluster_operations(caller)
    return response


@rule(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
async def _describe_topic_partitions(
    caller: Caller, ctx: RequestContext, body: Any, handler: Handler
) -> Any:
    allowed = [t for t in body["topics"] if caller.may(Op.DESCRIBE, Res.TOPIC, t["name"])]
    refused = [t["name"] for t in body["topics"] if t not in allowed]
    if refused and not allowed and body["topics"]:
        response = {"topics": [], "next_cursor": None}
    else:
        response = await handler.handle(ctx, {**body, "topics": allowed})
    topics = response["topics"]
    if not body["topics"]:  # listing every topic: the undescribable ones are left out
        topics = [t for t in topics if caller.may(Op.DESCRIBE, Res.TOPIC, t["name"])]
    for topic in topics:
        if topic["error_code"] == ErrorCode.NONE:
            topic["topic_authorized_operations"] = caller.operations(Res.TOPIC, topic["name"])
    topics += [
        {"error_code": TOPIC_DENIED, "name": n, "topic_id": ZERO_UUID, "partitions": []}
        for n in refused
    ]
    response["topics"] = sorted(topics, key=lambda t: t["name"] or "")
    return response


# -- groups and coordinators ------------------------------------------------------------------


@rule(ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP)
async def _group_member(caller: Caller, ctx: RequestContext, body: Any, handler: Handler) -> Any:
    if not caller.may(Op.READ, Res.GROUP, body["group_id"]):
        return handler.fail(body, GROUP_DENIED, ctx.api_version)
    return await handler.handle(ctx, body)


@rule(ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_HEARTBEAT)
async def _consumer_group(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    # KIP-848 members need READ on their group, as classic ones do
    if not caller.may(Op.READ, Res.GROUP, body["group_id"]):
        return {"error_code": GROUP_DENIED}
    return await h.handle(ctx, body)


@rule(ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.STREAMS_GROUP_DESCRIBE)
async def _consumer_group_describe(
    caller: Caller, ctx: RequestContext, body: Any, handler: Handler
) -> Any:
    asked = body["group_ids"]
    allowed = [g for g in asked if caller.may(Op.DESCRIBE, Res.GROUP, g)]
    response = await handler.handle(ctx, {**body, "group_ids": allowed}) if allowed else {}
    served = {g["group_id"]: g for g in response.get("groups", [])}
    failed = handler.fail(body, GROUP_DENIED, ctx.api_version)["groups"]
    return {**response, "groups": [served.get(g["group_id"], g) for g in failed]}


_SHARE_GROUP_OPERATION = {
    ApiKey.SHARE_FETCH: Op.READ,
    ApiKey.SHARE_ACKNOWLEDGE: Op.READ,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: Op.READ,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: Op.DELETE,
}


@rule(*_SHARE_GROUP_OPERATION)
async def _share_group(caller: Caller, ctx: RequestContext, body: Any, handler: Handler) -> Any:
    # the whole request names one share group; its topics are not checked here
    operation = _SHARE_GROUP_OPERATION[ctx.api_key]
    if not caller.may(operation, Res.GROUP, body.get("group_id") or ""):
        return handler.fail(body, GROUP_DENIED, ctx.api_version)
    return await handler.handle(ctx, body)


@rule(ApiKey.FIND_COORDINATOR)
async def _find_coordinator(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    if body.get("key_type", CoordinatorType.GROUP) == CoordinatorType.TRANSACTION:
        resource, denied = Res.TRANSACTIONAL_ID, TXN_DENIED
    else:
        resource, denied = Res.GROUP, GROUP_DENIED
    if ctx.api_version < 4:
        if not caller.may(Op.DESCRIBE, resource, body["key"]):
            return h.fail(body, denied, ctx.api_version)
        return await h.handle(ctx, body)
    keys = body["coordinator_keys"]
    allowed = [k for k in keys if caller.may(Op.DESCRIBE, resource, k)]
    response = await h.handle(ctx, {**body, "coordinator_keys": allowed}) if allowed else {}
    found = {c["key"]: c for c in response.get("coordinators", [])}
    failed = h.fail({"coordinator_keys": keys}, denied, ctx.api_version)["coordinators"]
    return {"coordinators": [found.get(c["key"], c) for c in failed]}


_OFFSETS_SHAPE = PartitionShape(
    "topics", "partitions", "name", "partition_index", "topics", "partitions"
)


@rule(ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT)
async def _offset_commit(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    txn = body.get("transactional_id") if ctx.api_key == ApiKey.TXN_OFFSET_COMMIT else None
    if txn is not None and not caller.may(Op.WRITE, Res.TRANSACTIONAL_ID, txn):
        return h.fail(body, TXN_DENIED, ctx.api_version)
    if not caller.may(Op.READ, Res.GROUP, body["group_id"]):
        return h.fail(body, GROUP_DENIED, ctx.api_version)
    return await _per_topic(caller, ctx, body, h, _OFFSETS_SHAPE, Op.READ)


@rule(ApiKey.OFFSET_FETCH)
async def _offset_fetch(caller: Caller, ctx: RequestContext, body: Any, handler: Handler) -> Any:
    if ctx.api_version < 8:
        if not caller.may(Op.DESCRIBE, Res.GROUP, body["group_id"]):
            return handler.fail(body, GROUP_DENIED, ctx.api_version)
        response = await handler.handle(ctx, body)
        response["topics"] = _describable_offsets(caller, response["topics"], body["topics"])
        return response
    allowed = [g for g in body["groups"] if caller.may(Op.DESCRIBE, Res.GROUP, g["group_id"])]
    response = await handler.handle(ctx, {**body, "groups": allowed}) if allowed else {}
    served = {g["group_id"]: g for g in response.get("groups", [])}
    asked = {g["group_id"]: g for g in body["groups"]}
    out = []
    for failed in handler.fail(body, GROUP_DENIED, ctx.api_version)["groups"]:
        group = served.get(failed["group_id"], failed)
        group["topics"] = _describable_offsets(
            caller, group["topics"], asked[failed["group_id"]]["topics"]
        )
        out.append(group)
    return {"groups": out}


def _describable_offsets(caller: Caller, topics: list, asked: list | None) -> list:
    """Offsets of topics the caller may DESCRIBE; asked-for others answer TOPIC_AUTHORIZATION_
    FAILED per partition, and when all were asked (null) they are left out."""
    out = []
    for topic in topics:
        if caller.may(Op.DESCRIBE, Res.TOPIC, topic.get("name") or ""):
            out.append(topic)
        elif asked is not None:
            for part in topic["partitions"]:
                part["error_code"] = TOPIC_DENIED
                part["committed_offset"] = -1
            out.append(topic)
    return out


@rule(ApiKey.DESCRIBE_GROUPS)
async def _describe_groups(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    allowed = [g for g in body["groups"] if caller.may(Op.DESCRIBE, Res.GROUP, g)]
    response = await h.handle(ctx, {**body, "groups": allowed}) if allowed else {"groups": []}
    served = {g["group_id"]: g for g in response["groups"]}
    out = []
    for failed in h.fail(body, GROUP_DENIED, ctx.api_version)["groups"]:
        group = served.get(failed["group_id"], failed)
        if group is not failed and body.get("include_authorized_operations"):
            group["authorized_operations"] = caller.operations(Res.GROUP, group["group_id"])
        out.append(group)
    return {**response, "groups": out}


@rule(ApiKey.LIST_GROUPS)
async def _list_groups(caller: Caller, ctx: RequestContext, body: Any, handler: Handler) -> Any:
    response = await handler.handle(ctx, body)
    if not caller.may_cluster(Op.DESCRIBE):
        response["groups"] = [
            g for g in response["groups"] if caller.may(Op.DESCRIBE, Res.GROUP, g["group_id"])
        ]
    return response


@rule(ApiKey.DELETE_GROUPS)
async def _delete_groups(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    names = body["groups_names"]
    allowed = [g for g in names if caller.may(Op.DELETE, Res.GROUP, g)]
    response = await h.handle(ctx, {**body, "groups_names": allowed}) if allowed else {}
    served = {r["group_id"]: r for r in response.get("results", [])}
    failed = h.fail(body, GROUP_DENIED, ctx.api_version)["results"]
    return {"results": [served.get(r["group_id"], r) for r in failed]}


# -- transactions and producer ids ----------------------------------------------------------------


@rule(ApiKey.INIT_PRODUCER_ID)
async def _init_producer_id(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    txn = body.get("transactional_id")
    if txn:
        if not caller.may(Op.WRITE, Res.TRANSACTIONAL_ID, txn):
            return h.fail(body, TXN_DENIED, ctx.api_version)
    elif not caller.may_cluster(Op.IDEMPOTENT_WRITE) and not caller.authorizer.any_allowed(
        caller.acls, caller.principal, caller.host, Op.WRITE, Res.TOPIC
    ):
        # KIP-679: WRITE on any topic allows an idempotent producer as IDEMPOTENT_WRITE does
        return h.fail(body, CLUSTER_DENIED, ctx.api_version)
    return await h.handle(ctx, body)


@rule(ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN)
async def _transaction(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    txn = body.get("transactional_id") or body.get("v3_and_below_transactional_id")
    if txn is not None and not caller.may(Op.WRITE, Res.TRANSACTIONAL_ID, txn):
        return h.fail(body, TXN_DENIED, ctx.api_version)
    if ctx.api_key == ApiKey.ADD_OFFSETS_TO_TXN and not caller.may(
        Op.READ, Res.GROUP, body["group_id"]
    ):
        return h.fail(body, GROUP_DENIED, ctx.api_version)
    if ctx.api_key == ApiKey.ADD_PARTITIONS_TO_TXN and ctx.api_version < 4:
        names = [t["name"] for t in body["v3_and_below_topics"]]
        if not all(caller.may(Op.WRITE, Res.TOPIC, n) for n in names):
            return h.fail(body, TOPIC_DENIED, ctx.api_version)
    return await h.handle(ctx, body)


# -- admin (forwarded to the controller) ------------------------------------------------------


#: Topic admin APIs: the operation each needs per topic, and its response's list of results.
_TOPIC_ADMIN = {
    ApiKey.CREATE_TOPICS: (Op.CREATE, "topics"),
    ApiKey.DELETE_TOPICS: (Op.DELETE, "responses"),
    ApiKey.CREATE_PARTITIONS: (Op.ALTER, "results"),
}


@rule(*_TOPIC_ADMIN)
async def _topics_admin(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    operation, out_key = _TOPIC_ADMIN[ctx.api_key]
    # DeleteTopics names its topics as bare strings before v6
    by_name = ctx.api_key == ApiKey.DELETE_TOPICS and ctx.api_version < 6
    entries = body["topic_names"] if by_name else body["topics"]
    names = entries if by_name else [topic_name(ctx.broker.image, e) or "" for e in entries]
    cluster_wide = ctx.api_key == ApiKey.CREATE_TOPICS and caller.may_cluster(Op.CREATE)
    keep = [cluster_wide or caller.may(operation, Res.TOPIC, n) for n in names]
    if all(keep):
        return await h.handle(ctx, body)
    failed = h.fail(body, TOPIC_DENIED, ctx.api_version)
    if not any(keep):
        return failed
    rest = [e for e, k in zip(entries, keep, strict=True) if k]
    response = await h.handle(ctx, {**body, ("topic_names" if by_name else "topics"): rest})
    served = {r.get("name"): r for r in response[out_key]}
    return {**response, out_key: [served.get(r.get("name"), r) for r in failed[out_key]]}


_CONFIG_OPERATION = {
    ApiKey.DESCRIBE_CONFIGS: Op.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CONFIGS: Op.ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Op.ALTER_CONFIGS,
}


@rule(ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS)
async def _configs(caller: Caller, ctx: RequestContext, body: Any, handler: Handler) -> Any:
    operation = _CONFIG_OPERATION[ctx.api_key]

    def denial(resource: Any) -> int | None:
        if resource["resource_type"] == ConfigResourceType.TOPIC:
            ok = caller.may(operation, Res.TOPIC, resource["resource_name"])
            return None if ok else TOPIC_DENIED
        return None if caller.may_cluster(operation) else CLUSTER_DENIED

    resources = body["resources"]
    codes = [denial(r) for r in resources]
    if not any(codes):
        return await handler.handle(ctx, body)
    allowed = [r for r, c in zip(resources, codes, strict=True) if c is None]
    response = await handler.handle(ctx, {**body, "resources": allowed}) if allowed else {}
    out_key = "results" if ctx.api_key == ApiKey.DESCRIBE_CONFIGS else "responses"
    served = {(r["resource_type"], r["resource_name"]): r for r in response.get(out_key, [])}
    out = []
    for resource, code in zip(resources, codes, strict=True):
        key = (resource["resource_type"], resource["resource_name"])
        if code is None and key in served:
            out.append(served[key])
        else:
            denied = code if code is not None else ErrorCode.UNKNOWN_SERVER_ERROR
            out.append(handler.fail({"resources": [resource]}, denied, ctx.api_version)[out_key][0])
    return {**response, out_key: out}


#: APIs that need one operation on the cluster.
_CLUSTER_OPERATION = {
    ApiKey.ELECT_LEADERS: Op.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Op.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Op.DESCRIBE,
    ApiKey.UPDATE_FEATURES: Op.ALTER,
    ApiKey.DESCRIBE_LOG_DIRS: Op.DESCRIBE,
    ApiKey.ALTER_REPLICA_LOG_DIRS: Op.ALTER,
    ApiKey.UNREGISTER_BROKER: Op.ALTER,
    ApiKey.CREATE_ACLS: Op.ALTER,
    ApiKey.DELETE_ACLS: Op.ALTER,
    ApiKey.DESCRIBE_ACLS: Op.DESCRIBE,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Op.ALTER,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Op.DESCRIBE,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: Op.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CLIENT_QUOTAS: Op.ALTER_CONFIGS,
    # forwarded to the controller, which would check them; the broker checks them first
    ApiKey.DESCRIBE_QUORUM: Op.DESCRIBE,
    ApiKey.ADD_RAFT_VOTER: Op.ALTER,
    ApiKey.REMOVE_RAFT_VOTER: Op.ALTER,
    ApiKey.UNREGISTER_CONTROLLER: Op.ALTER,
}


@rule(*_CLUSTER_OPERATION)
async def _cluster_admin(caller: Caller, ctx: RequestContext, body: Any, h: Handler) -> Any:
    if not caller.may_cluster(_CLUSTER_OPERATION[ctx.api_key]):
        return h.fail(body, CLUSTER_DENIED, ctx.api_version)
    return await h.handle(ctx, body)
