"""Which target broker each request goes to, found as a client finds it.

The replayer keeps one control connection to the target (its own, not in the replayed traffic):
Metadata names the brokers, the partition leaders and the topic ids; FindCoordinator names a
group's or a transaction's coordinator. A request for partitions goes to their leader, a group
or transaction request to its coordinator, anything else to the broker with the node id the
original connection's broker had (the capture's own Metadata answers say which that was), or to
any broker when the target has none of that id. NOT_LEADER_OR_FOLLOWER and NOT_COORDINATOR make
the sender ask again (`refresh`), as a client does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

import trio

from kipwire.client import ClientError, PeerVersions, TrioConnection
from kipwire.codec import ApiKey, CoordinatorType, DecodeError, ErrorCode, decode_response

from .auth import AuthError, Credentials, authenticate, open_stream
from .extract import ClientConnection
from .rules import Learned, learn_topic_ids

__all__ = [
    "COORDINATOR_ERRORS",
    "LEADER_ERRORS",
    "Target",
    "original_brokers",
    "route_key",
]

_CLIENT_ID = "kipwire-replay"
#: Answers after which a client asks Metadata again and sends to the new leader.
LEADER_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
#: Answers after which a client asks FindCoordinator again.
COORDINATOR_ERRORS = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
_BY_LEADER = frozenset(
    {
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.LIST_OFFSETS,
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        ApiKey.DELETE_RECORDS,
    }
)
_BY_GROUP = frozenset(
    {
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.JOIN_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.OFFSET_DELETE,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
    }
)
_BY_TRANSACTION = frozenset(
    {
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.END_TXN,
        ApiKey.INIT_PRODUCER_ID,
    }
)
_PARTITION_KEYS = ("index", "partition", "partition_index")


def _first(items: Any) -> Any:
    return items[0] if isinstance(items, list) and items else None


def _first_partition(body: Mapping[str, Any], learned: Learned) -> tuple[str, int] | None:
    topics = body.get("topic_data") or body.get("topics")
    topic = _first(topics)
    if not isinstance(topic, Mapping):
        return None
    name = topic.get("name") or topic.get("topic")
    if not name and isinstance(topic.get("topic_id"), UUID):
        name = next((n for n, i in learned.target_topics.items() if i == topic["topic_id"]), None)
    part = _first(topic.get("partition_data") or topic.get("partitions"))
    if not name or not isinstance(part, Mapping):
        return None
    index = next((part[k] for k in _PARTITION_KEYS if isinstance(part.get(k), int)), None)
    return None if index is None else (name, index)


def _group_key(body: Mapping[str, Any]) -> str | None:
    if isinstance(body.get("group_id"), str):
        return body["group_id"]
    first = _first(body.get("groups") or body.get("group_ids"))
    if isinstance(first, Mapping):
        return first.get("group_id")
    return first if isinstance(first, str) else None


def _transaction_key(body: Mapping[str, Any]) -> str | None:
    if isinstance(body.get("transactional_id"), str):
        return body["transactional_id"]
    first = _first(body.get("transactions"))
    return first.get("transactional_id") if isinstance(first, Mapping) else None


def route_key(api_key: int, body: Mapping[str, Any], learned: Learned) -> tuple[str, Any] | None:
    """("leader", (topic, partition)), ("group", id) or ("transaction", id): what decides the
    broker a request goes to; None when any broker serves it."""
    if api_key in _BY_LEADER:
        tp = _first_partition(body, learned)
        return None if tp is None else ("leader", tp)
    if api_key in _BY_GROUP:
        group = _group_key(body)
        return None if group is None else ("group", group)
    if api_key in _BY_TRANSACTION:
        txn = _transaction_key(body)
        return None if txn is None else ("transaction", txn)
    return None


def original_brokers(connections: Iterable[ClientConnection]) -> dict[tuple[str, int], int]:
    """(host, port) -> node id of the captured cluster's brokers, from its Metadata answers."""
    found: dict[tuple[str, int], int] = {}
    for conn in connections:
        for ex in conn.exchanges:
            if ex.api_key != ApiKey.METADATA or ex.response is None:
                continue
            try:
                body = decode_response(ex.response, ex.api_key, ex.api_version).body
            except DecodeError:
                continue
            for b in body.get("brokers") or ():
                found[(b["host"], b["port"])] = b["node_id"]
    return found


class Target:
    """What the replayer knows of the target cluster, over its own control connection."""

    def __init__(
        self,
        bootstrap: Sequence[tuple[str, int]],
        learned: Learned,
        timeout: float,
        creds: Credentials | None = None,
    ) -> None:
        self.bootstrap = list(bootstrap)
        self.learned = learned
        self.timeout = timeout
        self.creds = creds or Credentials()
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        self.coordinators: dict[tuple[str, str], int] = {}
        self.versions: PeerVersions | None = None
        self._control: TrioConnection | None = None

    async def start(self) -> None:
        """Connect to the first bootstrap broker that answers, learn versions and metadata."""
        errors = []
        for address in self.bootstrap:
            try:
                stream, _local = await open_stream(address, self.creds, self.timeout)
            except (OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
                errors.append(f"{address[0]}:{address[1]}: {getattr(exc, 'strerror', '') or exc}")
                continue
            conn = TrioConnection(stream, _CLIENT_ID, timeout=self.timeout)
            self._control = conn
            if self.creds.sasl:
                try:
                    await authenticate(conn, self.creds)
                except ClientError as exc:  # a broker without SASL closes the connection
                    raise AuthError(str(exc)) from None
            self.versions = await conn.negotiate_versions()
            await self.refresh()
            return
        raise OSError(f"no bootstrap broker answered ({'; '.join(errors)})")

    async def aclose(self) -> None:
        """Close the control connection."""
        if self._control is not None:
            await self._control.aclose()

    async def _call(self, api_key: int, body: dict, at_most: int) -> Any:
        assert self._control is not None and self.versions is not None
        version = self.versions.highest(api_key, at_most=at_most)
        return await self._control.call(api_key, version, body)

    async def refresh(self) -> None:
        """Ask Metadata for every topic: brokers, leaders and the target's topic ids."""
        body = await self._call(
            ApiKey.METADATA, {"topics": None, "allow_auto_topic_creation": False}, 12
        )
        self.brokers = {b["node_id"]: (b["host"], b["port"]) for b in body["brokers"]}
        for t in body["topics"]:
            for p in t["partitions"]:
                self.leaders[(t["name"], p["partition_index"])] = p["leader_id"]
        learn_topic_ids(body, self.learned.target_topics, by_name=True)

    async def coordinator(self, kind: str, key: str, *, again: bool = False) -> int | None:
        """The node id of a group's or transaction's coordinator (asked again with `again`)."""
        if not again and (kind, key) in self.coordinators:
            return self.coordinators[(kind, key)]
        key_type = CoordinatorType.GROUP if kind == "group" else CoordinatorType.TRANSACTION
        assert self.versions is not None
        if self.versions.highest(ApiKey.FIND_COORDINATOR, at_most=4) >= 4:
            body = await self._call(
                ApiKey.FIND_COORDINATOR, {"key_type": key_type, "coordinator_keys": [key]}, 4
            )
            answer = body["coordinators"][0]
        else:
            answer = await self._call(
                ApiKey.FIND_COORDINATOR, {"key": key, "key_type": key_type}, 3
            )
        if answer["error_code"] != ErrorCode.NONE:
            return None
        self.coordinators[(kind, key)] = answer["node_id"]
        self.brokers.setdefault(answer["node_id"], (answer["host"], answer["port"]))
        return answer["node_id"]

    async def node_for(self, route: tuple[str, Any] | None, default: int | None) -> int:
        """The node a request goes to: its partition's leader or its coordinator, else the
        original broker's namesake, else any broker."""
        node: int | None = None
        if route is not None and route[0] == "leader":
            if route[1] not in self.leaders:
                await self.refresh()
            node = self.leaders.get(route[1])
        elif route is not None:
            node = await self.coordinator(route[0], route[1])
        if node is None or node < 0 or node not in self.brokers:
            node = default
        if node is None or node not in self.brokers:
            node = min(self.brokers)
        return node
