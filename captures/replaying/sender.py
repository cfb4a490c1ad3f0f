"""The sender: each captured client connection's requests, again, against the target.

One trio task per original connection sends its requests in order over a new connection (one per
target broker the requests go to: normally one), each after `causality` allows it and, with
`pace="original"`, no earlier than its captured offset from the capture's start. Before sending,
the request is decoded, rewritten (`rules`) and encoded again in its captured version; the
target's answer teaches the rules what the next requests need. Every frame sent and answered is
written to the replay's pcapng as it happens. A request that cannot go (a version the target does
not serve, a connection the target closed) is a `NotReplayed` row.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from kipwire.captures.pcap import PcapngWriter, TcpConversation
from kipwire.client import ClientError, Reply, TrioConnection
from kipwire.codec import ApiKey, DecodeError, EncodeError, decode_request, encode_request

from .auth import AuthError, authenticate, open_stream
from .causality import Causality
from .extract import SASL_APIS, CapturedExchange, ClientConnection, NotReplayed
from .routing import COORDINATOR_ERRORS, LEADER_ERRORS, Target, route_key
from .rules import Learned, learn, rewrite

__all__ = ["ReplayRun", "Sender", "error_codes"]

_SIZE = struct.Struct(">i")
# a request, and more after the leader or coordinator moved or was still loading, each after a
# client's backoff (doubling from 50 ms to 1 s): about 5 s in all, as a client waits for a
# coordinator a cold broker is loading
_ATTEMPTS = 10
_BACKOFF_S = (0.05, 1.0)

UNDECODABLE = "request the codec cannot decode"
UNSUPPORTED = "request the target does not support"
TARGET_FAILED = "target connection failed"
SASL_REPLACED = "SASL exchange (authenticated with the target's credentials instead)"


def error_codes(body: Any) -> set[int]:
    """Every error code a decoded body carries, at any depth."""
    found: set[int] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            code = node.get("error_code")
            if isinstance(code, int):
                found.add(code)
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, (dict, list)))
    return found


@dataclass(slots=True)
class ReplayRun:
    """What one replay did: requests sent and answered, and what it could not send."""

    sent: int = 0
    answered: int = 0
    retried: int = 0
    not_replayed: list[NotReplayed] = field(default_factory=list)
    #: (connection uid, exchange index) of the captured requests that were not sent
    unsent: set[tuple[str, int]] = field(default_factory=set)
    seconds: float = 0.0


class _Link:
    """A connection to one target broker, recorded as it goes."""

    def __init__(self, conn: TrioConnection, conversation: TcpConversation) -> None:
        self.conn = conn
        self.conversation = conversation

    async def exchange(self, frame: bytes, *, wait: bool = True) -> Reply | None:
        """Send one request frame (renumbered by the client) and return its answer; without
        `wait` the answer is not read (the captured client left before it came)."""
        sent = await self.conn.send_frame(frame)
        data = frame[:4] + _SIZE.pack(sent.correlation_id) + frame[8:]
        self.conversation.client_sends(_SIZE.pack(len(data)) + data)
        if not sent.expects_response or not wait:
            return None
        reply = await self.conn.receive()
        self.conversation.server_sends(_SIZE.pack(len(reply.frame)) + reply.frame)
        return reply

    async def aclose(self) -> None:
        self.conversation.close()
        await self.conn.aclose()


class Sender:
    """Replays client connections against a target; shared by all connection tasks."""

    def __init__(
        self,
        target: Target,
        learned: Learned,
        causality: Causality,
        writer: PcapngWriter,
        *,
        pace: str,
        original_nodes: dict[tuple[str, int], int],
        timeout: float,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.target = target
        self.learned = learned
        self.causality = causality
        self.writer = writer
        self.pace = pace
        self.original_nodes = original_nodes
        self.timeout = timeout
        self.progress = progress
        self.run = ReplayRun()
        self._lost: dict[tuple[str, str], int] = {}
        self._start = 0.0
        self._first_ns = 0

    async def replay(self, connections: list[ClientConnection]) -> ReplayRun:
        """Replay every connection, concurrently, each in its order."""
        stamps = [ex.ts_ns for c in connections for ex in c.exchanges if ex.ts_ns is not None]
        self._first_ns = min(stamps, default=0)
        self._start = trio.current_time()
        began = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for conn in connections:
                nursery.start_soon(self._replay_connection, conn)
        self.run.seconds = time.perf_counter() - began
        self.run.not_replayed.extend(
            NotReplayed(reason, name, n) for (reason, name), n in self._lost.items()
        )
        return self.run

    def _lose(
        self, conn: ClientConnection, ex: CapturedExchange, reason: str, detail: str = ""
    ) -> None:
        self.run.unsent.add((conn.uid, ex.index))
        key = (f"{reason}: {detail}" if detail else reason, conn.name)
        self._lost[key] = self._lost.get(key, 0) + 1

    async def _replay_connection(self, conn: ClientConnection) -> None:
        links: dict[int, _Link] = {}
        default = self.original_nodes.get(conn.server)
        try:
            # requests the captured client left unanswered at its end are sent, not waited for
            answered = [i for i, ex in enumerate(conn.exchanges) if ex.response is not None]
            tail = answered[-1] + 1 if answered else 0
            for ex in conn.exchanges:
                key = (conn.uid, ex.index)
                await self.causality.wait_turn(key)
                try:
                    await self._replay_exchange(conn, ex, links, default, wait=ex.index < tail)
                finally:
                    self.causality.done(key)
        finally:
            for link in links.values():
                with trio.CancelScope(shield=True):
                    await link.aclose()

    async def _link(self, links: dict[int, _Link], node: int, client_id: str | None) -> _Link:
        if node not in links:
            address = self.target.brokers[node]
            creds = self.target.creds
            stream, local = await open_stream(address, creds, self.timeout)
            conn = TrioConnection(stream, client_id, timeout=self.timeout)
            if creds.sasl:  # before the recording starts: the secrets stay out of it
                await authenticate(conn, creds)
            links[node] = _Link(conn, self.writer.conversation(local, address))
        return links[node]

    async def _replay_exchange(
        self,
        conn: ClientConnection,
        ex: CapturedExchange,
        links: dict[int, _Link],
        default: int | None,
        *,
        wait: bool,
    ) -> None:
        if self.pace == "original" and ex.ts_ns is not None:
            await trio.sleep_until(self._start + (ex.ts_ns - self._first_ns) / 1e9)
        if ex.api_key in SASL_APIS:
            self._lose(conn, ex, SASL_REPLACED)
            return
        try:
            request = decode_request(ex.frame, trailing="ignore")
        except DecodeError as exc:
            self._lose(conn, ex, UNDECODABLE, type(exc).__name__)
            return
        versions = self.target.versions
        if ex.api_key != ApiKey.API_VERSIONS and not (
            versions is not None and versions.supports(ex.api_key, ex.api_version)
        ):
            self._lose(conn, ex, UNSUPPORTED, f"{_api(ex.api_key)} v{ex.api_version}")
            return
        body = request.body
        rewrite(ex.api_key, body, self.learned)
        try:
            frame = encode_request(ex.api_key, ex.api_version, body, client_id=request.client_id)
        except EncodeError as exc:
            self._lose(conn, ex, UNDECODABLE, str(exc))
            return
        original = ex.decoded_response()
        try:
            answer = await self._send(ex, body, frame, links, default, original, wait=wait)
        except (
            ClientError,
            AuthError,
            OSError,
            trio.TooSlowError,
            trio.BrokenResourceError,
        ) as exc:
            self._lose(conn, ex, TARGET_FAILED, type(exc).__name__)
            # the next request opens new connections, as a client reconnects
            for link in links.values():
                with trio.CancelScope(shield=True):
                    await link.aclose()
            links.clear()
            return
        if answer is not None:
            learn(ex.api_key, body, original, answer, self.learned)
        if self.progress is not None:
            self.progress(self.run.sent)

    async def _send(
        self,
        ex: CapturedExchange,
        body: Any,
        frame: bytes,
        links: dict[int, _Link],
        default: int | None,
        original: Any,
        *,
        wait: bool,
    ) -> Any:
        """Send to the broker a client would pick, again after the leader or coordinator moved;
        the target's decoded answer (None for acks=0)."""
        route = route_key(ex.api_key, body, self.learned)
        expected = error_codes(original) if original is not None else set()
        for attempt in range(_ATTEMPTS):
            node = await self.target.node_for(route, default)
            link = await self._link(links, node, ex.client_id)
            reply = await link.exchange(frame, wait=wait)
            self.run.sent += 1
            if reply is None:
                return None
            self.run.answered += 1
            answer = reply.decode(trailing="ignore").body
            moved = (error_codes(answer) - expected) & (
                LEADER_ERRORS if route and route[0] == "leader" else COORDINATOR_ERRORS
            )
            if route is None or not moved or attempt == _ATTEMPTS - 1:
                return answer
            self.run.retried += 1
            await trio.sleep(min(_BACKOFF_S[0] * 2**attempt, _BACKOFF_S[1]))
            if route[0] == "leader":
                await self.target.refresh()
            else:
                await self.target.coordinator(route[0], route[1], again=True)
        return None  # not reached: the last attempt returns


def _api(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API {api_key}"
