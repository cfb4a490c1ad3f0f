"""What a node's listeners bound, as Kafka's SocketServer bounds them: request bytes in memory
(`RequestMemory`, queued.max.request.bytes) and connections (`ConnectionLimits`,
max.connections and max.connections.per.ip). `serve.py` applies both; `NodeLimits` is what a
node carries.

Request memory, as Kafka's memory pool: once a frame's 4-byte size is read, the whole frame is
charged before its body is read, so a frame half sent counts in full; the charge is given back
when the request has been answered, and a connection whose frame cannot be charged waits unread
(its bytes stay in the kernel's socket buffers, not in the mock), as Kafka mutes its channels.
One difference, on purpose: the pool is strict, a frame is charged only once all of it fits.
Kafka's pool (`SimpleMemoryPool`, strict=false) charges any frame while a byte is left, so two
clients each half-way through a large frame can empty it and mute every other client; here
they wait for room while small requests still pass (socket.request.max.bytes <=
queued.max.request.bytes, so every frame fits an empty pool). The nodes' own connections are
not charged, so clients filling a broker's pool never delay a heartbeat or a replica fetch
(Kafka's controller has a socket server of its own; its brokers' replication shares the pool).

Connections, as Kafka's `ConnectionQuotas`: a client over max.connections.per.ip is accepted,
logged and closed at once; a client over max.connections waits, accepted and unread, for a slot,
as Kafka's acceptor blocks. Connections other nodes dial (replication, the controller's) are
counted towards max.connections but never wait, as Kafka protects its inter-broker listener,
and are exempt from the per-IP limit: every node of the mock shares 127.0.0.1, where Kafka's
brokers would come from their own addresses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import trio

from .controller.broker_configs import parse_overrides

#: Kafka's default of max.connections and max.connections.per.ip (no limit).
UNLIMITED = 2**31 - 1


class RequestMemory:
    """queued.max.request.bytes: the request bytes a node holds while reading and answering."""

    def __init__(self, capacity: int) -> None:
        #: The pool's size; 0 or less: unbounded (Kafka's default, -1).
        self.capacity = capacity
        self._available = capacity
        self._freed = trio.Event()

    @property
    def in_use(self) -> int:
        """Bytes charged and not yet given back (0 when unbounded)."""
        return self.capacity - self._available if self.capacity > 0 else 0

    async def take(self, size: int) -> int:
        """Charge `size` bytes, first waiting until they fit (the caller is muted meanwhile);
        returns the charge to `give` back."""
        if self.capacity <= 0:
            return 0
        size = min(size, self.capacity)
        while self._available < size:
            await self._freed.wait()
        self._available -= size
        return size

    def give(self, size: int) -> None:
        """Give back a charge; wakes every connection waiting for memory."""
        if self.capacity <= 0 or not size:
            return
        self._available += size
        self._freed.set()
        self._freed = trio.Event()


class TooManyConnections(Exception):
    """A client address already holds its max.connections.per.ip."""

    def __init__(self, host: str, limit: int) -> None:
        super().__init__(
            f"Rejected connection from /{host}, address already has the configured maximum "
            f"of {limit} connections."
        )


class ConnectionLimits:
    """max.connections and max.connections.per.ip (and its overrides) over a node's listeners;
    `setting(name)` reads a config as it is now, so a dynamic change applies to new connections."""

    def __init__(self, setting: Callable[[str], str | None]) -> None:
        self._setting = setting
        self.total = 0
        self.per_ip: Counter[str] = Counter()
        self._closed = trio.Event()

    def _int(self, name: str) -> int:
        value = self._setting(name)
        return int(value) if value else UNLIMITED

    def ip_limit(self, host: str) -> int:
        """max.connections.per.ip for `host`, after max.connections.per.ip.overrides."""
        overrides = parse_overrides(self._setting("max.connections.per.ip.overrides") or "")
        return overrides.get(host, self._int("max.connections.per.ip"))

    async def open(self, host: str, *, internal: bool) -> None:
        """Count a new connection, first waiting for a max.connections slot (a client only);
        TooManyConnections when its address is over its limit (the caller closes it)."""
        while not internal and self.total >= self._int("max.connections"):
            await self._closed.wait()
        self.total += 1
        if internal:
            return
        count = self.per_ip[host]
        self.per_ip[host] += 1
        limit = self.ip_limit(host)
        if count >= limit:
            self.close(host, internal=False)
            raise TooManyConnections(host, limit)

    def close(self, host: str, *, internal: bool) -> None:
        """Uncount a connection `open` counted; wakes the clients waiting for a slot."""
        self.total -= 1
        if not internal:
            self.per_ip[host] -= 1
            if self.per_ip[host] <= 0:
                del self.per_ip[host]
        self._closed.set()
        self._closed = trio.Event()


@dataclass(slots=True)
class NodeLimits:
    """What bounds one node's listeners beyond the frame size: request memory, connections."""

    memory: RequestMemory = field(default_factory=lambda: RequestMemory(-1))
    connections: ConnectionLimits = field(default_factory=lambda: ConnectionLimits(lambda n: None))

    @classmethod
    def from_config(
        cls, config: Mapping[str, str], current: Callable[[str], str | None] | None = None
    ) -> NodeLimits:
        """A node's limits from its broker configs; `current` reads a dynamic config's value
        now (the cluster default set at run time), else the start value holds."""
        return cls(
            RequestMemory(int(config.get("queued.max.request.bytes", "-1"))),
            ConnectionLimits(current or config.get),
        )
