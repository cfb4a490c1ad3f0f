"""The C walk of a decoded body (`codec/_compiled/jsontext.c`), when the compiled codec is active.

`load()` gives that module, set up with the types and functions it needs, or None: the compiled
codec is not built, is stale, or `KIPWIRE_PURE_PYTHON=1` keeps the Python path. Its functions
return None for a body `bodies.py`'s Python code is to answer for, which then gives the value or
raises the error; its `decode_frame` returns False for a frame `pairing.py` is to decode.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any
from uuid import UUID

from construct import Container, ListContainer
from crc32c import crc32c

from kipwire import codec
from kipwire.codec import ApiKey
from kipwire.codec.headers import body_parser
from kipwire.codec.records import expand_records


def load(error_text: Callable[[Exception], str]) -> ModuleType | None:
    """The C walk, writing a failed records blob's error as `error_text` does; or None."""
    if not codec.compiled:
        return None
    try:
        from kipwire.codec._compiled import jsontext
    except ImportError:
        return None
    jsontext.setup(Container, ListContainer, UUID, expand_records, error_text, crc32c)
    jsontext.setup_frames(frame_plan)
    return jsontext


def frame_plan(api_key: int, api_version: int, request: bool) -> tuple[Any, int] | None:
    """What `decode_frame` needs to decode a frame whole (its body parser and header version),
    or None for the frames `pairing._decode_into` treats apart: an API key the codec does not
    know, a project extension, SaslAuthenticate requests (the token's redaction), ApiVersions
    responses (the v0 error answer), a version the codec lacks."""
    if api_key not in codec.APIS or codec.is_extension(api_key, api_version):
        return None
    if api_key == (ApiKey.SASL_AUTHENTICATE if request else ApiKey.API_VERSIONS):
        return None
    try:
        return body_parser(api_key, api_version, request=request)
    except codec.DecodeError:
        return None
