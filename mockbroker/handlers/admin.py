"""Admin requests a broker forwards to the controller, as KRaft brokers do: CreateTopics (19),
DeleteTopics (20), DescribeConfigs (32), AlterConfigs (33), CreatePartitions (37),
ElectLeaders (43), IncrementalAlterConfigs (44), Alter/ListPartitionReassignments (45, 46),
UpdateFeatures (57), UnregisterBroker (64). The answer comes back once this broker has the
metadata."""

from __future__ import annotations

from typing import Any

from .registry import Fail, Handle, RequestContext, handles

FORWARDED = {
    19: "CreateTopics",
    20: "DeleteTopics",
    32: "DescribeConfigs",
    33: "AlterConfigs",
    37: "CreatePartitions",
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments",
    57: "UpdateFeatures",
    64: "UnregisterBroker",
}
#: Forwarded APIs whose responses carry one top-level error code and nothing required besides.
_TOP_LEVEL_ERROR = {45, 46, 57, 64}


def _forwarder(api_key: int) -> Handle:
    async def forward(ctx: RequestContext, body: Any) -> dict:
        return await ctx.broker.cluster.forward(ctx.broker, api_key, ctx.api_version, body)

    forward.__name__ = forward.__qualname__ = f"forward_{FORWARDED[api_key]}"
    forward.__doc__ = f"{FORWARDED[api_key]}: answered by the controller."
    return forward


def _fail_for(api_key: int) -> Fail:
    def fail(body: Any, code: int, version: int) -> dict:
        if api_key in _TOP_LEVEL_ERROR:
            return {"error_code": code}
        if api_key == 43:
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
        if api_key == 19:
            return {"topics": [{"name": t["name"], "error_code": code} for t in body["topics"]]}
        if api_key == 20:
            names = body.get("topic_names") or [t["name"] for t in body.get("topics") or []]
            return {"responses": [{"name": n, "error_code": code} for n in names]}
        if api_key == 37:
            return {"results": [{"name": t["name"], "error_code": code} for t in body["topics"]]}
        if api_key == 32:
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
