"""One request frame in, one response frame out: header peek, body decode, handler, encode."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import trio

from kipwire.codec import APIS, DecodeError, EncodeError, encode_response, message
from kipwire.codec.framing import peek_request_header

from .handlers import HANDLERS, RequestContext
from .handlers.api_versions import unsupported_version_reply

if TYPE_CHECKING:
    from .broker.node import BrokerNode

API_VERSIONS = 18
INVALID_REQUEST = 42
UNKNOWN_SERVER_ERROR = -1
_SIZE = struct.Struct(">i").pack


class CloseConnection(Exception):
    """The request cannot even be answered: Kafka closes that one connection."""


def frame(payload: bytes) -> bytes:
    """A size-prefixed frame."""
    return _SIZE(len(payload)) + payload


async def dispatch(broker: BrokerNode, data: memoryview) -> bytes | None:
    """The size-prefixed response to one request frame, None when none is due (acks=0)."""
    try:
        header = peek_request_header(data)
    except DecodeError as exc:
        raise CloseConnection(f"unreadable request header: {exc}") from None
    key, version, cid = header.api_key, header.api_version, header.correlation_id
    handler = HANDLERS.get(key)
    low, high = (handler.min_version, handler.max_version) if handler else (0, -1)
    name = APIS[key][1]
    if not low <= version <= high:
        # Kafka 4.1 answers only ApiVersions (KIP-511); any other API or version its listener
        # does not serve fails the header check and the connection is closed unanswered
        if key == API_VERSIONS:
            return frame(unsupported_version_reply(cid))
        raise CloseConnection(f"{name} v{version} is not served on a broker listener")
    try:
        codec = message(name, version)
    except DecodeError:
        raise CloseConnection(f"{name} v{version} is not a version the codec knows") from None
    try:
        body, _ = codec.parse_at(data, header.header_size)  # bytes after the body are ignored
    except DecodeError as exc:
        broker.log.info("%s v%d cid %d: malformed body: %s", name, version, cid, exc)
        return _error(key, version, cid, None, INVALID_REQUEST)
    injected = broker.cluster.faults.take_error(key, broker.node_id)
    if injected is not None:
        response = handler.fail(body, injected, version)
    else:
        ctx = RequestContext(broker, key, version, cid, header.client_id)
        response = await handler.handle(ctx, body)
    if broker.latency:
        await trio.sleep(broker.latency)
    broker.log.debug("%s v%d cid %d from %s", name, version, cid, header.client_id)
    if response is None:
        return None
    try:
        return frame(encode_response(key, version, response, correlation_id=cid))
    except EncodeError as exc:
        # a handler bug must not cost the client its connection: answer with the API's error
        broker.log.error("%s v%d: response does not encode: %s", name, version, exc)
        return _error(key, version, cid, body, UNKNOWN_SERVER_ERROR)


def _error(key: int, version: int, cid: int, body: object, code: int) -> bytes:
    handler = HANDLERS.get(key)
    response: dict = {"error_code": code}
    if handler is not None and body is not None:
        response = handler.fail(body, code, version)
    try:
        return frame(encode_response(key, version, response, correlation_id=cid))
    except (EncodeError, KeyError, TypeError, ValueError):
        try:
            return frame(encode_response(key, version, {}, correlation_id=cid))
        except (EncodeError, KeyError, TypeError, ValueError):
            raise CloseConnection(f"no error response for API {key} v{version}") from None
