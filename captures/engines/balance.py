"""Spreading connections over the decode tasks by their size, not by the hash of their key.

A connection is decoded by one task (its segments are reassembled in order, one after another),
so the decode stage can end no sooner than its largest connection, and it ends later when
hashing puts two large connections on one task while another task sits empty: with the eight
long connections of the benchmark capture on eight hashed partitions, one partition gets two or
three of them, and a second task slot shortens the stage little. `plan_tasks` instead packs
connections into tasks largest first (the longest-processing-time rule) and orders the tasks by
size, so the scheduler, which starts tasks in partition order, hands the big ones out first
whatever the number of slots.

Spark places a row by `pmod(murmur3(column), n)`: `salt_for` finds, for each task, a number that
Spark's hash sends to it, so a `repartition(n, "salt")` puts every connection where the plan
says, through the DataFrame API alone (which Spark Connect also has).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence

__all__ = ["MAX_TASKS", "murmur3_long", "plan_tasks", "salts"]

MAX_TASKS = 256  # beyond this many connections, more tasks only add scheduling overhead

_C1, _C2, _MASK = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
_SEED = 42  # the seed of Spark's hash partitioning and of `F.hash`


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix(h1: int, k1: int) -> int:
    k1 = _rotl((k1 * _C1) & _MASK, 15)
    h1 ^= (k1 * _C2) & _MASK
    return (_rotl(h1, 13) * 5 + 0xE6546B64) & _MASK


def murmur3_long(value: int, seed: int = _SEED) -> int:
    """Spark's Murmur3 x86 32-bit hash of a long (as `F.hash` gives it), a signed int."""
    h1 = _mix(_mix(seed, value & _MASK), (value >> 32) & _MASK)
    h1 ^= 8  # the input's length in bytes
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def salts(tasks: int) -> list[int]:
    """For each task index, the smallest long that Spark's hash partitioning sends to it."""
    found: dict[int, int] = {}
    value = 0
    # each candidate lands on a given task with chance 1/tasks: 64x that many finds them all
    # with certainty for any practical count; the bound keeps a broken hash from looping
    while len(found) < tasks and value < 64 * tasks + 4096:
        found.setdefault(murmur3_long(value) % tasks, value)
        value += 1
    if len(found) < tasks:
        raise RuntimeError(f"no salt for {tasks - len(found)} of {tasks} tasks")
    return [found[i] for i in range(tasks)]


def plan_tasks(
    weights: Sequence[tuple[Hashable, int]], max_tasks: int = MAX_TASKS
) -> dict[Hashable, int]:
    """Task index per key: largest first onto the lightest task, task 0 the heaviest."""
    tasks = min(len(weights), max_tasks)
    if tasks == 0:
        return {}
    heap = [(0, i) for i in range(tasks)]
    placed: dict[Hashable, int] = {}
    loads = [0] * tasks
    for key, weight in sorted(weights, key=lambda kw: -kw[1]):
        load, i = heapq.heappop(heap)
        placed[key] = i
        loads[i] = load + weight
        heapq.heappush(heap, (loads[i], i))
    # renumber so task 0 carries the most: the scheduler starts tasks in partition order
    order = sorted(range(tasks), key=lambda i: -loads[i])
    rank = {old: new for new, old in enumerate(order)}
    return {key: rank[i] for key, i in placed.items()}
