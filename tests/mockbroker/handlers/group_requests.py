"""Real requests of the share-group (KIP-932) and streams-group (KIP-1071) APIs for
test_every_4_4_request.py: each builds what a client sends to do that API's work, answered
without an error by a one-broker mock (`ctx` is that test's Ctx: `call`, `fresh`, `topic_id`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ErrorCode

Request = Callable[[Any, int], Any]
ACCEPT = 1


class GroupRequests:
    """Requests reading `topic`; `produce(ctx, version)` writes a record to it."""

    def __init__(self, topic: str, produce: Request) -> None:
        self.topic = topic
        self.produce = produce

    def table(self) -> dict[int, Request]:
        """API key -> this class's request of that API."""
        return {
            ApiKey.SHARE_GROUP_HEARTBEAT: self.share_group_heartbeat,
            ApiKey.SHARE_GROUP_DESCRIBE: self.share_group_describe,
            ApiKey.SHARE_FETCH: self.share_fetch,
            ApiKey.SHARE_ACKNOWLEDGE: self.share_acknowledge,
            ApiKey.STREAMS_GROUP_HEARTBEAT: self.streams_group_heartbeat,
            ApiKey.STREAMS_GROUP_DESCRIBE: self.streams_group_describe,
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: self.describe_share_group_offsets,
            ApiKey.ALTER_SHARE_GROUP_OFFSETS: self.alter_share_group_offsets,
            ApiKey.DELETE_SHARE_GROUP_OFFSETS: self.delete_share_group_offsets,
            ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: self.streams_description_update,
        }

    # -- share groups ---------------------------------------------------------------------------

    def _share_join(self, ctx: Any, group: str) -> dict:
        body = {
            "group_id": group,
            "member_id": ctx.fresh("member"),
            "member_epoch": 0,
            "subscribed_topic_names": [self.topic],
        }
        joined = ctx.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)
        assert joined["error_code"] == ErrorCode.NONE
        return {**body, "member_epoch": joined["member_epoch"]}

    def share_group_heartbeat(self, ctx: Any, v: int) -> Any:
        """A member's second heartbeat, at the epoch it was given."""
        member = self._share_join(ctx, ctx.fresh("share"))
        return ctx.call(ApiKey.SHARE_GROUP_HEARTBEAT, v, {**member, "subscribed_topic_names": None})

    def share_group_describe(self, ctx: Any, v: int) -> Any:
        """Describe a group with one member."""
        group = ctx.fresh("share")
        self._share_join(ctx, group)
        body = {"group_ids": [group], "include_authorized_operations": False}
        return ctx.call(ApiKey.SHARE_GROUP_DESCRIBE, v, body)

    def _fetch_body(self, ctx: Any, member: dict, epoch: int, acks: list) -> dict:
        part = {"partition_index": 0, "acknowledgement_batches": acks}
        return {
            "group_id": member["group_id"],
            "member_id": member["member_id"],
            "share_session_epoch": epoch,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_records": 10,
            "batch_size": 10,
            "topics": [{"topic_id": ctx.topic_id, "partitions": [part]}],
        }

    def _member_with_records(self, ctx: Any) -> tuple[dict, list]:
        """A member of a fresh group reading from the start, and what its fetch acquired."""
        group = ctx.fresh("share")
        config = {
            "name": "share.auto.offset.reset",
            "config_operation": AlterConfigOp.SET,
            "value": "earliest",
        }
        resource = {
            "resource_type": ConfigResourceType.GROUP,
            "resource_name": group,
            "configs": [config],
        }
        body = {"resources": [resource], "validate_only": False}
        ctx.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
        self.produce(ctx, 9)  # something to acquire
        member = self._share_join(ctx, group)
        fetched = ctx.call(ApiKey.SHARE_FETCH, 1, self._fetch_body(ctx, member, 0, []))
        acquired = [
            a for t in fetched["responses"] for p in t["partitions"] for a in p["acquired_records"]
        ]
        assert acquired
        return member, acquired

    @staticmethod
    def _accept(acquired: list) -> list:
        return [
            {
                "first_offset": a["first_offset"],
                "last_offset": a["last_offset"],
                "acknowledge_types": [ACCEPT],
            }
            for a in acquired
        ]

    def share_fetch(self, ctx: Any, v: int) -> Any:
        """A fetch that accepts what the session's first fetch acquired."""
        member, acquired = self._member_with_records(ctx)
        body = self._fetch_body(ctx, member, 1, self._accept(acquired))
        return ctx.call(ApiKey.SHARE_FETCH, v, body)

    def share_acknowledge(self, ctx: Any, v: int) -> Any:
        """An acknowledgement of what the session's first fetch acquired."""
        member, acquired = self._member_with_records(ctx)
        body = self._fetch_body(ctx, member, 1, self._accept(acquired))
        for unused in ("max_wait_ms", "min_bytes", "max_records", "batch_size"):
            del body[unused]
        return ctx.call(ApiKey.SHARE_ACKNOWLEDGE, v, body)

    def describe_share_group_offsets(self, ctx: Any, v: int) -> Any:
        """The offsets of a group that has read."""
        member, _ = self._member_with_records(ctx)
        body = {"groups": [{"group_id": member["group_id"], "topics": None}]}
        return ctx.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, v, body)

    def _empty_group(self, ctx: Any) -> str:
        member = self._share_join(ctx, ctx.fresh("share"))
        ctx.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {**member, "member_epoch": -1})
        return member["group_id"]

    def alter_share_group_offsets(self, ctx: Any, v: int) -> Any:
        """Reset an empty group's partition to offset 0."""
        part = {"partition_index": 0, "start_offset": 0}
        body = {
            "group_id": self._empty_group(ctx),
            "topics": [{"topic_name": self.topic, "partitions": [part]}],
        }
        return ctx.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, v, body)

    def delete_share_group_offsets(self, ctx: Any, v: int) -> Any:
        """Delete an empty group's offsets of the topic."""
        body = {"group_id": self._empty_group(ctx), "topics": [{"topic_name": self.topic}]}
        return ctx.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, v, body)

    # -- streams groups -------------------------------------------------------------------------

    def _streams_join(self, ctx: Any) -> dict:
        app = ctx.fresh("app")
        subtopology = {"subtopology_id": "0", "source_topics": [self.topic]}
        body = {
            "group_id": app,
            "member_id": ctx.fresh("member"),
            "member_epoch": 0,
            "endpoint_information_epoch": 0,
            "process_id": "process",
            "rebalance_timeout_ms": 30000,
            "topology": {"epoch": 1, "subtopologies": [subtopology]},
            "active_tasks": [],
            "standby_tasks": [],
            "warmup_tasks": [],
        }
        joined = ctx.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, body)
        assert joined["error_code"] == ErrorCode.NONE
        return {
            "group_id": app,
            "member_id": body["member_id"],
            "member_epoch": joined["member_epoch"],
        }

    def streams_group_heartbeat(self, ctx: Any, v: int) -> Any:
        """A member's second heartbeat, at the epoch it was given."""
        member = self._streams_join(ctx)
        body = {**member, "endpoint_information_epoch": 0}
        return ctx.call(ApiKey.STREAMS_GROUP_HEARTBEAT, v, body)

    def streams_group_describe(self, ctx: Any, v: int) -> Any:
        """Describe a group with one member."""
        member = self._streams_join(ctx)
        body = {"group_ids": [member["group_id"]], "include_authorized_operations": False}
        return ctx.call(ApiKey.STREAMS_GROUP_DESCRIBE, v, body)

    def streams_description_update(self, ctx: Any, v: int) -> Any:
        """A member sends its topology's description (KIP-1331)."""
        member = self._streams_join(ctx)
        body = {
            "group_id": member["group_id"],
            "member_id": member["member_id"],
            "topology_epoch": 1,
            "topology_description": {"subtopologies": [], "global_stores": []},
        }
        return ctx.call(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, v, body)
