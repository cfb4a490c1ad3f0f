"""Warm-up tasks (KIP-1071, KIP-441): none by default, as Kafka 4.4.0 assigns none (its
AssignmentRefiner#refine returns the target unchanged); under the mock's extension a stateful
task moving to a member without its state warms up there first, its owner keeping it."""

from __future__ import annotations

import trio
import trio.testing
from test_streams_coordinator import WORD_COUNT

from kipwire.mockbroker.coordinators.streams_assignor import plan, task_lags, warm_ups
from kipwire.mockbroker.coordinators.streams_groups import (
    StreamsCoordinator,
    StreamsMember,
    WarmupSettings,
)

SESSION_MS = 1000
STATEFUL = {"1"}  # the word count's counting subtopology has a changelog


def test_task_lags_use_the_highest_end_offset_reported() -> None:
    lags = task_lags(
        {"a": {("1", 0): 90}, "b": {("1", 0): 40, ("1", 1): 5}},
        {"a": {("1", 0): 100}, "b": {("1", 0): 95}},
    )
    # a task nobody reports an end offset for lags 0 (nothing known to catch up on)
    assert lags == {"a": {("1", 0): 10}, "b": {("1", 0): 60, ("1", 1): 0}}


def test_a_moved_stateful_task_warms_up_while_its_owner_keeps_it() -> None:
    target = {"a": {"0": [0], "1": [0]}, "b": {"0": [1], "1": [1]}}
    before = {"a": {"0": [0, 1], "1": [0, 1]}, "b": {}}
    active, warm = warm_ups(target, before, {}, STATEFUL, warmups=2, acceptable_lag=100)
    # the stateless task 0_1 moves at once; the stateful 1_1 stays with a, warming up on b
    assert active == {"a": {"0": [0], "1": [0, 1]}, "b": {"0": [1]}}
    assert warm == {"a": {}, "b": {"1": [1]}}


def test_a_caught_up_member_takes_the_task_at_once() -> None:
    target = {"a": {"1": [0]}, "b": {"1": [1]}}
    before = {"a": {"1": [0, 1]}, "b": {}}
    lags = {"b": {("1", 1): 100}}
    active, warm = warm_ups(target, before, lags, STATEFUL, warmups=2, acceptable_lag=100)
    assert (active, warm) == (target, {"a": {}, "b": {}})
    behind = {"b": {("1", 1): 101}}
    active, warm = warm_ups(target, before, behind, STATEFUL, warmups=2, acceptable_lag=100)
    assert (active["a"], warm["b"]) == ({"1": [0, 1]}, {"1": [1]})


def test_past_the_warmup_budget_tasks_stay_and_zero_turns_the_rule_off() -> None:
    target = {"a": {"1": [0]}, "b": {"1": [1, 2]}}
    before = {"a": {"1": [0, 1, 2]}, "b": {}}
    active, warm = warm_ups(target, before, {}, STATEFUL, warmups=1, acceptable_lag=0)
    assert active == {"a": {"1": [0, 1, 2]}, "b": {}}
    assert warm == {"a": {}, "b": {"1": [1]}}  # one warm-up; 1_2 waits with its owner
    assert warm_ups(target, before, {}, STATEFUL, warmups=0, acceptable_lag=0) == (
        target,
        {"a": {}, "b": {}},
    )


def _story(warmup: WarmupSettings | None) -> list:
    """a runs every task of the word count; b joins; a reports its changelog offsets, then b
    reports being 20 records behind on task 1_1. What b and a hold after each step."""
    steps = []

    async def story() -> None:
        streams = StreamsCoordinator()
        topology = {"epoch": 1, "subtopologies": WORD_COUNT}
        planned = plan(WORD_COUNT, {"lines": 2})

        def beat(member_id, epoch, owned=None, offsets=(), ends=()):
            def entries(values):
                return [{"subtopology_id": s, "partition": p, "offset": o} for s, p, o in values]

            member = StreamsMember(
                member_id,
                process_id=f"process-{member_id}",
                owned=owned,
                task_offsets=entries(offsets),
                task_end_offsets=entries(ends),
            )
            result = streams.heartbeat(
                "app", member, epoch, topology, planned, SESSION_MS, 0, warmup
            )
            group = streams.group("app")
            steps.append(
                {m.member_id: (m.epoch, m.active, m.warmup) for m in group.members.values()}
            )
            return result

        everything = {"0": [0, 1], "1": [0, 1]}
        assert beat("a", 0).active == everything
        ends = [("1", 0, 500), ("1", 1, 500)]
        beat("b", 0)
        revoked = beat("a", 1, owned=everything, offsets=ends, ends=ends)
        beat("a", revoked.member_epoch, owned=revoked.active or everything, offsets=ends, ends=ends)
        b = streams.group("app").members["b"]
        beat("b", b.epoch, owned=b.active, offsets=[("1", 1, 480)])

    trio.run(story, clock=trio.testing.MockClock(autojump_threshold=0))
    return steps


def test_kafka_4_4_gives_no_warmup_tasks() -> None:
    steps = _story(None)
    # the sticky, balanced split: a keeps subtopology 0, b takes 1 without warming up
    assert steps[-1] == {"a": (2, {"0": [0, 1]}, {}), "b": (2, {"1": [0, 1]}, {})}


def test_the_warmup_extension_in_a_group() -> None:
    steps = _story(WarmupSettings(replicas=2, acceptable_lag=100))
    # b joins: a keeps the stateful tasks b is to take, and b warms them up
    assert steps[1]["b"] == (2, {}, {"1": [0, 1]})
    assert steps[3]["a"] == (2, {"0": [0, 1], "1": [0, 1]}, {})
    # b is within 100 records of 1_1's end: a new epoch moves 1_1 to it (once a lets it go)
    # while 1_0 keeps warming up
    epoch, active, warm = steps[4]["b"]
    assert (epoch, active, warm) == (3, {}, {"1": [0]})
