"""The capture pipeline's compiled hot loops (`reading.compiled`, C), when they are built.

`NATIVE` is that module, set up, or None: not built (no C compiler at install), or
`KIPWIRE_PURE_PYTHON=1` keeps the Python path, as it does for the codec. Each of its functions
stands in for Python code beside its C file, which stays the reference: `reading/walk.c` for
`reading.walk`, `reading/reassembly.c` for `reassembly._assemble_half` and the reassembler's
segment loops, `decoding/framing.c` for `framing.split_frames`' frame loop, `engines/fragments.c`
for `fragments.fragment_groups`' loop, `decoding/rows.c` for `decoding.pairing`'s loops,
`engines/columns.c` for `engines.schema.to_table`; its `Columns` (`engines/columns_type.c`)
holds a table's rows as columns where lists of row dicts are the reference. The reading stage
holds it, the first stage, so every stage may use it. Standard library only.
"""

from __future__ import annotations

import os
from types import ModuleType

from .packets import TcpSegment

__all__ = ["NATIVE"]


def _load() -> ModuleType | None:
    if os.environ.get("KIPWIRE_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import compiled
    except ImportError:
        return None
    compiled.setup(TcpSegment)
    return compiled


#: The compiled module, or None.
NATIVE = _load()
