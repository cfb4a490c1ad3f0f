"""The handler table: one entry per API key, with the versions served and an error builder.

Handlers see the broker only through `RequestContext.broker`, a `BrokerView`: the broker's
metadata image, its partitions (`broker.partition.Partition`), the cluster-wide coordinators and
the controller channel, never the cluster object itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kipwire.codec import APIS, MESSAGES, ApiKey, api_versions

if TYPE_CHECKING:
    from ..broker.log import PartitionLog
    from ..broker.metadata_image import MetadataImage
    from ..broker.partition import Partition
    from ..coordinators.groups import GroupCoordinator
    from ..coordinators.share_groups import ShareCoordinator
    from ..coordinators.streams_groups import StreamsCoordinator
    from ..coordinators.transactions import TransactionCoordinator

Body = Any
#: A handler: the node's request context (a `RequestContext` on brokers) and the body in.
Handle = Callable[[Any, Body], Awaitable[dict | None]]
Fail = Callable[[Body, int, int], dict]


class NodeAddress(Protocol):
    """Where a broker listens."""

    node_id: int
    host: str
    port: int


class BrokerView(Protocol):
    """The narrow face of a broker that handlers use."""

    node_id: int
    epoch: int
    image: MetadataImage
    logs: Mapping[tuple[str, int], PartitionLog]
    cluster_id: str
    groups: GroupCoordinator
    share_groups: ShareCoordinator
    streams_groups: StreamsCoordinator
    transactions: TransactionCoordinator

    @property
    def auto_create_topics(self) -> bool: ...
    def partition(self, topic: str, index: int, leader_epoch: int = -1) -> Partition: ...
    def replica(self, topic: str, index: int) -> Partition: ...
    def partition_log(self, topic: str, index: int, leader_epoch: int = -1) -> PartitionLog: ...
    def coordinator_for(self, key: str) -> NodeAddress | None: ...
    def leader_high_watermark(self, topic: str, index: int) -> int | None: ...
    def data_arrived(self) -> None: ...
    async def wait_for_data(self) -> None: ...
    async def forward(self, api_key: int, api_version: int, body: Any) -> Any: ...
    async def auto_create(self, names: list[str]) -> None: ...


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request beyond its body."""

    broker: BrokerView
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class PartitionShape:
    """Where an API's request and response list topics and partitions; called, it is the
    API's error response with one code for every partition of the request.

    The serve pipeline uses it to answer an injected error for one partition alone: the
    partition leaves the request (`split`) and its error joins the response (`merge`).
    """

    topics_key: str
    parts_key: str
    name_key: str
    index_key: str
    out_topics: str
    out_parts: str
    out_index: str = ""
    #: Top-level fields of the error response beside its topics.
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: The request's wait (Fetch's MaxWaitMs): a request with a failed partition answers at once.
    wait_key: str = ""

    def __call__(self, body: Body, code: int, version: int) -> dict:
        return self.error_response(
            [(t, [(p, code) for p in t[self.parts_key]]) for t in body.get(self.topics_key) or []]
        )

    def index_of(self, part: Any) -> int:
        """The partition index of a request's partition entry (or bare index)."""
        return part if isinstance(part, int) else part[self.index_key]

    def entries(self, body: Body) -> Iterator[tuple[Any, Any]]:
        """(topic entry, partition entry) of every partition a request names."""
        for topic in body.get(self.topics_key) or []:
            for part in topic[self.parts_key]:
                yield topic, part

    def error_response(self, failed: list[tuple[Any, list[tuple[Any, int]]]]) -> dict:
        """A response for (topic entry, [(partition entry, error code)]) of a request."""
        out_index = self.out_index or self.index_key
        return {
            **self.extra,
            self.out_topics: [
                {
                    self.name_key: t.get(self.name_key),
                    **({"topic_id": t["topic_id"]} if "topic_id" in t else {}),
                    self.out_parts: [
                        {out_index: self.index_of(p), "error_code": code} for p, code in parts
                    ],
                }
                for t, parts in failed
            ],
        }

    def split(
        self, body: Body, code_of: Callable[[Any, Any], int | None]
    ) -> tuple[Body, list[tuple[Any, list[tuple[Any, int]]]]]:
        """The request without the partitions `code_of` fails, and those with their codes."""
        kept_topics, failed = [], []
        for topic in body.get(self.topics_key) or []:
            kept, errors = [], []
            for part in topic[self.parts_key]:
                code = code_of(topic, part)
                if code is None:
                    kept.append(part)
                else:
                    errors.append((part, code))
            if kept:
                kept_topics.append({**topic, self.parts_key: kept})
            if errors:
                failed.append((topic, errors))
        rest = {**body, self.topics_key: kept_topics}
        if failed and self.wait_key in rest:
            rest[self.wait_key] = 0
        return rest, failed

    def merge(self, response: dict, failed: list[tuple[Any, list[tuple[Any, int]]]]) -> dict:
        """The handler's response with the failed partitions' errors added to their topics."""
        topics = response.setdefault(self.out_topics, [])
        for extra in self.error_response(failed)[self.out_topics]:
            same = next(
                (
                    t
                    for t in topics
                    if t.get(self.name_key) == extra.get(self.name_key)
                    and t.get("topic_id") == extra.get("topic_id", t.get("topic_id"))
                ),
                None,
            )
            if same is None:
                topics.append(extra)
            else:
                same[self.out_parts] = [*same[self.out_parts], *extra[self.out_parts]]
        return response


@dataclass(frozen=True, slots=True)
class Handler:
    """How the broker serves one API: its versions, its handler and its error response.

    `advertised_min` is what ApiVersions lists; it is below `min_version` only where Kafka 4.1
    itself lists versions it refuses (Produce v0-v2). `partitions` says where the request names
    partitions (for per-partition faults); `unsupported` answers a version out of range
    (ApiVersions, KIP-511) instead of closing the connection.
    """

    api_key: int
    min_version: int
    max_version: int
    handle: Handle
    fail: Fail
    advertised_min: int
    partitions: PartitionShape | None = None
    unsupported: Callable[[int], bytes] | None = None


HANDLERS: dict[int, Handler] = {}

#: Kafka 4.1.2's broker listener as ApiVersions v4 answers it (api key: (min, max)); the
#: recorded tests/realkafka/data/api_versions_kafka_4_1.json, which a test keeps equal to this.
KAFKA_4_1_BROKER_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 13),
    ApiKey.FETCH: (4, 18),
    ApiKey.LIST_OFFSETS: (1, 10),
    ApiKey.METADATA: (0, 13),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 5),
    ApiKey.WRITE_TXN_MARKERS: (1, 1),
    ApiKey.TXN_OFFSET_COMMIT: (0, 5),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.CREATE_DELEGATION_TOKEN: (1, 3),
    ApiKey.RENEW_DELEGATION_TOKEN: (1, 2),
    ApiKey.EXPIRE_DELEGATION_TOKEN: (1, 2),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (1, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.DESCRIBE_QUORUM: (0, 2),
    ApiKey.UPDATE_FEATURES: (0, 2),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.UNREGISTER_BROKER: (0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 2),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.LIST_CONFIG_RESOURCES: (0, 1),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.SHARE_FETCH: (1, 1),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 1),
    ApiKey.ADD_RAFT_VOTER: (0, 0),
    ApiKey.REMOVE_RAFT_VOTER: (0, 0),
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: (0, 0),
    ApiKey.READ_SHARE_GROUP_STATE: (0, 0),
    ApiKey.WRITE_SHARE_GROUP_STATE: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_STATE: (0, 0),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (0, 0),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 0),
    # AlterShareGroupOffsets and DeleteShareGroupOffsets: Kafka 4.1 lists them, the codec's
    # schemas do not have them yet, so ApiKey has no name for them
    91: (0, 0),
    92: (0, 0),
}

#: Kafka's stable versions the codec knows, from the codec's index.
_CODEC_BROKER_VERSIONS = {
    a["api_key"]: (a["min_version"], a["max_version"]) for a in api_versions("broker")
}


def advertised_versions(api_key: int) -> tuple[int, int]:
    """What a broker lists for an API key: Kafka 4.1's range within the codec's stable one."""
    low, high = _CODEC_BROKER_VERSIONS.get(api_key) or MESSAGES[APIS[api_key][1]][3]
    kafka = KAFKA_4_1_BROKER_VERSIONS.get(api_key)
    if kafka is None:
        return low, high
    return max(low, kafka[0]), min(high, kafka[1])


def top_level_error(body: Body, code: int, version: int) -> dict:
    """An error response for APIs whose response carries one top-level error code."""
    return {"error_code": code}


def handles(
    api_key: ApiKey,
    *,
    min_version: int | None = None,
    fail: Fail = top_level_error,
    unsupported: Callable[[int], bytes] | None = None,
) -> Callable[[Handle], Handle]:
    """Register the decorated coroutine as the handler of `api_key`; `min_version` raises the
    lowest version served above the lowest advertised (a version Kafka lists but refuses); a
    `PartitionShape` as `fail` also makes the API's partitions targets of partition faults."""
    low, high = advertised_versions(api_key)
    served_low = low if min_version is None else max(low, min_version)
    shape = fail if isinstance(fail, PartitionShape) else None

    def register(handle: Handle) -> Handle:
        HANDLERS[api_key] = Handler(
            api_key, served_low, high, handle, fail, low, shape, unsupported
        )
        return handle

    return register


def per_partition_error(
    topics_key: str, parts_key: str, name_key: str, index_key: str, out_topics: str, out_parts: str
) -> PartitionShape:
    """An error builder mirroring a request's topics and partitions, each with the error code."""
    return PartitionShape(topics_key, parts_key, name_key, index_key, out_topics, out_parts)
