"""Every fault a test injects, matched in one place: errors, latency and network cuts.

Each injection returns a `FaultHandle`: `fired` counts the requests (or held link crossings) it
affected, `remove()` takes it back. Matching is per API, per broker or link (a request's source
node is known from `network.sources`) and, for APIs that name partitions, per partition: the serve
pipeline (`serve.py`) asks `take_error` or `take_partition_errors` once per request, and
`response_delay` once per response. Cuts and link latency are carried out by `network.py` (on the
dialing side); this module keeps their handles and tells the network what is in force.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .network import CONTROLLER, Network, NodeId

#: (topic, partition index).
PartitionKey = tuple[str, int]
#: An error injection's count that never runs out: it fires until removed.
UNTIL_REMOVED = -1


@dataclass(eq=False)
class FaultHandle:
    """One injected fault: how often it fired, and `remove()` to end it."""

    kind: str
    fired: int = 0
    active: bool = True
    _faults: Faults | None = field(default=None, repr=False)

    def remove(self) -> None:
        """End the fault now (a no-op once it is spent or removed)."""
        if self.active and self._faults is not None:
            self._faults.remove(self)


@dataclass(eq=False)
class ErrorInjection(FaultHandle):
    """The next `remaining` requests of `api_key` matched answer `error_code` (-1: every one,
    until removed)."""

    api_key: int = -1
    error_code: int = 0
    remaining: int = 1
    broker: int | None = None
    link: tuple[NodeId, NodeId] | None = None
    partition: PartitionKey | None = None


@dataclass(eq=False)
class LatencyInjection(FaultHandle):
    """Added latency: on a broker's responses (`broker`, or every broker), or on a link."""

    seconds: float = 0.0
    broker: int | None = None
    link: tuple[NodeId, NodeId] | None = None


@dataclass(eq=False)
class CutInjection(FaultHandle):
    """A cut link (`a`, `b`), a node isolated from every other (`b` is None), or a partition
    of the network into groups (`links`: every link between two groups is cut)."""

    a: NodeId = CONTROLLER
    b: NodeId | None = None
    links: tuple[tuple[NodeId, NodeId], ...] = ()


class Faults:
    """Pending injections in the order they were added; the first match answers."""

    def __init__(self, network: Network) -> None:
        self.network = network
        self._errors: list[ErrorInjection] = []
        self._latencies: list[LatencyInjection] = []
        self._cuts: list[CutInjection] = []
        network.observe = self._observe

    # -- adding ---------------------------------------------------------------------------------

    def inject_error(
        self,
        api_key: int,
        error_code: int,
        count: int = 1,
        broker: int | None = None,
        link: tuple[NodeId, NodeId] | None = None,
        partition: PartitionKey | None = None,
    ) -> ErrorInjection:
        """The next `count` requests of `api_key` get `error_code`: to `broker`, or sent over
        `link` = (source node, destination node; the controller too), or to any broker; with
        `partition` = (topic, index) only that partition of a request answers the error."""
        if count < 1 and count != UNTIL_REMOVED:
            raise ValueError(f"count must be at least 1 (or -1: until removed), got {count}")
        if broker is not None and link is not None:
            raise ValueError("inject_error takes a broker or a link, not both")
        injection = ErrorInjection(
            "error",
            _faults=self,
            api_key=api_key,
            error_code=error_code,
            remaining=count,
            broker=broker,
            link=link,
            partition=partition,
        )
        self._errors.append(injection)
        return injection

    def add_latency(
        self, seconds: float, broker: int | None = None, link: tuple[NodeId, NodeId] | None = None
    ) -> LatencyInjection:
        """Latency on a broker's responses, on a link (one way), or on every broker; the latest
        injection for a broker or link is the one in force."""
        if seconds < 0:
            raise ValueError(f"latency cannot be negative, got {seconds * 1000} ms")
        if broker is not None and link is not None:
            raise ValueError("add_latency takes a broker or a link, not both")
        injection = LatencyInjection(
            "latency", _faults=self, seconds=seconds, broker=broker, link=link
        )
        self._latencies.append(injection)
        if link is not None:
            self._apply_link_latency(*link)
        return injection

    def cut(self, a: NodeId, b: NodeId) -> CutInjection:
        """Cut the link between `a` and `b` both ways until the handle is removed or `heal`."""
        self.network.cut(a, b)
        injection = CutInjection("cut", _faults=self, a=a, b=b)
        self._cuts.append(injection)
        return injection

    def cut_groups(self, groups: Sequence[Sequence[NodeId]]) -> CutInjection:
        """Cut every link between nodes of different groups (a node in no group is untouched)."""
        seen: set[NodeId] = set()
        for group in groups:
            if seen & set(group):
                raise ValueError(f"a node is in two groups: {sorted(map(str, seen & set(group)))}")
            seen |= set(group)
        links = tuple(
            (a, b)
            for i, group in enumerate(groups)
            for other in groups[i + 1 :]
            for a in group
            for b in other
        )
        for a, b in links:
            self.network.cut(a, b)
        injection = CutInjection("partition", _faults=self, links=links)
        self._cuts.append(injection)
        return injection

    def isolate(self, node: NodeId) -> CutInjection:
        """Cut `node` off from every other node (its clients still reach it)."""
        self.network.isolate(node)
        injection = CutInjection("isolate", _faults=self, a=node)
        self._cuts.append(injection)
        return injection

    def heal(self) -> None:
        """End every cut and isolation."""
        for cut in self._cuts:
            cut.active = False
        self._cuts.clear()
        self.network.heal()

    def remove(self, handle: FaultHandle) -> None:
        """End one injection."""
        handle.active = False
        if isinstance(handle, ErrorInjection) and handle in self._errors:
            self._errors.remove(handle)
        elif isinstance(handle, LatencyInjection) and handle in self._latencies:
            self._latencies.remove(handle)
            if handle.link is not None:
                self._apply_link_latency(*handle.link)
        elif isinstance(handle, CutInjection) and handle in self._cuts:
            self._cuts.remove(handle)
            if handle.links:
                for a, b in handle.links:
                    self.network.uncut(a, b)
            elif handle.b is None:
                self.network.unisolate(handle.a)
            else:
                self.network.uncut(handle.a, handle.b)

    # -- matching -------------------------------------------------------------------------------

    def source_of(self, peer: tuple[str, int] | None) -> NodeId | None:
        """The node that dialed a connection (None for a client)."""
        return self.network.sources.get(peer) if peer is not None else None

    def _matches(
        self, injection: ErrorInjection, api_key: int, node: NodeId, source: object
    ) -> bool:
        if injection.api_key != api_key:
            return False
        if injection.link is None:
            # untargeted and per-broker injections are for the brokers' client APIs
            return node != CONTROLLER and injection.broker in (None, node)
        return injection.link == (source, node)

    def _fire(self, injection: ErrorInjection) -> int:
        injection.fired += 1
        if injection.remaining != UNTIL_REMOVED:
            injection.remaining -= 1
            if injection.remaining == 0:
                self.remove(injection)
        return injection.error_code

    def take_error(self, api_key: int, node: NodeId, source: NodeId | None) -> int | None:
        """The error a whole request of `api_key` to `node` from `source` answers, if any."""
        for injection in self._errors:
            if injection.partition is None and self._matches(injection, api_key, node, source):
                return self._fire(injection)
        return None

    def take_partition_errors(
        self, api_key: int, node: NodeId, source: NodeId | None, partitions: Iterable[PartitionKey]
    ) -> dict[PartitionKey, int]:
        """The error each named partition of one request answers (each injection fires once)."""
        asked = set(partitions)
        errors: dict[PartitionKey, int] = {}
        for injection in list(self._errors):
            key = injection.partition
            if key is None or key not in asked or key in errors:
                continue
            if self._matches(injection, api_key, node, source):
                errors[key] = self._fire(injection)
        return errors

    def wants_partitions(self, api_key: int) -> bool:
        """Whether any partition injection waits for `api_key` (the pipeline looks no further)."""
        return any(i.partition is not None and i.api_key == api_key for i in self._errors)

    def response_delay(self, node: NodeId) -> float:
        """The latency added to `node`'s answers (the latest broker injection for it)."""
        injection = self.latency_for(node)
        if injection is None:
            return 0.0
        if injection.seconds:
            injection.fired += 1
        return injection.seconds

    def latency_for(self, node: NodeId) -> LatencyInjection | None:
        """The latency injection in force on `node`'s answers (the latest for it), if any."""
        if node == CONTROLLER:
            return None
        for injection in reversed(self._latencies):
            if injection.link is None and injection.broker in (None, node):
                return injection
        return None

    def _observe(self, kind: str, src: NodeId, dst: NodeId) -> None:
        """The network held bytes on a cut link, or delayed them on a slow one."""
        pair = {src, dst}
        if kind == "held":
            for cut in self._cuts:
                if cut.links:
                    hit = any({a, b} == pair for a, b in cut.links)
                else:
                    hit = (cut.a in pair) if cut.b is None else ({cut.a, cut.b} == pair)
                if hit:
                    cut.fired += 1
            return
        for injection in reversed(self._latencies):
            if injection.link is not None and set(injection.link) == pair:
                injection.fired += 1
                return

    def _apply_link_latency(self, a: NodeId, b: NodeId) -> None:
        pair = {a, b}
        seconds = next(
            (i.seconds for i in reversed(self._latencies) if i.link and set(i.link) == pair), 0.0
        )
        self.network.set_latency(a, b, seconds)
