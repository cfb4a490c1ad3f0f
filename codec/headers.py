"""Request and response framing: which header version applies, and header + body en/decoding."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .errors import DecodeError, EncodeError, UnknownApiError, UnsupportedVersionError
from .messages import APIS, message, registry
from .messages._enums import ApiKey, ErrorCode
from .registry import MessageCodec

# Plain ints: compared on every frame, and an enum member lookup costs five times an int compare.
_API_VERSIONS = int(ApiKey.API_VERSIONS)
_CONTROLLED_SHUTDOWN = int(ApiKey.CONTROLLED_SHUTDOWN)
_UNSUPPORTED_VERSION = int(ErrorCode.UNSUPPORTED_VERSION)
_KEY_VERSION = struct.Struct(">hh").unpack_from
_RESPONSE_ERROR = struct.Struct(">h").unpack_from


class RequestHeader(NamedTuple):
    """A request's header fields, and how many bytes the header takes in the frame."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_size: int


@dataclass(slots=True)
class Request:
    """A decoded request: header fields, the header itself and the body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: Any
    body: Any
    header_version: int
    #: Bytes after the body, counted (not decoded) when decoding with trailing="ignore".
    trailing_bytes: int = 0


@dataclass(slots=True)
class Response:
    """A decoded response: its correlation id, header and body."""

    api_key: int
    api_version: int
    correlation_id: int
    header: Any
    body: Any
    header_version: int
    #: Bytes after the body, counted (not decoded) when decoding with trailing="ignore".
    trailing_bytes: int = 0


def _api(api_key: int, what: str) -> tuple[str, str, str]:
    entry = APIS.get(api_key)
    if entry is None or entry[1 if what == "request" else 2] is None:
        raise UnknownApiError(f"unknown API key {api_key}", offset=0, path="request_api_key")
    return entry


def _flexible(name: str, api_version: int) -> bool:
    flexible_from = registry.module(name).FLEXIBLE_FROM
    return flexible_from is not None and api_version >= flexible_from


def request_header_version(api_key: int, api_version: int) -> int:
    """Request header v2 for flexible versions, else v1; ControlledShutdown v0 uses v0."""
    if api_key == _CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if _flexible(_api(api_key, "request")[1], api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """Response header v1 for flexible versions, else v0; ApiVersions responses always use v0."""
    if api_key == _API_VERSIONS:
        return 0
    return 1 if _flexible(_api(api_key, "response")[2], api_version) else 0


class _Plan(NamedTuple):
    """Everything needed to en/decode one (API key, version) frame, looked up once."""

    name: str
    body: MessageCodec
    header: MessageCodec
    header_version: int


_REQUEST_PLANS: dict[tuple[int, int], _Plan] = {}
_RESPONSE_PLANS: dict[tuple[int, int], _Plan] = {}


def _request_plan(api_key: int, api_version: int) -> _Plan:
    plan = _REQUEST_PLANS.get((api_key, api_version))
    if plan is None:
        name = _api(api_key, "request")[1]
        body = message(name, api_version)
        hv = request_header_version(api_key, api_version)
        plan = _REQUEST_PLANS[api_key, api_version] = _Plan(
            name, body, message("RequestHeader", hv), hv
        )
    return plan


def _response_plan(api_key: int, api_version: int) -> _Plan:
    plan = _RESPONSE_PLANS.get((api_key, api_version))
    if plan is None:
        name = _api(api_key, "response")[2]
        body = message(name, api_version)
        hv = response_header_version(api_key, api_version)
        plan = _RESPONSE_PLANS[api_key, api_version] = _Plan(
            name, body, message("ResponseHeader", hv), hv
        )
    return plan


def body_parser(
    api_key: int, api_version: int, *, request: bool
) -> tuple[Callable[[Any, int], tuple[Any, int]], int] | None:
    """A frame's compiled body parser, (data, offset) -> (body, end), and its header version.

    None when the compiled codec does not parse that body; UnknownApiError and
    UnsupportedVersionError as decoding the frame raises them. For callers that read the header
    themselves (the capture decode's one C call per frame).
    """
    plan = (_request_plan if request else _response_plan)(api_key, api_version)
    if not plan.body.compiled:
        return None
    return plan.body._p, plan.header_version


def encode_request(
    api_key: int,
    api_version: int,
    body: dict,
    *,
    correlation_id: int = 0,
    client_id: str | None = None,
) -> bytes:
    """Header + body of a request, without the 4-byte size prefix."""
    try:
        plan = _request_plan(api_key, api_version)
    except (UnknownApiError, UnsupportedVersionError) as e:
        raise EncodeError(e.reason) from None
    header = {
        "request_api_key": api_key,
        "request_api_version": api_version,
        "correlation_id": correlation_id,
    }
    if plan.header_version >= 1:
        header["client_id"] = client_id
    w = bytearray()
    plan.header.build_into(header, w)
    plan.body.build_into(body, w)
    return bytes(w)


_TRAILING = ("raise", "ignore")
_FRAME_TYPES = (bytes, memoryview, bytearray)  # checked in full (subclasses) when not exact


def _check_input(data: Any, trailing: str, what: str) -> None:
    """A clear TypeError/ValueError for arguments that are not a frame and a trailing policy."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(
            f"{what}() decodes a frame given as bytes, bytearray or memoryview, "
            f"not {type(data).__name__}"
        )
    if trailing not in _TRAILING:
        raise ValueError(f"trailing must be 'raise' or 'ignore', not {trailing!r}")


def _header_only(data: Any, api_key: int, api_version: int) -> RequestHeader | None:
    """The header of a request whose version the codec lacks, when it decodes: the broker
    answers UNSUPPORTED_VERSION to its correlation id (for ApiVersions, KIP-511's v0 reply)."""
    try:
        hv = request_header_version(api_key, api_version)
        header, pos = message("RequestHeader", hv).parse_at(data, 0)
    except DecodeError:
        return None
    return RequestHeader(
        api_key, api_version, header["correlation_id"], header.get("client_id"), pos
    )


def decode_request(data: bytes | bytearray | memoryview, *, trailing: str = "raise") -> Request:
    """Decode a request frame (header + body, no size prefix).

    Bytes after the body are a DecodeError, or with trailing="ignore" (Kafka's own behaviour)
    counted in `Request.trailing_bytes`. A DecodeError from the body carries the decoded header
    in `err.header`.
    """
    if type(data) not in _FRAME_TYPES or trailing not in _TRAILING:
        _check_input(data, trailing, "decode_request")
    try:
        api_key, api_version = _KEY_VERSION(data, 0)
    except struct.error:
        raise DecodeError(f"a request header needs 8 bytes, got {len(data)}", offset=0) from None
    try:
        plan = _request_plan(api_key, api_version)
    except UnsupportedVersionError as e:
        err = UnsupportedVersionError(e.reason, offset=2, path="request_api_version")
        err.header = _header_only(data, api_key, api_version)
        raise err from None
    header, pos = plan.header.parse_at(data, 0)
    try:
        body, end = plan.body.parse_at(data, pos)
        if end != len(data) and trailing == "raise":
            raise DecodeError(f"{len(data) - end} bytes follow the {plan.name} body", offset=end)
    except DecodeError as e:
        e.header = RequestHeader(
            api_key, api_version, header["correlation_id"], header.get("client_id"), pos
        )
        raise
    return Request(
        api_key,
        api_version,
        header["correlation_id"],
        header.get("client_id"),
        header,
        body,
        plan.header_version,
        len(data) - end,
    )


def encode_response(api_key: int, api_version: int, body: dict, *, correlation_id: int) -> bytes:
    """Header + body of a response, without the 4-byte size prefix."""
    try:
        plan = _response_plan(api_key, api_version)
    except (UnknownApiError, UnsupportedVersionError) as e:
        raise EncodeError(e.reason) from None
    w = bytearray()
    plan.header.build_into({"correlation_id": correlation_id}, w)
    plan.body.build_into(body, w)
    return bytes(w)


def decode_response(
    data: bytes | bytearray | memoryview,
    api_key: int,
    api_version: int,
    *,
    trailing: str = "raise",
) -> Response:
    """Decode a response frame given the API key and version of its request.

    Bytes after the body are a DecodeError, or with trailing="ignore" counted in
    `Response.trailing_bytes`. `peek_error_code` reads the error code of a response that does
    not decode.
    """
    if type(data) not in _FRAME_TYPES or trailing not in _TRAILING:
        _check_input(data, trailing, "decode_response")
    versions = [api_version]
    try:
        plan = _response_plan(api_key, api_version)
    except UnsupportedVersionError:
        if api_key != _API_VERSIONS:
            raise
        # KIP-511: a version newer than the schemas can only be answered in v0.
        plan, versions = _response_plan(api_key, 0), [0]
    header, pos = plan.header.parse_at(data, 0)
    if api_key == _API_VERSIONS and versions[0] > 0:
        # KIP-511: a broker that does not support the requested version answers in v0.
        try:
            if _RESPONSE_ERROR(data, pos)[0] == _UNSUPPORTED_VERSION:
                versions = [0, api_version]
        except struct.error:
            pass
    failure: DecodeError | None = None
    for version in versions:
        try:
            codec = plan.body if version == api_version else message(plan.name, version)
            body, end = codec.parse_at(data, pos)
            if end != len(data) and trailing == "raise":
                raise DecodeError(
                    f"{len(data) - end} bytes follow the {plan.name} body", offset=end
                )
        except DecodeError as e:
            failure = failure or e
            continue
        return Response(
            api_key,
            version,
            header["correlation_id"],
            header,
            body,
            plan.header_version,
            len(data) - end,
        )
    assert failure is not None
    raise failure
