"""The handler table: one entry per API key, with the versions served and an error builder.

Handlers see the broker only through `RequestContext.broker`, a `BrokerView`: the broker's
metadata image, its partitions (`broker.partition.Partition`), the cluster-wide coordinators and
the controller channel, never the cluster object itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from kipwire.codec import APIS, ApiKey

from .releases import BROKER_VERSIONS, CLIENT_TELEMETRY, HELD_BACK

if TYPE_CHECKING:
    from ..broker.client_metrics import ClientMetrics
    from ..broker.log import PartitionLog
    from ..broker.log_dirs import LogDirs
    from ..broker.metadata_image import MetadataImage
    from ..broker.partition import Partition
    from ..broker.quotas import ClientQuotas
    from ..broker.replica_dirs import LogDir, ReplicaDirs
    from ..coordinators.consumer_groups import ConsumerGroupCoordinator
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
    #: The Kafka release whose wire surface the broker presents (`Semantics.release`).
    release: str
    #: What this broker serves, by API key (`handlers_for(release)`, or more on a node that
    #: serves more); ApiVersions lists those its release's Kafka lists.
    handlers: Mapping[int, Handler]
    image: MetadataImage
    logs: Mapping[tuple[str, int], PartitionLog]
    #: Its log directories and which one holds each replica.
    replica_dirs: ReplicaDirs
    #: Its log directories' files (sizes on disk), or memory.
    log_dirs: LogDirs
    cluster_id: str
    groups: GroupCoordinator
    consumer_groups: ConsumerGroupCoordinator
    share_groups: ShareCoordinator
    streams_groups: StreamsCoordinator
    transactions: TransactionCoordinator
    #: Client telemetry (KIP-714): subscriptions and what clients pushed.
    client_metrics: ClientMetrics
    #: Client quotas (the serve pipeline charges them; Fetch reads its size cap).
    quotas: ClientQuotas

    @property
    def auto_create_topics(self) -> bool: ...
    def partition(self, topic: str, index: int, leader_epoch: int = -1) -> Partition: ...
    def replica(self, topic: str, index: int) -> Partition: ...
    def partition_log(self, topic: str, index: int, leader_epoch: int = -1) -> PartitionLog: ...
    def move_replica(self, topic: str, index: int, log_dir: LogDir) -> None: ...
    def coordinator_for(self, key: str) -> NodeAddress | None: ...
    def leader_high_watermark(self, topic: str, index: int) -> int | None: ...
    def data_arrived(self, key: tuple[str, int] | None = None) -> None: ...
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

    `advertised_min` is what ApiVersions lists; it is below `min_version` only where Kafka
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


#: Every handler with the versions its code answers (the codec's range, without extension
#: versions); `handlers_for(release)` narrows them to what a broker of a release serves.
HANDLERS: dict[int, Handler] = {}
#: api key -> its answer to a version out of range, for a release and a correlation id.
_UNSUPPORTED: dict[int, Callable[[str, int], bytes]] = {}


def _codec_versions(api_key: int) -> tuple[int, int]:
    """The versions the codec knows for a key, without extension versions of a shipped key."""
    api = APIS[api_key]
    low, high = api.versions
    if api.extension is not None and api.extension != api.versions:
        high = api.extension[0] - 1
    return low, high


def for_release(handler: Handler, release: str) -> Handler:
    """A handler narrowed to a release: Kafka's range for the key within what the handler
    answers, less what the mock holds back; a key Kafka does not list is served as it is."""
    reply = _UNSUPPORTED.get(handler.api_key)
    if reply is not None:
        handler = replace(handler, unsupported=partial(reply, release))
    kafka = BROKER_VERSIONS[release].get(handler.api_key)
    if kafka is None:
        return handler
    held = HELD_BACK[release].get(handler.api_key)
    high = min(handler.max_version, kafka[1], held[0] if held else kafka[1])
    return replace(
        handler,
        min_version=max(handler.min_version, kafka[0]),
        max_version=high,
        advertised_min=max(handler.advertised_min, kafka[0]),
    )


@cache
def handlers_for(release: str) -> Mapping[int, Handler]:
    """The handler table of a broker presenting a Kafka release (after every handler module
    has registered: `kipwire.mockbroker.handlers` imports them all)."""
    return MappingProxyType({key: for_release(h, release) for key, h in sorted(HANDLERS.items())})


def listed(release: str, handlers: Mapping[int, Handler] | None = None) -> list[Handler]:
    """The handlers a broker of a release lists in ApiVersions, in key order: of those it
    serves (`handlers_for(release)` unless given), the ones Kafka's broker listener lists, with
    a client-telemetry receiver for KIP-714's (GetReplicaLogInfo is served for the
    controller, never listed)."""
    table = handlers_for(release) if handlers is None else handlers
    kafka = BROKER_VERSIONS[release]
    return [h for key, h in sorted(table.items()) if key in kafka or key in CLIENT_TELEMETRY]


def top_level_error(body: Body, code: int, version: int) -> dict:
    """An error response for APIs whose response carries one top-level error code."""
    return {"error_code": code}


def handles(
    api_key: ApiKey,
    *,
    min_version: int | None = None,
    fail: Fail = top_level_error,
    unsupported: Callable[[str, int], bytes] | None = None,
    table: dict[int, Handler] | None = None,
) -> Callable[[Handle], Handle]:
    """Register the decorated coroutine as the handler of `api_key` (in `HANDLERS`, or in
    `table`: the security APIs, served by secured clusters only), answering every version the
    codec knows; `min_version` raises the lowest version served above the lowest advertised
    (a version Kafka lists but refuses); a `PartitionShape` as `fail` also makes the API's
    partitions targets of partition faults."""
    low, high = _codec_versions(api_key)
    served_low = low if min_version is None else max(low, min_version)
    shape = fail if isinstance(fail, PartitionShape) else None

    def register(handle: Handle) -> Handle:
        (HANDLERS if table is None else table)[api_key] = Handler(
            api_key, served_low, high, handle, fail, low, shape
        )
        if unsupported is not None:
            _UNSUPPORTED[api_key] = unsupported
        return handle

    return register


def per_partition_error(
    topics_key: str, parts_key: str, name_key: str, index_key: str, out_topics: str, out_parts: str
) -> PartitionShape:
    """An error builder mirroring a request's topics and partitions, each with the error code."""
    return PartitionShape(topics_key, parts_key, name_key, index_key, out_topics, out_parts)
