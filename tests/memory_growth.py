"""How much memory a piece of work leaves behind, for the reference-leak tests."""

import gc
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def blocks_left_by(work: Callable[[], T]) -> tuple[T, int]:
    """`work()`'s result and how many more memory blocks Python holds after it, collected."""
    gc.collect()
    before = sys.getallocatedblocks()
    result = work()
    gc.collect()
    return result, sys.getallocatedblocks() - before
