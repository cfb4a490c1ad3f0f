"""A broker as a network node: its state (`broker.state.BrokerState`) behind the serve pipeline.

The node is what `serve.py` serves (an `Endpoint`: the handler table, a request's context, the
faults) and what handlers see (`handlers.registry.BrokerView`). What it needs of the rest of the
cluster (the coordinators, the wait for metadata to spread) it is lent at construction in
`ClusterServices`; it never holds the `Cluster`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kipwire.codec import ApiKey

from .broker.state import BrokerState
from .broker.topic_names import topic_name
from .coordinators.consumer_groups import ConsumerGroupCoordinator
from .coordinators.groups import GroupCoordinator
from .coordinators.share_groups import ShareCoordinator
from .coordinators.streams_groups import StreamsCoordinator
from .coordinators.transactions import TransactionCoordinator
from .faults import Faults
from .handlers import RequestContext
from .handlers.registry import NodeAddress, handlers_for
from .limits import NodeLimits
from .network import Network
from .security.authorizer import Authorizer
from .serve import Taps

if TYPE_CHECKING:
    from .security.runtime import ClusterSecurity

CREATE_TOPICS_VERSION = 7


@dataclass(frozen=True, slots=True)
class ClusterServices:
    """What the cluster lends each broker: settings, shared coordinators, cluster-wide waits."""

    cluster_id: str
    config: Mapping[str, str]
    network: Network
    faults: Faults
    recorder: Taps | None
    groups: GroupCoordinator
    consumer_groups: ConsumerGroupCoordinator
    share_groups: ShareCoordinator
    streams_groups: StreamsCoordinator
    transactions: TransactionCoordinator
    #: The broker coordinating a group or transactional id (a stable hash over live ones).
    coordinator_for: Callable[[str], NodeAddress | None]
    #: The high watermark a partition's leader has now, None when no running broker leads it
    #: (what Kafka's coordinators ask a leader with ListOffsets, for share-group lag).
    high_watermark: Callable[[str, int], int | None]
    #: Wait until every running broker has replayed the whole metadata log.
    caught_up: Callable[[], Awaitable[None]]
    #: A broker replayed metadata (wakes the cluster's waiters).
    metadata_changed: Callable[[], None]
    #: Semantics.recovering_rejects_fetch, the broker's static configuration.
    recovering_rejects_fetch: bool
    #: Semantics.release: the Kafka release whose ApiVersions ranges and features it presents.
    release: str
    #: TLS, SASL and ACLs; None on a PLAINTEXT cluster.
    security: ClusterSecurity | None = None


class BrokerNode(BrokerState):
    """A broker serving clients on 127.0.0.1:`port`."""

    closes_on_malformed = False

    def __init__(self, node_id: int, port: int, services: ClusterServices) -> None:
        super().__init__(
            node_id,
            services.config,
            services.network,
            recovering_rejects_fetch=services.recovering_rejects_fetch,
        )
        self.host = "127.0.0.1"
        self.port = port
        self.internal_port: int | None = None
        self.cluster_id = services.cluster_id
        self.release = services.release
        self.handlers = handlers_for(services.release)
        self.faults = services.faults
        self.recorder = services.recorder
        self.groups = services.groups
        self.consumer_groups = services.consumer_groups
        self.share_groups = services.share_groups
        self.streams_groups = services.streams_groups
        self.transactions = services.transactions
        self._services = services
        self.listener_security = None
        settings = services.config
        self.limits = NodeLimits.from_config(
            settings, lambda name: self.image.cluster_config(name, settings.get(name, ""))
        )
        #: StandardAuthorizer's rules with authorizer=True (handlers/authorization.py)
        self.authorizer: Authorizer | None = None
        #: delegation.token.secret.key (handlers/delegation_tokens.py); None: tokens disabled.
        self.token_secret: bytes | None = None
        if services.security is not None:
            from .handlers.security import secured_handlers

            config = services.security.config
            tokens = services.security.token_secret is not None
            self.handlers = secured_handlers(
                services.release, config.sasl, config.authorizer, tokens
            )
            if config.authorizer:
                self.authorizer = Authorizer(config.super_users)
            self.listener_security = services.security.listener(
                lambda user, mechanism: self.image.security.credential(user, mechanism),
                lambda: self.image.security.tokens,
            )
            self.token_secret = services.security.token_secret

    @property
    def address(self) -> str:
        """host:port of the client listener."""
        return f"{self.host}:{self.port}"

    @property
    def internal_address(self) -> str:
        """host:port other nodes dial (the client listener unless that one is secured)."""
        return f"{self.host}:{self.internal_port or self.port}"

    @property
    def max_request_bytes(self) -> int:
        """socket.request.max.bytes: larger frames are refused before they are read."""
        return int(self.config["socket.request.max.bytes"])

    # -- what the serve pipeline asks -----------------------------------------------------------

    def request_context(
        self, api_key: int, api_version: int, correlation_id: int, client_id: str | None
    ) -> RequestContext:
        """The context a handler gets with one request."""
        return RequestContext(self, api_key, api_version, correlation_id, client_id)

    def topic_name(self, entry: Mapping[str, Any], key: str) -> str | None:
        """The topic a request's topic entry names (by id where it carries one)."""
        return topic_name(self.image, entry, key)

    # -- what handlers ask beyond the broker's state --------------------------------------------

    def metadata_replayed(self) -> None:
        """New metadata in the image: wake this broker's waiters, then the cluster's."""
        super().metadata_replayed()
        self._services.metadata_changed()

    def leader_high_watermark(self, topic: str, index: int) -> int | None:
        """The high watermark of a partition at its leader, None when no running broker leads."""
        return self._services.high_watermark(topic, index)

    def coordinator_for(self, key: str) -> NodeAddress | None:
        """The broker coordinating a group or transactional id, None when none is live."""
        return self._services.coordinator_for(key)

    async def forward(self, api_key: int, api_version: int, body: Any) -> Any:
        """A request this broker forwards to the controller; answered once metadata has spread."""
        connection = self.controller_connection
        if connection is None:
            raise RuntimeError(f"broker {self.node_id} has no controller connection")
        response = await connection.call(api_key, api_version, body)
        await self._services.caught_up()
        return response

    @property
    def auto_create_topics(self) -> bool:
        """Whether Metadata creates unknown topics (auto.create.topics.enable)."""
        return self.config["auto.create.topics.enable"].lower() == "true"

    async def auto_create(self, names: list[str]) -> None:
        """Create topics with the default partitions and replication factor."""
        live = len(self.image.live_brokers())
        replication = min(int(self.config["default.replication.factor"]), live)
        # num.partitions is dynamic: the cluster default in the metadata wins over the start value
        partitions = int(self.image.cluster_config("num.partitions", self.config["num.partitions"]))
        await self.forward(
            ApiKey.CREATE_TOPICS,
            CREATE_TOPICS_VERSION,
            {
                "topics": [
                    {
                        "name": n,
                        "num_partitions": partitions,
                        "replication_factor": max(replication, 1),
                    }
                    for n in names
                ],
                "timeout_ms": 0,
            },
        )
