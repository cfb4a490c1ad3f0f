"""The sans-I/O core of a client connection: requests in, bytes out; bytes in, matched replies out.

Like h11's connection object it never touches a socket: `request` returns the bytes to write,
`receive_data` takes the bytes read, and `next_reply` hands out the answer to the oldest request
that awaits one. Everything that decides what a connection may do next lives here, so the blocking
and the trio connection only move bytes and time.

Kafka answers the requests of one connection in the order they were sent, and a Produce with
acks=0 gets no answer at all; each response starts with the correlation id of its request, which
is checked before anything else is decoded.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from kipwire.codec import (
    ApiKey,
    DecodeError,
    Response,
    decode_request,
    decode_response,
    encode_request,
)
from kipwire.codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameBuffer

from ._errors import ClientError, ConnectionClosedError, CorrelationIdMismatchError

__all__ = ["ConnectionCore", "InFlight", "Reply"]

_SIZE = struct.Struct(">i")
_FIXED_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_MAX_CORRELATION_ID = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class InFlight:
    """A request that was sent: what its answer is matched and decoded with."""

    correlation_id: int
    api_key: int
    api_version: int
    #: False for a Produce with acks=0, which Kafka never answers.
    expects_response: bool = True


@dataclass(frozen=True, slots=True)
class Reply:
    """A response frame (no size prefix) and the request it answers."""

    request: InFlight
    frame: bytes

    def decode(self, *, trailing: str = "raise") -> Response:
        """The response decoded with its request's API key and version."""
        return decode_response(
            self.frame, self.request.api_key, self.request.api_version, trailing=trailing
        )


def api_name(api_key: int) -> str:
    """The API's name for messages (its number when the codec does not know it)."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API {api_key}"


def _expects_response(api_key: int, acks: Any) -> bool:
    return api_key != ApiKey.PRODUCE or acks != 0


def _frame_expects_response(frame: bytes, api_key: int) -> bool:
    if api_key != ApiKey.PRODUCE:
        return True
    try:
        acks = decode_request(frame, trailing="ignore").body["acks"]
    except DecodeError:
        return True  # a frame the codec cannot read: whether it is answered is the peer's call
    return _expects_response(api_key, acks)


class ConnectionCore:
    """One connection's state: the next correlation id, the requests awaiting answers, the bytes
    received and not yet taken out, and whether the connection can still be used."""

    def __init__(
        self,
        client_id: str | None = "kipwire",
        *,
        first_correlation_id: int = 1,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        if not 0 <= first_correlation_id <= _MAX_CORRELATION_ID:
            raise ValueError(f"a correlation id is an int32 >= 0, not {first_correlation_id}")
        self.client_id = client_id
        self._next_id = first_correlation_id
        self._frames = FrameBuffer(max_frame_size)
        self._waiting: deque[InFlight] = deque()
        self._abandoned: set[int] = set()
        self._peer_closed = False
        self._failure: str | None = None

    @property
    def awaiting(self) -> tuple[InFlight, ...]:
        """The requests sent whose answers have not been taken out, oldest first (abandoned
        ones left out)."""
        return tuple(r for r in self._waiting if r.correlation_id not in self._abandoned)

    @property
    def awaiting_count(self) -> int:
        """How many requests await answers (abandoned ones left out), without building a tuple."""
        return len(self._waiting) - len(self._abandoned)

    def oldest_awaiting(self) -> InFlight | None:
        """The request whose answer `next_reply` returns next, None if none awaits one."""
        return next((r for r in self._waiting if r.correlation_id not in self._abandoned), None)

    @property
    def usable(self) -> bool:
        """False once the peer closed, this side closed, or the stream went out of step."""
        return self._failure is None and not self._peer_closed

    def request(
        self, api_key: int, api_version: int, body: dict, *, trailing: bytes = b""
    ) -> tuple[InFlight, bytes]:
        """Encode one request with the next correlation id and the header version its API and
        version take; returns it and the bytes to send (size prefix included). `trailing` bytes
        follow the body, for testing a peer's tolerance of them."""
        self.ensure_usable()
        cid = self._next_id
        frame = encode_request(
            api_key, api_version, body, correlation_id=cid, client_id=self.client_id
        )
        self._advance_id()
        frame += trailing
        sent = InFlight(cid, api_key, api_version, _expects_response(api_key, body.get("acks", 0)))
        return self._register(sent), _SIZE.pack(len(frame)) + frame

    def request_frame(
        self, frame: bytes | bytearray | memoryview, *, renumber: bool = True
    ) -> tuple[InFlight, bytes]:
        """A request already encoded (header and body, no size prefix), e.g. one read from a
        capture: with `renumber` its correlation id becomes this connection's next one. Returns
        it and the bytes to send."""
        self.ensure_usable()
        frame = bytes(frame)
        if len(frame) < _FIXED_HEADER.size:
            raise ValueError(
                f"a request frame starts with an 8-byte header, got {len(frame)} bytes"
            )
        api_key, api_version, cid = _FIXED_HEADER.unpack_from(frame)
        if renumber:
            cid = self._next_id
            frame = frame[:4] + _SIZE.pack(cid) + frame[8:]
            self._advance_id()
        sent = InFlight(cid, api_key, api_version, _frame_expects_response(frame, api_key))
        return self._register(sent), _SIZE.pack(len(frame)) + frame

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Bytes read from the peer; empty bytes mean the peer closed its side."""
        if data:
            self._frames.feed(data)
        else:
            self._peer_closed = True

    def next_reply(self) -> Reply | None:
        """The answer to the oldest request awaiting one, or None until more bytes arrive.

        Answers to abandoned requests are dropped on the way. Raises ConnectionClosedError when the
        peer closed first, CorrelationIdMismatchError when the answer is not that request's, and
        ClientError when no request awaits an answer.
        """
        if self._failure is not None:
            raise ConnectionClosedError(f"the connection cannot be used: {self._failure}")
        while True:
            if not self.awaiting_count:
                raise ClientError("no request on this connection awaits an answer")
            frame = self._take_frame()
            if frame is None:
                if self._peer_closed:
                    oldest = self.oldest_awaiting()
                    assert oldest is not None
                    raise ConnectionClosedError(
                        f"the peer closed the connection with {self.awaiting_count} request(s) "
                        f"unanswered, the oldest {api_name(oldest.api_key)} "
                        f"v{oldest.api_version} (correlation id {oldest.correlation_id})"
                    )
                return None
            head = self._waiting.popleft()
            received = _SIZE.unpack_from(frame)[0] if len(frame) >= 4 else -1
            if received != head.correlation_id:
                error = CorrelationIdMismatchError(head.correlation_id, received)
                self._failure = str(error)
                raise error
            if head.correlation_id in self._abandoned:
                self._abandoned.discard(head.correlation_id)
                continue
            return Reply(head, frame)

    def next_frame(self) -> bytes | None:
        """The next whole frame, unmatched (after bytes sent outside the protocol), or None until
        more bytes arrive; the oldest request awaiting an answer, if any, counts as answered.
        Raises ConnectionClosedError when the peer closed first."""
        if self._failure is not None:
            raise ConnectionClosedError(f"the connection cannot be used: {self._failure}")
        frame = self._take_frame()
        if frame is None:
            if self._peer_closed:
                raise ConnectionClosedError("the peer closed the connection")
            return None
        if self._waiting:
            self._abandoned.discard(self._waiting.popleft().correlation_id)
        return frame

    def abandon(self, request: InFlight) -> None:
        """Give up waiting for `request`'s answer (timed out, cancelled); it is dropped when it
        comes, and the connection stays in step."""
        # only a request still waiting, so that the abandoned stay a subset of the waiting
        if request in self._waiting:
            self._abandoned.add(request.correlation_id)

    def fail(self, reason: str) -> None:
        """Mark the connection unusable (closed by this side, a send cut midway); every later
        request or receive raises ConnectionClosedError with `reason`."""
        if self._failure is None:
            self._failure = reason

    def ensure_usable(self) -> None:
        """Raise ConnectionClosedError if the connection can no longer carry a request."""
        if self._failure is not None:
            raise ConnectionClosedError(f"the connection cannot be used: {self._failure}")
        if self._peer_closed:
            raise ConnectionClosedError("the peer closed the connection")

    def _advance_id(self) -> None:
        self._next_id = 0 if self._next_id == _MAX_CORRELATION_ID else self._next_id + 1

    def _register(self, sent: InFlight) -> InFlight:
        if sent.expects_response:
            self._waiting.append(sent)
        return sent

    def _take_frame(self) -> bytes | None:
        try:
            frame = self._frames.next_frame()
        except DecodeError as exc:
            self._failure = f"unreadable response framing: {exc}"
            raise
        return None if frame is None else bytes(frame)
