"""Authorization on the controller's client listener (what `--bootstrap-controller` reaches), as
Kafka's ControllerApis does it on a cluster with `authorizer=True`.

Every API the controller serves is checked before the sans-I/O controller sees it, against the
controller's own replayed ACLs (`ClusterState.acls`) with the brokers' `Authorizer`:

- the broker-to-controller APIs (BrokerRegistration, BrokerHeartbeat, AlterPartition, the
  metadata log's Fetch, ControllerRegistration, AssignReplicasToDirs ...) need CLUSTER_ACTION on
  the cluster; UnregisterBroker, ElectLeaders, Alter/ListPartitionReassignments, UpdateFeatures,
  the ACL APIs, AlterUserScramCredentials and DescribeQuorum one operation on the cluster; a
  denial is the API's error response with CLUSTER_AUTHORIZATION_FAILED;
- CreateTopics (CREATE on the cluster, else per topic), DeleteTopics (DELETE, per topic, by name
  or id), CreatePartitions (ALTER per topic) answer TOPIC_AUTHORIZATION_FAILED per topic and let
  the controller serve the rest; the config APIs check each resource (CLUSTER_, TOPIC_ or
  GROUP_AUTHORIZATION_FAILED);
- delegation tokens are the requester's own (another owner needs CREATE_TOKENS on that user),
  renewed or expired only by their owner or a renewer, as the brokers check before forwarding.

Only connections with a principal (`security.context.PRINCIPAL`: the secured client listener)
are checked; the internal listener the brokers dial has none, and a cluster without the
authorizer never builds this (`ControllerNode(authorization=None)`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from uuid import UUID

from kipwire.codec import AclOperation as Op
from kipwire.codec import AclResourceType as Res
from kipwire.codec import ApiKey, ConfigResourceType, ErrorCode

from ..handlers.acls import ACL_APIS
from ..handlers.authorization import CLUSTER_DENIED, GROUP_DENIED, TOPIC_DENIED, Caller
from ..handlers.registry import HANDLERS, Handle, top_level_error
from ..handlers.scram_credentials import SCRAM_APIS
from .authorizer import Authorizer
from .context import CLIENT_HOST, PRINCIPAL, TOKEN_AUTHENTICATED
from .tokens import find_by_hmac, split_principal

if TYPE_CHECKING:
    from ..controller.state import ClusterState

ZERO_UUID = UUID(int=0)
Serve = Callable[[Any], Awaitable[Any]]
#: Kafka's default messages (Errors.java), which ApiError(error) carries in per-entry results.
MESSAGES = {
    TOPIC_DENIED: "Topic authorization failed.",
    GROUP_DENIED: "Group authorization failed.",
    CLUSTER_DENIED: "Cluster authorization failed.",
}


@dataclass(frozen=True, slots=True)
class Check:
    """One request being authorized: who sent it, its API and version, the controller's state."""

    caller: Caller
    api_key: int
    version: int
    state: ClusterState
    #: delegation.token.secret.key (None: tokens are disabled)
    token_secret: bytes | None
    #: serves the request at another version (the token owner's fields are v3+)
    serve_at: Callable[[int, Any], Awaitable[Any]]

    def fail(self, body: Any, code: int) -> dict:
        """The API's error response with `code` everywhere (Kafka's getErrorResponse)."""
        for table in (HANDLERS, ACL_APIS, SCRAM_APIS):
            handler = table.get(self.api_key)
            if handler is not None:
                return handler.fail(body, code, self.version)
        return top_level_error(body, code, self.version)


Rule = Callable[[Check, Any, Serve], Awaitable[Any]]
RULES: dict[int, Rule] = {}

#: The one cluster operation each API needs (ControllerApis' authorizeClusterOperation).
CLUSTER_OPERATION: Mapping[int, int] = {
    ApiKey.FETCH: Op.CLUSTER_ACTION,
    ApiKey.FETCH_SNAPSHOT: Op.CLUSTER_ACTION,
    ApiKey.VOTE: Op.CLUSTER_ACTION,
    ApiKey.BEGIN_QUORUM_EPOCH: Op.CLUSTER_ACTION,
    ApiKey.END_QUORUM_EPOCH: Op.CLUSTER_ACTION,
    ApiKey.UPDATE_RAFT_VOTER: Op.CLUSTER_ACTION,
    ApiKey.ALTER_PARTITION: Op.CLUSTER_ACTION,
    ApiKey.BROKER_REGISTRATION: Op.CLUSTER_ACTION,
    ApiKey.BROKER_HEARTBEAT: Op.CLUSTER_ACTION,
    ApiKey.CONTROLLER_REGISTRATION: Op.CLUSTER_ACTION,
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: Op.CLUSTER_ACTION,
    ApiKey.ALLOCATE_PRODUCER_IDS: Op.CLUSTER_ACTION,
    ApiKey.ENVELOPE: Op.CLUSTER_ACTION,
    ApiKey.UNREGISTER_BROKER: Op.ALTER,
    ApiKey.ELECT_LEADERS: Op.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Op.ALTER,
    ApiKey.UPDATE_FEATURES: Op.ALTER,
    ApiKey.CREATE_ACLS: Op.ALTER,
    ApiKey.DELETE_ACLS: Op.ALTER,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Op.ALTER,
    ApiKey.ADD_RAFT_VOTER: Op.ALTER,
    ApiKey.REMOVE_RAFT_VOTER: Op.ALTER,
    ApiKey.UNREGISTER_CONTROLLER: Op.ALTER,
    # unlike a broker, a controller asks ALTER for DescribeCluster
    ApiKey.DESCRIBE_CLUSTER: Op.ALTER,
    ApiKey.ALTER_CLIENT_QUOTAS: Op.ALTER_CONFIGS,
    ApiKey.DESCRIBE_QUORUM: Op.DESCRIBE,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Op.DESCRIBE,
    ApiKey.DESCRIBE_ACLS: Op.DESCRIBE,
}


class ControllerAuthorization:
    """Wraps the controller's handlers with Kafka's checks (one per cluster with the authorizer)."""

    def __init__(
        self,
        authorizer: Authorizer,
        state: Callable[[], ClusterState],
        token_secret: bytes | None = None,
    ) -> None:
        self.authorizer = authorizer
        self._state = state
        self.token_secret = token_secret

    def guard(self, api_key: int, handle: Handle) -> Handle:
        """`handle` checked first when a principal sends `api_key` (unchanged without a rule)."""
        rule = RULES.get(api_key) or (_cluster if api_key in CLUSTER_OPERATION else None)
        if rule is None:
            return handle

        async def checked(ctx: Any, body: Any) -> Any:
            principal = PRINCIPAL.get()
            if principal is None:  # the internal listener: another node of the cluster
                return await handle(ctx, body)
            state = self._state()
            caller = Caller(self.authorizer, state.acls, principal, CLIENT_HOST.get())

            def serve_at(version: int, b: Any) -> Awaitable[Any]:
                return handle(replace(ctx, api_version=version), b)

            check = Check(caller, ctx.api_key, ctx.api_version, state, self.token_secret, serve_at)
            return await rule(check, body, lambda b: handle(ctx, b))

        checked.__doc__ = f"{handle.__doc__} (authorized first)"
        return checked


def _rule(*keys: ApiKey) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for key in keys:
            RULES[key] = fn
        return fn

    return register


async def _cluster(check: Check, body: Any, serve: Serve) -> Any:
    if check.caller.may_cluster(CLUSTER_OPERATION[check.api_key]):
        return await serve(body)
    return check.fail(body, CLUSTER_DENIED)


@_rule(ApiKey.FETCH)
async def _fetch(check: Check, body: Any, serve: Serve) -> Any:
    if check.caller.may_cluster(Op.CLUSTER_ACTION):
        return await serve(body)
    # FetchRequest.getErrorResponse: v13+ the top-level code alone; older versions also per
    # partition, for clients of versions that read errors only there
    topics = [] if check.version >= 13 else body["topics"]
    return {
        "error_code": CLUSTER_DENIED,
        "session_id": body.get("session_id", 0),
        "responses": [
            {
                "topic": t.get("topic"),
                "topic_id": t.get("topic_id") or ZERO_UUID,
                "partitions": [
                    {"partition_index": p["partition"], "error_code": CLUSTER_DENIED}
                    for p in t["partitions"]
                ],
            }
            for t in topics
        ],
    }


def _duplicates(keys: list[Any]) -> set[Any]:
    return {k for k, n in Counter(keys).items() if n > 1}


@_rule(ApiKey.CREATE_TOPICS)
async def _create_topics(check: Check, body: Any, serve: Serve) -> Any:
    caller = check.caller
    names = [t["name"] for t in body["topics"]]
    # duplicates are refused before authorization (the controller's own INVALID_REQUEST)
    skip = _duplicates(names)
    cluster_wide = caller.may_cluster(Op.CREATE)
    if cluster_wide:
        denied: set[str] = set()
    else:
        denied = {n for n in names if n not in skip and not caller.may(Op.CREATE, Res.TOPIC, n)}
    kept = [t for t in body["topics"] if t["name"] not in denied]
    response = await serve({**body, "topics": kept}) if kept or not denied else {"topics": []}
    for result in response["topics"]:
        # a created topic's configs are shown only to who may DESCRIBE_CONFIGS it
        if result["error_code"] == ErrorCode.NONE and not caller.may(
            Op.DESCRIBE_CONFIGS, Res.TOPIC, result["name"]
        ):
            result.update(
                configs=[],
                num_partitions=-1,
                replication_factor=-1,
                topic_config_error_code=TOPIC_DENIED,
            )
    response["topics"] += [
        {"name": n, "error_code": TOPIC_DENIED, "error_message": "Authorization failed."}
        for n in dict.fromkeys(n for n in names if n in denied)
    ]
    return response


@_rule(ApiKey.DELETE_TOPICS)
async def _delete_topics(check: Check, body: Any, serve: Serve) -> Any:
    caller, state = check.caller, check.state
    cluster_wide = caller.may_cluster(Op.DELETE)
    by_name = check.version < 6
    entries = list(body["topic_names"]) if by_name else list(body["topics"])

    def ident(entry: Any) -> tuple[str | None, UUID]:
        if by_name:
            return entry, ZERO_UUID
        return entry.get("name"), entry.get("topic_id") or ZERO_UUID

    def denial(entry: Any) -> dict | None:
        if cluster_wide:
            return None
        name, topic_id = ident(entry)
        if name is not None and topic_id != ZERO_UUID:
            return None  # both given: the controller's INVALID_REQUEST
        if name is None:
            topic = state.topics.get(topic_id)
            if topic is None or caller.may(Op.DELETE, Res.TOPIC, topic.name):
                return None  # an unknown id is the controller's UNKNOWN_TOPIC_ID
            # the name only to who may see it: an id must not reveal its topic
            shown = topic.name if caller.may(Op.DESCRIBE, Res.TOPIC, topic.name) else None
            return {"name": shown, "topic_id": topic_id, "error_code": TOPIC_DENIED}
        if not caller.may(Op.DESCRIBE, Res.TOPIC, name) or (
            state.topic(name) is not None and not caller.may(Op.DELETE, Res.TOPIC, name)
        ):
            return {"name": name, "topic_id": ZERO_UUID, "error_code": TOPIC_DENIED}
        return None  # describable and absent: the controller's UNKNOWN_TOPIC_OR_PARTITION

    dupes = _duplicates([ident(e) for e in entries])
    kept, refused = [], {}
    for entry in entries:
        found = denial(entry)
        if found is None:
            kept.append(entry)
        elif ident(entry) in dupes:
            # a duplicate is refused before authorization, answered once, never served
            what = "id" if ident(entry)[0] is None else "name"
            message = f"Duplicate topic {what}."
            refused[ident(entry)] = {**found, "error_code": ErrorCode.INVALID_REQUEST}
            refused[ident(entry)]["error_message"] = message
        else:
            refused[ident(entry)] = {**found, "error_message": MESSAGES[TOPIC_DENIED]}
    if not refused:
        return await serve(body)
    rest = {**body, ("topic_names" if by_name else "topics"): kept}
    response = await serve(rest) if kept else {"responses": []}
    response["responses"] += refused.values()
    return response


@_rule(ApiKey.CREATE_PARTITIONS)
async def _create_partitions(check: Check, body: Any, serve: Serve) -> Any:
    names = [t["name"] for t in body["topics"]]
    dupes = _duplicates(names)
    denied = {n for n in names if not check.caller.may(Op.ALTER, Res.TOPIC, n)}
    if not denied:
        return await serve(body)
    kept = [t for t in body["topics"] if t["name"] not in denied]
    response = await serve({**body, "topics": kept}) if kept else {"results": []}
    for name in dict.fromkeys(n for n in names if n in denied):
        if name in dupes:  # refused before authorization, and never served
            code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic name."
        else:
            code, message = TOPIC_DENIED, None
        response["results"].append({"name": name, "error_code": code, "error_message": message})
    return response


#: Config resource type -> (the ACL resource it is checked on, the error a denial answers).
_CONFIG_RESOURCE = {
    ConfigResourceType.TOPIC: (Res.TOPIC, TOPIC_DENIED),
    ConfigResourceType.GROUP: (Res.GROUP, GROUP_DENIED),
    ConfigResourceType.BROKER: (Res.CLUSTER, CLUSTER_DENIED),
    ConfigResourceType.BROKER_LOGGER: (Res.CLUSTER, CLUSTER_DENIED),
    ConfigResourceType.CLIENT_METRICS: (Res.CLUSTER, CLUSTER_DENIED),
}


def _config_denial(check: Check, resource: Any) -> int | None:
    rtype, name = resource["resource_type"], resource["resource_name"]
    if rtype not in _CONFIG_RESOURCE:
        return None  # an unknown type: the controller's own error
    if check.api_key == ApiKey.DESCRIBE_CONFIGS:
        operation = Op.DESCRIBE_CONFIGS
    elif rtype == ConfigResourceType.BROKER_LOGGER:
        operation = Op.CLUSTER_ACTION  # the runtime logger manager's check
    else:
        operation = Op.ALTER_CONFIGS
    acl_type, code = _CONFIG_RESOURCE[rtype]
    if acl_type == Res.CLUSTER:
        return None if check.caller.may_cluster(operation) else code
    return None if check.caller.may(operation, acl_type, name) else code


@_rule(ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS)
async def _configs(check: Check, body: Any, serve: Serve) -> Any:
    resources = body["resources"]
    codes = [_config_denial(check, r) for r in resources]
    if not any(codes):
        return await serve(body)
    describe = check.api_key == ApiKey.DESCRIBE_CONFIGS
    out_key = "results" if describe else "responses"
    keys = [(r["resource_type"], r["resource_name"]) for r in resources]
    # alters refuse a duplicate resource before authorization; it must not be served
    dupes = set() if describe else _duplicates(keys)
    allowed = [r for r, c in zip(resources, codes, strict=True) if c is None]
    response = await serve({**body, "resources": allowed}) if allowed else {out_key: []}
    seen = set()
    for key, code in zip(keys, codes, strict=True):
        if code is None or key in seen:
            continue
        seen.add(key)
        entry: dict[str, Any] = {"resource_type": key[0], "resource_name": key[1]}
        if key in dupes:
            entry.update(error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate resource.")
        else:
            entry.update(error_code=code, error_message=MESSAGES[code])
        if describe:
            entry["configs"] = []
        response[out_key].append(entry)
    return response


#: The first CreateDelegationToken version that names an owner.
OWNER_VERSION = 3


@_rule(ApiKey.CREATE_DELEGATION_TOKEN)
async def _create_token(check: Check, body: Any, serve: Serve) -> Any:
    # the controller writes the token for the owner the request names: the requester unless
    # it names another, which needs CREATE_TOKENS on that user (Kafka's checks)
    requester = check.caller.principal
    owner_name = body.get("owner_principal_name")
    kind = body.get("owner_principal_type") or "User"
    owner = f"{kind}:{owner_name}" if owner_name else requester
    code = None
    if check.token_secret is None:
        code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    elif TOKEN_AUTHENTICATED.get():
        code = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    elif any(r["principal_type"] != "User" for r in body["renewers"]):
        code = ErrorCode.INVALID_PRINCIPAL_TYPE
    elif owner != requester and not check.caller.may(Op.CREATE_TOKENS, Res.USER, owner):
        code = ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    if code is not None:
        return {"error_code": code, "principal_type": "", "principal_name": "", "token_id": ""}
    kind, name = split_principal(owner)
    asked = {
        "owner_principal_type": kind,
        "owner_principal_name": name,
        "renewers": body["renewers"],
        "max_lifetime_ms": body["max_lifetime_ms"],
    }
    response = dict(await check.serve_at(max(check.version, OWNER_VERSION), asked))
    if check.version < OWNER_VERSION:
        response.pop("token_requester_principal_type", None)
        response.pop("token_requester_principal_name", None)
    else:
        kind, name = split_principal(requester)
        response.update(token_requester_principal_type=kind, token_requester_principal_name=name)
    return response


@_rule(ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN)
async def _owned_token(check: Check, body: Any, serve: Serve) -> Any:
    # only the token's owner or one of its renewers renews or expires it
    code = None
    if check.token_secret is None:
        code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    elif TOKEN_AUTHENTICATED.get():
        code = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    else:
        token = find_by_hmac(check.token_secret, check.state.tokens, bytes(body["hmac"]))
        principal = check.caller.principal
        if token is None:
            code = ErrorCode.DELEGATION_TOKEN_NOT_FOUND
        elif principal != token.owner and principal not in token.renewers:
            code = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    if code is not None:
        return {"error_code": code, "expiry_timestamp_ms": -1}
    return await serve(body)
