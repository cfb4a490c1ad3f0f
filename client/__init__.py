"""kipwire's Kafka client connection: one request/response conversation with a broker or
controller, blocking (`Connection`, over a socket) or trio (`TrioConnection`, over a trio stream).

Both share one sans-I/O core (`ConnectionCore`): correlation ids, the request header version each
API version takes, answers matched to their requests in order (a Produce with acks=0 has none),
decoding with the request's API key and version, and ApiVersions negotiation (`PeerVersions`).
A closed connection, an answer out of step and a wait past the timeout each raise their own error.

    with Connection("127.0.0.1:9092") as conn:
        conn.negotiate_versions()
        version = conn.versions.highest(ApiKey.METADATA)
        brokers = conn.call(ApiKey.METADATA, version, {"topics": []})["brokers"]

It speaks only what `kipwire.codec` encodes: no cluster discovery, retries or SASL.
"""

from ._blocking import Connection, split_address
from ._core import ConnectionCore, InFlight, Reply
from ._errors import (
    ClientError,
    ConnectionClosedError,
    CorrelationIdMismatchError,
    NoCommonVersionError,
    RequestTimeoutError,
)
from ._trio import TrioConnection
from ._versions import PeerVersions, api_versions_request, retry_version

__all__ = [
    "ClientError",
    "Connection",
    "ConnectionClosedError",
    "ConnectionCore",
    "CorrelationIdMismatchError",
    "InFlight",
    "NoCommonVersionError",
    "PeerVersions",
    "Reply",
    "RequestTimeoutError",
    "TrioConnection",
    "api_versions_request",
    "retry_version",
    "split_address",
]
