"""`MockCluster`: the trio cluster in a thread of its own, behind a synchronous API."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import trio

from .cluster import Cluster, open_cluster
from .controller import Controller, Semantics
from .controller.broker_configs import cluster_config
from .faults import FaultHandle, PartitionKey
from .network import NodeId
from .processes import open_process_cluster
from .security.acls import Acl
from .security.config import SecurityConfig

T = TypeVar("T")
#: How long start-up and shutdown may take before the wrapper gives up.
THREAD_TIMEOUT = 30.0


class SyncFaultHandle:
    """A fault injected into a `MockCluster`: read `fired`, `remove()` it from any thread."""

    def __init__(self, handle: FaultHandle, cluster: MockCluster) -> None:
        self._handle = handle
        self._cluster = cluster

    @property
    def fired(self) -> int:
        """How many requests (or link crossings) the fault has affected so far."""
        return self._handle.fired

    @property
    def remaining(self) -> int | None:
        """An error injection's requests still to fail (-1: until removed); None for others."""
        return getattr(self._handle, "remaining", None)

    @property
    def active(self) -> bool:
        """False once the fault is spent or removed."""
        return self._handle.active

    def remove(self) -> None:
        """End the fault now (in process mode: in every process when this returns)."""
        self._cluster._in_trio(self._handle.remove)
        if not self._cluster._in_trio_thread():
            self._cluster._await(self._cluster.cluster.faults_reached)


class MockCluster:
    """A mock KRaft cluster for synchronous code: `with MockCluster(brokers=3) as cluster`."""

    def __init__(
        self,
        brokers: int = 3,
        semantics: Semantics | None = None,
        config: Mapping[str, Any] | None = None,
        features: Mapping[str, int] | None = None,
        record: str | None = None,
        port: int = 0,
        clock: trio.abc.Clock | None = None,
        record_clients_only: bool = False,
        record_max_bytes: int | None = None,
        *,
        security_protocol: str = "PLAINTEXT",
        sasl_mechanisms: tuple[str, ...] | None = None,
        users: Mapping[str, str] | None = None,
        super_users: tuple[str, ...] = (),
        authorizer: bool = False,
        ssl_client_auth: str = "none",
        processes: bool = False,
    ) -> None:
        if processes and clock is not None:
            raise ValueError(
                "clock= (a MockClock) drives one trio loop, and processes=True runs each broker"
                " in its own process: use one or the other"
            )
        # processes=True: each broker in an OS process of its own (kipwire.mockbroker.processes)
        self._open = open_process_cluster if processes else open_cluster
        # clock=trio.testing.MockClock(autojump_threshold=0): every cluster timer (heartbeats,
        # session timeouts, long polls) runs on virtual time, so long timeouts cost nothing
        self._clock = clock
        cluster_config(config or {})  # refused here, in the caller's thread, not at start
        self._kwargs = dict(
            brokers=brokers,
            semantics=semantics,
            config=config,
            features=features,
            record=record,
            port=port,
            record_clients_only=record_clients_only,
            record_max_bytes=record_max_bytes,
        )
        security = dict(
            security_protocol=security_protocol,
            sasl_mechanisms=sasl_mechanisms,
            users=users,
            super_users=super_users,
            authorizer=authorizer,
            ssl_client_auth=ssl_client_auth,
        )
        SecurityConfig.from_arguments(**security)  # bad settings fail here, not in the thread
        self._kwargs.update(security)
        self._cluster: Cluster | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: trio.Event | None = None
        self._error: BaseException | None = None

    def __enter__(self) -> MockCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the cluster thread and wait until every broker is registered and unfenced."""
        self._thread = threading.Thread(target=self._main, name="kipwire-mock-cluster", daemon=True)
        self._thread.start()
        if not self._ready.wait(THREAD_TIMEOUT):
            raise TimeoutError("the mock cluster did not start")
        if self._error is not None:
            self._thread.join(THREAD_TIMEOUT)
            raise self._error

    def _main(self) -> None:
        try:
            trio.run(self._serve, clock=self._clock)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that started us
            self._error = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with self._open(**self._kwargs) as cluster:
            self._cluster = cluster
            self._ready.set()
            await self._stop.wait()

    def close(self) -> None:
        """Stop every broker and the controller; the thread is gone when this returns."""
        if self._thread is None:
            return
        if self._thread.is_alive() and self._stop is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(THREAD_TIMEOUT)
        if self._thread.is_alive():
            raise TimeoutError("the mock cluster did not stop")
        self._thread = None

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a cluster method that is synchronous in-process, asynchronous in process mode."""
        if inspect.iscoroutinefunction(fn):
            return self._await(fn, *args)
        return self._in_trio(fn, *args)

    def _in_trio(self, fn: Callable[..., T], *args: Any) -> T:
        if self._in_trio_thread():
            return fn(*args)
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    def _await(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._in_trio_thread():
            raise RuntimeError("blocking cluster calls cannot run inside the cluster's thread")
        return trio.from_thread.run(fn, *args, trio_token=self._token)

    def _in_trio_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    @property
    def cluster(self) -> Cluster:
        """The running trio cluster (its methods must be called from its own thread)."""
        if self._cluster is None:
            raise RuntimeError("the mock cluster is not running")
        return self._cluster

    @property
    def bootstrap_servers(self) -> str:
        """host:port of every broker, comma-separated."""
        return self.cluster.bootstrap_servers

    @property
    def controller(self) -> Controller:
        """The controller (read its state through `partition` and `wait_until`)."""
        return self.cluster.controller

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a topic; it is in every broker's metadata when this returns."""
        self._await(self.cluster.create_topic, name, partitions, replication_factor, config)

    def partition(self, topic: str, index: int) -> Any:
        """The controller's view of a partition (the same object as Controller.partition)."""
        return self._in_trio(self.cluster.partition, topic, index)

    def stop_broker(self, broker_id: int, clean: bool = True) -> None:
        """Stop a broker (clean: controlled shutdown first)."""
        self._await(self.cluster.stop_broker, broker_id, clean)

    def start_broker(self, broker_id: int) -> None:
        """Restart a stopped broker on its port."""
        self._await(self.cluster.start_broker, broker_id)

    def flush(self, broker_id: int) -> None:
        """Flush a broker's logs: their records survive its unclean shutdown."""
        self._call(self.cluster.flush, broker_id)

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """True once `predicate()` holds (run in the cluster's thread); TimeoutError if not."""
        return self._await(self.cluster.wait_until, predicate, timeout)

    def inject_error(
        self,
        api_key: int,
        error_code: int,
        count: int = 1,
        broker: int | None = None,
        link: tuple[NodeId, NodeId] | None = None,
        partition: PartitionKey | None = None,
    ) -> SyncFaultHandle:
        """The next `count` requests of `api_key` (to `broker`, over `link`, or any) answer
        `error_code`; with `partition=(topic, index)` only that partition of them does."""
        handle = self._call(
            self.cluster.inject_error, api_key, error_code, count, broker, link, partition
        )
        return SyncFaultHandle(handle, self)

    def add_latency(
        self, ms: float, broker: int | None = None, link: tuple[NodeId, NodeId] | None = None
    ) -> SyncFaultHandle:
        """Set added latency: on a broker's responses, on a link (one way), or on every broker."""
        return SyncFaultHandle(self._call(self.cluster.add_latency, ms, broker, link), self)

    def partition_network(self, *groups: NodeId | Iterable[NodeId]) -> SyncFaultHandle:
        """Cut the link between two nodes (broker ids or "controller") both ways, or every link
        between groups (`partition_network([1], [2, 3])`), until `heal`."""
        return SyncFaultHandle(self._call(self.cluster.partition_network, *groups), self)

    def isolate(self, broker_id: NodeId) -> SyncFaultHandle:
        """Cut a node off from every other node; its clients still reach it."""
        return SyncFaultHandle(self._call(self.cluster.isolate, broker_id), self)

    def heal(self) -> None:
        """End every network cut and isolation."""
        self._call(self.cluster.heal)

    def metrics(self) -> dict[str, Any]:
        """KIP-966's controller metrics and the high watermark of every partition."""
        return self._call(self.cluster.metrics)

    # -- security -------------------------------------------------------------------------

    @property
    def ssl_ca_location(self) -> str | None:
        """Path of the PEM CA that signed the listeners' certificates (None without TLS)."""
        return self.cluster.ssl_ca_location

    def client_cert(self, user: str) -> tuple[str, str]:
        """(certificate path, key path) of an mTLS client certificate for `user`."""
        return self._in_trio(self.cluster.client_cert, user)

    def client_config(
        self, user: str, mechanism: str | None = None, library: str = "confluent-kafka"
    ) -> dict[str, Any] | str:
        """Connection settings for `user` in `library` ("confluent-kafka", "kafka-python",
        "aiokafka": a dict; "java": a properties text), mechanism the first enabled one."""
        return self.cluster.client_config(user, mechanism, library)

    def add_acl(
        self,
        principal: str,
        resource_type: str,
        resource_name: str,
        operation: str,
        pattern: str = "LITERAL",
        permission: str = "ALLOW",
        host: str = "*",
    ) -> None:
        """Add an ACL; every running broker has replayed it when this returns."""
        self._await(
            self.cluster.add_acl,
            principal,
            resource_type,
            resource_name,
            operation,
            pattern,
            permission,
            host,
        )

    def remove_acl(
        self,
        principal: str,
        resource_type: str,
        resource_name: str,
        operation: str,
        pattern: str = "LITERAL",
        permission: str = "ALLOW",
        host: str = "*",
    ) -> None:
        """Remove the ACL `add_acl` with the same arguments added."""
        self._await(
            self.cluster.remove_acl,
            principal,
            resource_type,
            resource_name,
            operation,
            pattern,
            permission,
            host,
        )

    def acls(self) -> list[Acl]:
        """Every ACL in the metadata log, by name."""
        return self._in_trio(self.cluster.acls)

    def describe(self) -> dict[str, Any]:
        """Every broker (id, host, port, state: running, stopped or fenced) and the controller."""
        return self._in_trio(self.cluster.describe)

    def describe_partition(self, topic: str, index: int) -> dict[str, Any]:
        """A partition's leader (-1 without one), epoch, ISR, ELR, last known ELR and HWM."""
        return self._call(self.cluster.describe_partition, topic, index)
