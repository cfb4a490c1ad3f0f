"""The C walk of a decoded body (`codec/_compiled/jsontext.c`), when the compiled codec is active.

`load()` gives that module, set up with the types and functions it needs, or None: the compiled
codec is not built, is stale, or `KIPWIRE_PURE_PYTHON=1` keeps the Python path. Its functions
return None for a body `bodies.py`'s Python code is to answer for, which then gives the value or
raises the error.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from uuid import UUID

from construct import Container, ListContainer
from crc32c import crc32c

from kipwire import codec
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
    return jsontext
