"""kipwire's Kafka codec: every request, response and metadata record, every version.

Sans-I/O: bytes in, values out (and back). Message codecs are generated from `jsonschemas/` into
`codec.messages`; `message(name, version)` returns one as a construct. `compiled` is True when
the C decoders generated from the same schemas (`codec._compiled`) are built and in use.
"""

from ._compiled import active as compiled
from .apis import api_versions as api_versions
from .apis import extensions, is_extension
from .errors import (
    DecodeError,
    EncodeError,
    FrameTooLargeError,
    UnknownApiError,
    UnknownMessageError,
    UnsupportedVersionError,
)
from .framing import FrameBuffer, peek_error_code, peek_request_header
from .fromjson import from_json
from .headers import (
    Request,
    RequestHeader,
    Response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from .jsonify import to_json
from .messages import APIS, MESSAGES, RECORDS, message
from .messages._enums import (
    AclOperation,
    AclPermissionType,
    AclResourceType,
    AlterConfigOp,
    ApiKey,
    ConfigResourceType,
    ConfigSource,
    ConfigType,
    CoordinatorType,
    ElectionType,
    ErrorCode,
    IsolationLevel,
    LeaderRecoveryState,
    OffsetSpec,
    PatternType,
    UncleanRecoveryStrategy,
)
from .metadata_records import decode_record, encode_record

__all__ = [
    "APIS",
    "AclOperation",
    "AclPermissionType",
    "AclResourceType",
    "AlterConfigOp",
    "ApiKey",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigType",
    "CoordinatorType",
    "DecodeError",
    "ElectionType",
    "EncodeError",
    "ErrorCode",
    "FrameBuffer",
    "FrameTooLargeError",
    "IsolationLevel",
    "LeaderRecoveryState",
    "MESSAGES",
    "OffsetSpec",
    "PatternType",
    "RECORDS",
    "Request",
    "RequestHeader",
    "Response",
    "UncleanRecoveryStrategy",
    "UnknownApiError",
    "UnknownMessageError",
    "UnsupportedVersionError",
    "compiled",
    "decode_record",
    "decode_request",
    "decode_response",
    "encode_record",
    "encode_request",
    "encode_response",
    "extensions",
    "from_json",
    "is_extension",
    "message",
    "peek_error_code",
    "peek_request_header",
    "request_header_version",
    "response_header_version",
    "to_json",
]
