"""The two exceptions every codec path raises: decoding and encoding failures."""

from __future__ import annotations

from typing import Any


class DecodeError(ValueError):
    """Bytes that do not decode: says where (byte offset) and what (field path)."""

    #: The Kafka error code a broker answers with (INVALID_REQUEST); subclasses refine it.
    error_code = 42

    #: The request header (a `codec.framing.RequestHeader`) when the failure came after it
    #: decoded, so a broker can answer INVALID_REQUEST to the right correlation id.
    header: Any = None

    def __init__(self, message: str, *, offset: int | None = None, path: str = "") -> None:
        self.reason = message
        self.offset = offset
        self.path = path
        where = []
        if path:
            where.append(f"field {path}")
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class EncodeError(ValueError):
    """A value that cannot be encoded in the requested version: says which field."""

    def __init__(self, message: str, *, path: str = "") -> None:
        self.reason = message
        self.path = path
        super().__init__(f"{message} (field {path})" if path else message)


class FrameTooLargeError(DecodeError):
    """A frame whose size prefix exceeds the maximum frame size: refused before its body."""

    def __init__(self, message: str, *, offset: int | None = None, size: int, limit: int) -> None:
        super().__init__(message, offset=offset)
        self.size = size
        self.limit = limit


class UnknownMessageError(KeyError):
    """A message name the codec does not know (a KeyError, for callers that catch those)."""

    def __str__(self) -> str:
        # KeyError's own str() is the repr of its argument: quotes around a sentence.
        return str(self.args[0]) if self.args else ""


class UnknownApiError(DecodeError):
    """A request or response for an API key this codec does not know."""


class UnsupportedVersionError(DecodeError):
    """A message version outside the versions the schema defines."""

    #: UNSUPPORTED_VERSION: Kafka answers ApiVersions with it in a v0 body (KIP-511).
    error_code = 35
