"""Faults a test injects: per-API error answers, per broker or per link.

Network cuts and link latency live in `network.py`; a broker's response latency on the node.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from kipwire.codec import DecodeError, EncodeError, encode_response
from kipwire.codec.framing import peek_request_header

from .dispatch import CloseConnection, frame
from .network import CONTROLLER, Network, NodeId

#: The (host, port) of the peer of the connection a request arrived on; set by the server in
#: each connection's task, so an injection can tell which node (if any) dialed it.
PEER: ContextVar[tuple[str, int] | None] = ContextVar("kipwire_peer", default=None)


@dataclass(slots=True)
class _Injection:
    api_key: int
    error_code: int
    remaining: int
    broker: int | None
    link: tuple[NodeId, NodeId] | None


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
        link: tuple[NodeId, NodeId] | None = None,
    ) -> None:
        """The next `count` requests of `api_key` get `error_code`: to `broker`, or sent over
        `link` = (source node, destination node; the controller too), or to any broker."""
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        if broker is not None and link is not None:
            raise ValueError("inject_error takes a broker or a link, not both")
        self._injections.append(_Injection(api_key, error_code, count, broker, link))

    def take_error(self, api_key: int, broker: NodeId) -> int | None:
        """The error to answer this request to `broker` (or the controller) with, if any."""
        peer = PEER.get()
        link = (self._network.sources.get(peer) if peer else None, broker)
        for injection in self._injections:
            if injection.api_key != api_key:
                continue
            if injection.link is None:
                # untargeted and per-broker injections are for the brokers' client APIs
                if broker == CONTROLLER or injection.broker not in (None, broker):
                    continue
            elif injection.link != link:
                continue
            injection.remaining -= 1
            if injection.remaining == 0:
                self._injections.remove(injection)
            return injection.error_code
        return None

    def controller_answer(self, data: memoryview) -> bytes | None:
        """The error frame for a request to the controller an injection fails, else None (an
        API without a top-level error code gets its connection closed instead)."""
        try:
            header = peek_request_header(data)
        except DecodeError:
            return None
        code = self.take_error(header.api_key, CONTROLLER)
        if code is None:
            return None
        key, version, cid = header.api_key, header.api_version, header.correlation_id
        try:
            body = {"error_code": code}
            return frame(encode_response(key, version, body, correlation_id=cid))
        except EncodeError:
            # no top-level error code to carry it: the injected fault closes the connection
            raise CloseConnection(f"injected error {code} for API {key} closes it") from None
