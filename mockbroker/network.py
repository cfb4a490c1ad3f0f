"""The link layer between nodes: every inter-node connection dials through `Network.connect`.

Node ids: a broker is its broker id (1..N); the controller is `CONTROLLER` (the string
"controller"). Clients (anything not dialing through this module) are never cut off.

How to dial another node (broker -> controller; follower -> leader Fetch for replication):

    stream = await cluster.network.connect(src=follower_id, dst=leader_id)
    await stream.send_all(frame); data = await stream.receive_some()

The returned `LinkStream` is a `trio.abc.Stream` like the `trio.SocketStream` it wraps.

Faults, deterministic by construction (they act on the dialing side, so they need no timer):
Tests inject them through `faults.Faults` (`cluster.partition_network`, `isolate`, `add_latency`),
which keeps a handle per fault; this module only carries them out:
- a cut (`cut(a, b)`, `isolate(b)`) is a pulled cable: no RST, connections stay open, nothing
  crosses the link either way. Writes are accepted and buffered, reads block; bytes that arrive
  while the link is cut are held. `heal()` ends every cut and the buffered bytes flow on (the
  buffer is flushed by the next read or write on that stream).
- latency on a link (`set_latency(a, b, seconds)`) delays every write and every read on streams
  between a and b by that one-way delay, so a request and its answer take two delays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TypeAlias

import trio

NodeId: TypeAlias = int | str
CONTROLLER: NodeId = "controller"
_READ_SIZE = 1 << 20


def _pair(a: NodeId, b: NodeId) -> frozenset[NodeId]:
    if a == b:
        raise ValueError(f"a link joins two different nodes, got {a!r} twice")
    return frozenset((a, b))


class Network:
    """Which links are cut or slow; dials inter-node connections through them."""

    def __init__(self, resolve: Callable[[NodeId], str]) -> None:
        self._resolve = resolve
        # counted: two handles on one link each hold it until both are removed
        self._cuts: Counter[frozenset[NodeId]] = Counter()
        self._isolated: Counter[NodeId] = Counter()
        self._latency: dict[frozenset[NodeId], float] = {}
        self._changed = trio.Event()
        #: (host, port) of the dialing end of every link connection -> the node that dialed it
        self.sources: dict[tuple[str, int], NodeId] = {}
        #: Told (src, dst) whenever a cut holds bytes or latency delays them (faults count it).
        self.observe: Callable[[str, NodeId, NodeId], None] = lambda kind, src, dst: None
        #: The local address a node's connections leave from (None: any); process mode gives
        #: each node its own loopback address, so any process can tell who dialed.
        self.local_host: Callable[[NodeId], str | None] = lambda node: None

    async def connect(self, src: NodeId, dst: NodeId) -> LinkStream:
        """A TCP connection from node `src` to node `dst`, subject to this network's faults."""
        _pair(src, dst)
        host, port = self._resolve(dst).rsplit(":", 1)
        await self.wait_open(src, dst)
        family, kind, proto, _, address = (
            await trio.socket.getaddrinfo(host, int(port), type=trio.socket.SOCK_STREAM)
        )[0]
        sock = trio.socket.socket(family, kind, proto)
        name: tuple[str, int] | None = None
        try:
            # bound and named before it connects: the node that accepts it can tell a link from
            # a client as it accepts (connection limits exempt links), not only once it reads
            await sock.bind((self.local_host(src) or address[0], 0))
            name = sock.getsockname()[:2]
            self.sources[name] = src
            await sock.connect(address)
        except BaseException:
            if name is not None:
                self.sources.pop(name, None)
            sock.close()
            raise
        return LinkStream(self, src, dst, trio.SocketStream(sock), name)

    def cut(self, a: NodeId, b: NodeId) -> None:
        """Stop all traffic between `a` and `b`, both ways, until `uncut` or `heal`."""
        self._cuts[_pair(a, b)] += 1

    def uncut(self, a: NodeId, b: NodeId) -> None:
        """Take back one `cut(a, b)`."""
        pair = _pair(a, b)
        self._cuts[pair] -= 1
        if self._cuts[pair] <= 0:
            del self._cuts[pair]
            self._opened()

    def isolate(self, node: NodeId) -> None:
        """Cut `node` off from every other node (its clients still reach it)."""
        self._isolated[node] += 1

    def unisolate(self, node: NodeId) -> None:
        """Take back one `isolate(node)`."""
        self._isolated[node] -= 1
        if self._isolated[node] <= 0:
            del self._isolated[node]
            self._opened()

    def heal(self) -> None:
        """End every cut and isolation; held bytes flow on."""
        self._cuts.clear()
        self._isolated.clear()
        self._opened()

    def _opened(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    @property
    def quiet(self) -> bool:
        """No cut, isolation or latency anywhere: every link passes bytes as they come."""
        return not (self._cuts or self._isolated or self._latency)

    def is_cut(self, a: NodeId, b: NodeId) -> bool:
        """Whether traffic between `a` and `b` is stopped."""
        return a in self._isolated or b in self._isolated or _pair(a, b) in self._cuts

    def set_latency(self, a: NodeId, b: NodeId, seconds: float) -> None:
        """The one-way delay on the link between `a` and `b` (0 removes it)."""
        if seconds < 0:
            raise ValueError(f"latency cannot be negative, got {seconds}")
        if seconds:
            self._latency[_pair(a, b)] = seconds
        else:
            self._latency.pop(_pair(a, b), None)

    def latency(self, a: NodeId, b: NodeId) -> float:
        """The one-way delay between `a` and `b`, in seconds."""
        return self._latency.get(_pair(a, b), 0.0)

    async def wait_open(self, a: NodeId, b: NodeId) -> None:
        """Return once traffic may cross between `a` and `b`."""
        if self.is_cut(a, b):
            self.observe("held", a, b)
        while self.is_cut(a, b):
            await self._changed.wait()


class LinkStream(trio.abc.Stream):
    """One inter-node connection, seen from the node that dialed it."""

    def __init__(
        self,
        network: Network,
        src: NodeId,
        dst: NodeId,
        stream: trio.SocketStream,
        name: tuple[str, int],
    ) -> None:
        self.src, self.dst = src, dst
        self._network = network
        self._stream = stream
        self._name = name
        self._held = bytearray()
        self._send_lock = trio.Lock()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Send, or buffer while the link is cut (a cut cable accepts writes)."""
        lock = self._send_lock
        if not self._held and not lock.locked() and self._network.quiet:
            # nothing held, no fault anywhere: straight to the socket (no copy into `_held`, no
            # turn of the scheduler for the lock), the lock still keeping later sends behind
            lock.acquire_nowait()
            try:
                await self._stream.send_all(data)
            finally:
                lock.release()
            return
        self._held += data
        if self._network.is_cut(self.src, self.dst):
            self._network.observe("held", self.src, self.dst)
        else:
            await self._flush()

    async def wait_send_all_might_not_block(self) -> None:
        """Part of the Stream interface."""
        await self._stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """Read; blocks while the link is cut, and holds bytes that arrive during a cut."""
        network = self._network
        if self._held or not network.quiet:
            await network.wait_open(self.src, self.dst)
            await self._flush()
        data = await self._stream.receive_some(max_bytes or _READ_SIZE)
        if network.quiet:
            return data  # no fault came while it waited
        await network.wait_open(self.src, self.dst)
        delay = self._network.latency(self.src, self.dst)
        if delay and data:
            self._network.observe("delayed", self.src, self.dst)
            await trio.sleep(delay)
        return data

    async def _flush(self) -> None:
        async with self._send_lock:
            if not self._held:
                return
            data = bytes(self._held)
            self._held.clear()
            delay = self._network.latency(self.src, self.dst)
            if delay:
                self._network.observe("delayed", self.src, self.dst)
                await trio.sleep(delay)
            await self._stream.send_all(data)

    async def aclose(self) -> None:
        """Close the connection (a closed stream is no longer a link)."""
        self._network.sources.pop(self._name, None)
        await self._stream.aclose()
