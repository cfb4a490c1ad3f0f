"""Every API a broker serves under the default preset (Kafka 4.4.0), at every version Kafka 4.4
lists, with a real request (what a client sends to do that API's work) through the codec to a
running mock: each answer decodes at its version and carries no error code but the one Kafka
4.4.0 answers that request with (`quorum_requests.REFUSED_AS_KAFKA_DOES`)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import quorum_requests
from group_requests import GroupRequests
from kafka_wire import WireClient

from kipwire.codec import APIS, AlterConfigOp, ApiKey, ConfigResourceType, ErrorCode, OffsetSpec
from kipwire.codec.records import build_batch
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.handlers.registry import listed
from kipwire.mockbroker.handlers.streams_groups import DESCRIPTION_STORE

TOPIC = "every-version"
CLIENT = {"client_software_name": "kipwire-tests", "client_software_version": "1"}
_ids = itertools.count()


@dataclass
class Ctx:
    """The running one-broker cluster and a client connected to it."""

    cluster: MockCluster
    client: WireClient
    topic_id: uuid.UUID

    def call(self, key: int, version: int, body: dict) -> Any:
        return self.client.call(key, version, body)

    def fresh(self, prefix: str) -> str:
        """A name no other case uses."""
        return f"{prefix}-{next(_ids)}"


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    """One broker: it leads every partition and coordinates every group and transaction (and
    keeps streams topology descriptions, so that their update is answered without an error)."""
    with MockCluster(brokers=1, config={DESCRIPTION_STORE: "true"}) as running:
        running.create_topic(TOPIC, partitions=2)
        yield running


@pytest.fixture
def ctx(cluster: MockCluster) -> Iterator[Ctx]:
    with WireClient(cluster.bootstrap_servers) as client:
        (topic,) = client.call(ApiKey.METADATA, 12, {"topics": [{"name": TOPIC}]})["topics"]
        yield Ctx(cluster, client, topic["topic_id"])


def _topic(ctx: Ctx, version: int, by_id_from: int) -> dict:
    """A topic entry naming the test topic by name, or by id from `by_id_from`."""
    return {"topic_id": ctx.topic_id} if version >= by_id_from else {"name": TOPIC}


# ---------------------------------------------------------------- data plane


def _produce(ctx: Ctx, v: int) -> Any:
    batch = build_batch([{"key": b"k", "value": b"v"}])
    topic = {**_topic(ctx, v, 13), "partition_data": [{"index": 0, "records": batch}]}
    return ctx.call(ApiKey.PRODUCE, v, {"acks": 1, "timeout_ms": 5000, "topic_data": [topic]})


def _fetch(ctx: Ctx, v: int) -> Any:
    part = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    topic = {("topic_id" if v >= 13 else "topic"): ctx.topic_id if v >= 13 else TOPIC}
    body = {"max_wait_ms": 0, "min_bytes": 0, "topics": [{**topic, "partitions": [part]}]}
    if v < 15:
        body["replica_id"] = -1
    return ctx.call(ApiKey.FETCH, v, body)


def _list_offsets(ctx: Ctx, v: int) -> Any:
    part = {"partition_index": 0, "timestamp": OffsetSpec.LATEST}
    if v == 0:
        part["max_num_offsets"] = 1
    topic = {"name": TOPIC, "partitions": [part]}
    return ctx.call(ApiKey.LIST_OFFSETS, v, {"replica_id": -1, "topics": [topic]})


def _metadata(ctx: Ctx, v: int) -> Any:
    return ctx.call(ApiKey.METADATA, v, {"topics": [{"name": TOPIC}]})


def _delete_records(ctx: Ctx, v: int) -> Any:
    topic = {"name": TOPIC, "partitions": [{"partition_index": 1, "offset": 0}]}
    return ctx.call(ApiKey.DELETE_RECORDS, v, {"topics": [topic], "timeout_ms": 5000})


def _offset_for_leader_epoch(ctx: Ctx, v: int) -> Any:
    part = {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}
    body = {"topics": [{"topic": TOPIC, "partitions": [part]}]}
    if v >= 3:
        body["replica_id"] = -1
    return ctx.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, v, body)


def _describe_topic_partitions(ctx: Ctx, v: int) -> Any:
    body = {"topics": [{"name": TOPIC}], "response_partition_limit": 10}
    return ctx.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, v, body)


# ---------------------------------------------------------------- groups


def _join(ctx: Ctx, v: int, group: str) -> Any:
    """A member joins `group` alone (v4+: after the member id the coordinator hands out)."""
    body = {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    joined = ctx.call(ApiKey.JOIN_GROUP, v, body)
    if joined["error_code"] == ErrorCode.MEMBER_ID_REQUIRED:
        # KIP-394: the first join of a v4+ member only learns its id
        joined = ctx.call(ApiKey.JOIN_GROUP, v, {**body, "member_id": joined["member_id"]})
    return joined


def _joined_and_synced(ctx: Ctx, group: str) -> Any:
    joined = _join(ctx, 9, group)
    member = joined["member_id"]
    sync = {
        "group_id": group,
        "generation_id": joined["generation_id"],
        "member_id": member,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": b""}],
    }
    assert ctx.call(ApiKey.SYNC_GROUP, 5, sync)["error_code"] == ErrorCode.NONE
    return joined


def _join_group(ctx: Ctx, v: int) -> Any:
    return _join(ctx, v, ctx.fresh("join"))


def _sync_group(ctx: Ctx, v: int) -> Any:
    group = ctx.fresh("sync")
    joined = _join(ctx, 9, group)
    member = joined["member_id"]
    body = {
        "group_id": group,
        "generation_id": joined["generation_id"],
        "member_id": member,
        "assignments": [{"member_id": member, "assignment": b""}],
    }
    if v >= 5:
        body |= {"protocol_type": "consumer", "protocol_name": "range"}
    return ctx.call(ApiKey.SYNC_GROUP, v, body)


def _heartbeat(ctx: Ctx, v: int) -> Any:
    group = ctx.fresh("heartbeat")
    joined = _joined_and_synced(ctx, group)
    body = {
        "group_id": group,
        "generation_id": joined["generation_id"],
        "member_id": joined["member_id"],
    }
    return ctx.call(ApiKey.HEARTBEAT, v, body)


def _leave_group(ctx: Ctx, v: int) -> Any:
    group = ctx.fresh("leave")
    member = _joined_and_synced(ctx, group)["member_id"]
    if v < 3:
        return ctx.call(ApiKey.LEAVE_GROUP, v, {"group_id": group, "member_id": member})
    return ctx.call(ApiKey.LEAVE_GROUP, v, {"group_id": group, "members": [{"member_id": member}]})


def _describe_groups(ctx: Ctx, v: int) -> Any:
    group = ctx.fresh("describe")
    _joined_and_synced(ctx, group)
    return ctx.call(ApiKey.DESCRIBE_GROUPS, v, {"groups": [group]})


def _list_groups(ctx: Ctx, v: int) -> Any:
    return ctx.call(ApiKey.LIST_GROUPS, v, {})


def _find_coordinator(ctx: Ctx, v: int) -> Any:
    if v < 4:
        return ctx.call(ApiKey.FIND_COORDINATOR, v, {"key": "some-group"})
    return ctx.call(ApiKey.FIND_COORDINATOR, v, {"coordinator_keys": ["some-group"]})


def _commit(ctx: Ctx, v: int, group: str) -> Any:
    topic = {
        **_topic(ctx, v, 10),
        "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
    }
    body = {"group_id": group, "topics": [topic]}
    if v >= 1:
        body |= {"generation_id_or_member_epoch": -1, "member_id": ""}
    return ctx.call(ApiKey.OFFSET_COMMIT, v, body)


def _offset_commit(ctx: Ctx, v: int) -> Any:
    return _commit(ctx, v, ctx.fresh("commit"))


def _offset_fetch(ctx: Ctx, v: int) -> Any:
    group = ctx.fresh("fetch")
    _commit(ctx, 9, group)
    if v < 8:
        topics = [{"name": TOPIC, "partition_indexes": [0]}]
        return ctx.call(ApiKey.OFFSET_FETCH, v, {"group_id": group, "topics": topics})
    topics = [{**_topic(ctx, v, 10), "partition_indexes": [0]}]
    return ctx.call(ApiKey.OFFSET_FETCH, v, {"groups": [{"group_id": group, "topics": topics}]})


def _offset_delete(ctx: Ctx, v: int) -> Any:
    group = ctx.fresh("offset-delete")
    _commit(ctx, 9, group)
    topic = {"name": TOPIC, "partitions": [{"partition_index": 0}]}
    return ctx.call(ApiKey.OFFSET_DELETE, v, {"group_id": group, "topics": [topic]})


def _consumer_join(ctx: Ctx, v: int, group: str) -> Any:
    """A KIP-848 member joins `group` (member ids are the client's from v1; v0 may give one)."""
    body = {
        "group_id": group,
        "member_id": str(uuid.uuid4()),
        "member_epoch": 0,
        "rebalance_timeout_ms": 5000,
        "subscribed_topic_names": [TOPIC],
        "topic_partitions": [],
    }
    return ctx.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, v, body)


def _consumer_group_heartbeat(ctx: Ctx, v: int) -> Any:
    return _consumer_join(ctx, v, ctx.fresh("consumer"))


def _consumer_group_describe(ctx: Ctx, v: int) -> Any:
    group = ctx.fresh("consumer-describe")
    _consumer_join(ctx, 1, group)
    return ctx.call(ApiKey.CONSUMER_GROUP_DESCRIBE, v, {"group_ids": [group]})


def _delete_groups(ctx: Ctx, v: int) -> Any:
    group = ctx.fresh("delete")
    _commit(ctx, 9, group)
    return ctx.call(ApiKey.DELETE_GROUPS, v, {"groups_names": [group]})


# ---------------------------------------------------------------- producers and transactions


def _init(ctx: Ctx, txn: str | None) -> dict:
    body = {"transactional_id": txn, "transaction_timeout_ms": 60000}
    init = ctx.call(ApiKey.INIT_PRODUCER_ID, 5, body)
    assert init["error_code"] == ErrorCode.NONE
    return {"producer_id": init["producer_id"], "producer_epoch": init["producer_epoch"]}


def _init_producer_id(ctx: Ctx, v: int) -> Any:
    body = {"transactional_id": ctx.fresh("txn"), "transaction_timeout_ms": 60000}
    return ctx.call(ApiKey.INIT_PRODUCER_ID, v, body)


def _add_partitions_to_txn(ctx: Ctx, v: int) -> Any:
    txn = ctx.fresh("txn")
    producer = _init(ctx, txn)
    topics = [{"name": TOPIC, "partitions": [0]}]
    if v < 4:
        body = {
            "v3_and_below_transactional_id": txn,
            "v3_and_below_producer_id": producer["producer_id"],
            "v3_and_below_producer_epoch": producer["producer_epoch"],
            "v3_and_below_topics": topics,
        }
    else:
        # v4+ is what brokers send: verify_only asks whether the partitions already joined
        add = {"transactional_id": txn, **producer, "verify_only": False, "topics": topics}
        body = {"transactions": [add]}
    return ctx.call(ApiKey.ADD_PARTITIONS_TO_TXN, v, body)


def _add_offsets_to_txn(ctx: Ctx, v: int) -> Any:
    txn = ctx.fresh("txn")
    body = {"transactional_id": txn, **_init(ctx, txn), "group_id": ctx.fresh("txn-group")}
    return ctx.call(ApiKey.ADD_OFFSETS_TO_TXN, v, body)


def _txn_with_offsets(ctx: Ctx) -> tuple[dict, str]:
    txn, group = ctx.fresh("txn"), ctx.fresh("txn-group")
    ids = {"transactional_id": txn, **_init(ctx, txn)}
    added = ctx.call(ApiKey.ADD_OFFSETS_TO_TXN, 4, {**ids, "group_id": group})
    assert added["error_code"] == ErrorCode.NONE
    return ids, group


def _end_txn(ctx: Ctx, v: int) -> Any:
    ids, _ = _txn_with_offsets(ctx)
    return ctx.call(ApiKey.END_TXN, v, {**ids, "committed": True})


def _txn_offset_commit(ctx: Ctx, v: int) -> Any:
    ids, group = _txn_with_offsets(ctx)
    part = {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}
    topic = {**_topic(ctx, v, 6), "partitions": [part]}
    return ctx.call(ApiKey.TXN_OFFSET_COMMIT, v, {**ids, "group_id": group, "topics": [topic]})


def _describe_producers(ctx: Ctx, v: int) -> Any:
    topics = [{"name": TOPIC, "partition_indexes": [0]}]
    return ctx.call(ApiKey.DESCRIBE_PRODUCERS, v, {"topics": topics})


def _describe_transactions(ctx: Ctx, v: int) -> Any:
    txn = ctx.fresh("txn")
    _init(ctx, txn)
    return ctx.call(ApiKey.DESCRIBE_TRANSACTIONS, v, {"transactional_ids": [txn]})


def _list_transactions(ctx: Ctx, v: int) -> Any:
    body: dict = {"state_filters": [], "producer_id_filters": []}
    if v >= 1:
        body["duration_filter"] = -1
    return ctx.call(ApiKey.LIST_TRANSACTIONS, v, body)


def _write_txn_markers(ctx: Ctx, v: int) -> Any:
    # what `kafka-transactions abort` sends: an ABORT marker for a producer on one partition
    marker = {
        **_init(ctx, None),
        "transaction_result": False,
        "topics": [{"name": TOPIC, "partition_indexes": [1]}],
        "coordinator_epoch": 0,
    }
    return ctx.call(ApiKey.WRITE_TXN_MARKERS, v, {"markers": [marker]})


# ---------------------------------------------------------------- admin


def _topic_resource(name: str = TOPIC) -> dict:
    return {"resource_type": ConfigResourceType.TOPIC, "resource_name": name}


def _create_topics(ctx: Ctx, v: int) -> Any:
    topic = {"name": ctx.fresh("created"), "num_partitions": 1, "replication_factor": 1}
    return ctx.call(ApiKey.CREATE_TOPICS, v, {"topics": [topic], "timeout_ms": 5000})


def _new_topic(ctx: Ctx) -> tuple[str, uuid.UUID]:
    name = ctx.fresh("doomed")
    ctx.cluster.create_topic(name)
    (topic,) = ctx.call(ApiKey.METADATA, 12, {"topics": [{"name": name}]})["topics"]
    return name, topic["topic_id"]


def _delete_topics(ctx: Ctx, v: int) -> Any:
    name, topic_id = _new_topic(ctx)
    if v < 6:
        return ctx.call(ApiKey.DELETE_TOPICS, v, {"topic_names": [name], "timeout_ms": 5000})
    body = {"topics": [{"name": None, "topic_id": topic_id}], "timeout_ms": 5000}
    return ctx.call(ApiKey.DELETE_TOPICS, v, body)


def _create_partitions(ctx: Ctx, v: int) -> Any:
    name, _ = _new_topic(ctx)
    topic = {"name": name, "count": 2, "assignments": None}
    return ctx.call(ApiKey.CREATE_PARTITIONS, v, {"topics": [topic], "timeout_ms": 5000})


def _describe_configs(ctx: Ctx, v: int) -> Any:
    resource = {**_topic_resource(), "configuration_keys": ["retention.ms"]}
    return ctx.call(ApiKey.DESCRIBE_CONFIGS, v, {"resources": [resource]})


def _alter_configs(ctx: Ctx, v: int) -> Any:
    name, _ = _new_topic(ctx)
    configs = [{"name": "retention.ms", "value": "3600000"}]
    body = {"resources": [{**_topic_resource(name), "configs": configs}]}
    return ctx.call(ApiKey.ALTER_CONFIGS, v, body)


def _incremental_alter_configs(ctx: Ctx, v: int) -> Any:
    configs = [{"name": "retention.ms", "config_operation": AlterConfigOp.SET, "value": "7200000"}]
    body = {"resources": [{**_topic_resource(), "configs": configs}]}
    return ctx.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, v, body)


def _elect_leaders(ctx: Ctx, v: int) -> Any:
    # every partition (null): those whose preferred leader leads need nothing and, as Kafka
    # answers, are left out rather than listed with ELECTION_NOT_NEEDED
    body = {"topic_partitions": None, "timeout_ms": 5000}
    if v >= 1:
        body["election_type"] = 1
    return ctx.call(ApiKey.ELECT_LEADERS, v, body)


def _alter_partition_reassignments(ctx: Ctx, v: int) -> Any:
    part = {"partition_index": 1, "replicas": [1]}
    body = {"topics": [{"name": TOPIC, "partitions": [part]}], "timeout_ms": 5000}
    return ctx.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, v, body)


def _list_partition_reassignments(ctx: Ctx, v: int) -> Any:
    body = {"topics": [{"name": TOPIC, "partition_indexes": [0]}], "timeout_ms": 5000}
    return ctx.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, v, body)


def _update_features(ctx: Ctx, v: int) -> Any:
    update = {"feature": "eligible.leader.replicas.version", "max_version_level": 1}
    update |= {"allow_downgrade": False} if v == 0 else {"upgrade_type": 1}
    return ctx.call(ApiKey.UPDATE_FEATURES, v, {"feature_updates": [update], "timeout_ms": 5000})


def _describe_cluster(ctx: Ctx, v: int) -> Any:
    return ctx.call(ApiKey.DESCRIBE_CLUSTER, v, {})


def _api_versions(ctx: Ctx, v: int) -> Any:
    return ctx.call(ApiKey.API_VERSIONS, v, CLIENT if v >= 3 else {})


def _describe_quorum(ctx: Ctx, v: int) -> Any:
    topic = {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
    return ctx.call(ApiKey.DESCRIBE_QUORUM, v, {"topics": [topic]})


def _describe_log_dirs(ctx: Ctx, v: int) -> Any:
    return ctx.call(ApiKey.DESCRIBE_LOG_DIRS, v, {"topics": [{"topic": TOPIC, "partitions": [0]}]})


def _alter_replica_log_dirs(ctx: Ctx, v: int) -> Any:
    # to the directory it is in (the broker's only one, in memory): nothing moves
    (log_dir,) = ctx.call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})["results"]
    path = log_dir["log_dir"]
    dirs = [{"path": path, "topics": [{"name": TOPIC, "partitions": [0]}]}]
    return ctx.call(ApiKey.ALTER_REPLICA_LOG_DIRS, v, {"dirs": dirs})


def _unregister_broker(ctx: Ctx, v: int) -> Any:
    # a broker of its own cluster, stopped first: unregistering a live one would end it
    with MockCluster(brokers=2) as other, WireClient(other.bootstrap_servers.split(",")[0]) as c:
        other.stop_broker(2)
        return c.call(ApiKey.UNREGISTER_BROKER, v, {"broker_id": 2})


def _describe_client_quotas(ctx: Ctx, v: int) -> Any:
    return ctx.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, v, {"components": [], "strict": False})


def _alter_client_quotas(ctx: Ctx, v: int) -> Any:
    entity = [{"entity_type": "client-id", "entity_name": f"every-request-v{v}"}]
    ops = [{"key": "consumer_byte_rate", "value": 1e9, "remove": False}]
    return ctx.call(
        ApiKey.ALTER_CLIENT_QUOTAS,
        v,
        {"entries": [{"entity": entity, "ops": ops}], "validate_only": False},
    )


def _get_telemetry_subscriptions(ctx: Ctx, v: int) -> Any:
    return ctx.call(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, v, {"client_instance_id": uuid.UUID(int=0)})


def _push_telemetry(ctx: Ctx, v: int) -> Any:
    got = _get_telemetry_subscriptions(ctx, 0)
    body = {
        "client_instance_id": got["client_instance_id"],
        "subscription_id": got["subscription_id"],
        "terminating": True,
        "compression_type": 0,
        "metrics": b"",
    }
    return ctx.call(ApiKey.PUSH_TELEMETRY, v, body)


def _list_config_resources(ctx: Ctx, v: int) -> Any:
    return ctx.call(ApiKey.LIST_CONFIG_RESOURCES, v, {"resource_types": []} if v else {})


#: API key -> a real request at a version, answered without an error.
REQUESTS: dict[int, Callable[[Ctx, int], Any]] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: _join_group,
    ApiKey.HEARTBEAT: _heartbeat,
    ApiKey.LEAVE_GROUP: _leave_group,
    ApiKey.SYNC_GROUP: _sync_group,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.API_VERSIONS: _api_versions,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _add_offsets_to_txn,
    ApiKey.END_TXN: _end_txn,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _incremental_alter_configs,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_partition_reassignments,
    ApiKey.UPDATE_FEATURES: _update_features,
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    ApiKey.UNREGISTER_BROKER: _unregister_broker,
    ApiKey.DESCRIBE_LOG_DIRS: _describe_log_dirs,
    ApiKey.ALTER_REPLICA_LOG_DIRS: _alter_replica_log_dirs,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
    ApiKey.OFFSET_DELETE: _offset_delete,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: _consumer_group_describe,
    ApiKey.WRITE_TXN_MARKERS: _write_txn_markers,
    ApiKey.DESCRIBE_PRODUCERS: _describe_producers,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _list_transactions,
    ApiKey.DESCRIBE_QUORUM: _describe_quorum,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_client_quotas,
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: _get_telemetry_subscriptions,
    ApiKey.PUSH_TELEMETRY: _push_telemetry,
    ApiKey.LIST_CONFIG_RESOURCES: _list_config_resources,
    **GroupRequests(TOPIC, _produce).table(),
    **quorum_requests.REQUESTS,
}

CASES = [
    (h.api_key, version)
    for h in listed("4.4")
    for version in range(h.min_version, h.max_version + 1)
]


def _error_codes(value: object) -> set[int]:
    """Every error code anywhere in a decoded response."""
    if isinstance(value, dict):
        found = {value["error_code"]} if "error_code" in value else set()
        for item in value.values():
            found |= _error_codes(item)
        return found
    if isinstance(value, list):
        return set().union(*(_error_codes(item) for item in value))
    return set()


def test_every_listed_api_has_a_request() -> None:
    assert {key for key, _ in CASES} == set(REQUESTS)


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{APIS[k].name}-v{v}" for k, v in CASES])
def test_every_listed_version_answers_a_real_request(ctx: Ctx, key: int, version: int) -> None:
    body = REQUESTS[key](ctx, version)  # decoded at `version` by the codec, or it raised
    codes = {ErrorCode(c).name for c in _error_codes(dict(body))}
    refused = quorum_requests.REFUSED_AS_KAFKA_DOES.get(key)
    assert codes <= {refused[0] if refused else "NONE"}, f"{APIS[key].name} v{version}: {codes}"
