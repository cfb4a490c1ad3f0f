"""Faults a test injects: per-API error answers, per broker or per link.

Network cuts and link latency live in `network.py`; a broker's response latency on the node.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from .network import Network, NodeId

#: The (host, port) of the peer of the connection a request arrived on; set by the server in
#: each connection's task, so an injection can tell which node (if any) dialed it.
PEER: ContextVar[tuple[str, int] | None] = ContextVar("kipwire_peer", default=None)


@dataclass(slots=True)
class _Injection:
    api_key: int
    error_code: int
    remaining: int
    broker: int | None
    link: tuple[NodeId, int] | None


class Faults:
    """Pending error injections, taken in the order they were added."""

    def __init__(self, network: Network) -> None:
        self._network = network
        self._injections: list[_Injection] = []

    def inject_error(
        self,
        api_key: int,
        error_code: int,
        count: int = 1,
        broker: int | None = None,
        link: tuple[NodeId, int] | None = None,
    ) -> None:
        """The next `count` requests of `api_key` get `error_code`: to `broker`, or sent over
        `link` = (source node, broker), or any."""
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        if broker is not None and link is not None:
            raise ValueError("inject_error takes a broker or a link, not both")
        self._injections.append(_Injection(api_key, error_code, count, broker, link))

    def take_error(self, api_key: int, broker: int) -> int | None:
        """The error to answer this request with, if one is pending."""
        peer = PEER.get()
        link = (self._network.sources.get(peer) if peer else None, broker)
        for injection in self._injections:
            if injection.api_key != api_key or injection.broker not in (None, broker):
                continue
            if injection.link is not None and injection.link != link:
                continue
            injection.remaining -= 1
            if injection.remaining == 0:
                self._injections.remove(injection)
            return injection.error_code
        return None
