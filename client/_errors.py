"""What can go wrong on a client connection, as exception types a caller can catch apart.

The connection errors subclass `ConnectionError` (an `OSError`) and the timeout `TimeoutError`, so
code that already treats a dropped socket as a disconnect treats these the same way.
"""

from __future__ import annotations


class ClientError(Exception):
    """Anything kipwire.client raises about the conversation itself (not about bad arguments)."""


class ConnectionClosedError(ClientError, ConnectionError):
    """The peer closed the connection, or this side did, while a request needed it."""


class CorrelationIdMismatchError(ClientError, ConnectionError):
    """A response carried another correlation id than the oldest request awaiting one.

    Kafka answers the requests of one connection in order, so the stream can no longer be trusted:
    the connection refuses every later request.
    """

    def __init__(self, expected: int, received: int) -> None:
        super().__init__(
            f"the response carries correlation id {received}, "
            f"but the oldest request awaiting an answer is {expected}"
        )
        self.expected = expected
        self.received = received


class RequestTimeoutError(ClientError, TimeoutError):
    """No response arrived within the connection's timeout; that request is abandoned."""


class NoCommonVersionError(ClientError):
    """The peer serves no version of an API that kipwire's codec can also speak."""
