"""Full garbage collections paced for a running cluster: while any cluster runs in this process,
Python's generation-2 threshold is raised, and restored when the last one ends.

A cluster of 10,000 partitions holds about a million objects the collector tracks, nearly all of
them living as long as the cluster; each full collection walks all of them (0.25-0.35 s of CPU
on the benchmark machine), and with the default threshold one fell inside a create_topic every
tenth create or so (benchmarks/README.md, "Garbage collection at 10,000 partitions"). Young
garbage is still collected as before (generations 0 and 1 keep their thresholds); only the full
walks become rarer. `gc.freeze()` is not used: it would freeze the test process's own objects
too, and they would never be collected again.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The generation-2 threshold while a cluster runs (CPython's default is 10): a full collection
#: comes at most once per 1,000 generation-1 collections instead of once per 10.
FULL_COLLECTION_THRESHOLD = 1000

_lock = threading.Lock()  # a SyncCluster runs its cluster in a thread of its own
_running = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def paced_full_collections() -> Iterator[None]:
    """Raise the generation-2 threshold while the block runs (nested blocks share one raise)."""
    global _running, _saved
    with _lock:
        if _running == 0:
            _saved = gc.get_threshold()
            first, second, third = _saved
            gc.set_threshold(first, second, max(third, FULL_COLLECTION_THRESHOLD))
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
