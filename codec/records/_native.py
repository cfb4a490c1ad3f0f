"""The record loops of the compiled path (`codec/_compiled/records.c`), when it is active.

`NATIVE` is that module, set up to make `Record`s, or None: the compiled codec is not built, is
stale, or `KIPWIRE_PURE_PYTHON=1` keeps the Python path. Its functions return None where
`batch.py`'s Python code is to answer instead, which then gives the value or the error.
"""

from __future__ import annotations

from types import ModuleType

from .. import _compiled
from .model import Record


def _load() -> ModuleType | None:
    if not _compiled.active:
        return None
    try:
        from .._compiled import records
    except ImportError:
        return None
    records.setup(Record)
    return records


NATIVE = _load()
