"""Admin requests a broker forwards to the controller, as KRaft brokers do: CreateTopics (19),
DeleteTopics (20), DescribeConfigs (32), AlterConfigs (33), CreatePartitions (37),
ElectLeaders (43), IncrementalAlterConfigs (44), Alter/ListPartitionReassignments (45, 46),
UpdateFeatures (57), UnregisterBroker (64), AddRaftVoter (80), RemoveRaftVoter (81),
UnregisterController (94, Kafka 4.4). The answer comes back once this broker has the
metadata."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey

from .registry import Fail, Handle, RequestContext, handles

FORWARDED = (
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CONFIGS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.ELECT_LEADERS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.UPDATE_FEATURES,
    ApiKey.UNREGISTER_BROKER,
    ApiKey.ADD_RAFT_VOTER,
    ApiKey.REMOVE_RAFT_VOTER,
    ApiKey.UNREGISTER_CONTROLLER,
)
#: Forwarded APIs whose responses carry one top-level error code and nothing required besides.
_TOP_LEVEL_ERROR = {
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.UPDATE_FEATURES,
    ApiKey.UNREGISTER_BROKER,
    ApiKey.ADD_RAFT_VOTER,
    ApiKey.REMOVE_RAFT_VOTER,
    ApiKey.UNREGISTER_CONTROLLER,
}


def _forwarder(api_key: ApiKey) -> Handle:
    async def forward(ctx: RequestContext, body: Any) -> dict:
        return await ctx.broker.forward(api_key, ctx.api_version, body)

    forward.__name__ = forward.__qualname__ = f"forward_{api_key.api_name}"
    forward.__doc__ = f"{api_key.api_name}: answered by the controller."
    return forward


def _fail_for(api_key: ApiKey) -> Fail:
    def fail(body: Any, code: int, version: int) -> dict:
        if api_key in _TOP_LEVEL_ERROR:
            return {"error_code": code}
        if api_key == ApiKey.ELECT_LEADERS:
            return {
                "error_code": code,
                "replica_election_results": [
                    {
                        "topic": t["topic"],
                        "partition_result": [
                            {"partition_id": p, "error_code": code} for p in t["partitions"]
                        ],
                    }
                    for t in body["topic_partitions"] or []
                ],
            }
        if api_key == ApiKey.CREATE_TOPICS:
            return {"topics": [{"name": t["name"], "error_code": code} for t in body["topics"]]}
        if api_key == ApiKey.DELETE_TOPICS:
            names = body.get("topic_names") or [t["name"] for t in body.get("topics") or []]
            return {"responses": [{"name": n, "error_code": code} for n in names]}
        if api_key == ApiKey.CREATE_PARTITIONS:
            return {"results": [{"name": t["name"], "error_code": code} for t in body["topics"]]}
        if api_key == ApiKey.DESCRIBE_CONFIGS:
            return {
                "results": [
                    {
                        "error_code": code,
                        "resource_type": r["resource_type"],
                        "resource_name": r["resource_name"],
                        "configs": [],
                    }
                    for r in body["resources"]
                ]
            }
        return {
            "responses": [
                {
                    "error_code": code,
                    "resource_type": r["resource_type"],
                    "resource_name": r["resource_name"],
                }
                for r in body["resources"]
            ]
        }

    return fail


for _key in FORWARDED:
    handles(_key, fail=_fail_for(_key))(_forwarder(_key))
