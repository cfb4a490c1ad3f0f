"""Classic groups: KIP-394 member ids, generations, leader assignment, rebalance on leave."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kipwire.codec import ErrorCode
from kipwire.mockbroker.coordinators.groups import GroupCoordinator, GroupState

PROTOCOLS = [("range", b"meta")]


async def _join(groups: GroupCoordinator, member_id: str = "", timeout_ms: int = 3000):
    return await groups.join(
        "g", member_id, None, "client", "consumer", PROTOCOLS, 10_000, timeout_ms, True
    )


@pytest.mark.trio
async def test_member_id_required_then_a_one_member_generation():
    groups = GroupCoordinator()
    first = await _join(groups)
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("client-")
    joined = await _join(groups, first.member_id)
    assert (joined.error, joined.generation, joined.leader) == (0, 1, first.member_id)
    assert joined.members == [(first.member_id, None, b"meta")]
    code, assignment, protocol = await groups.sync("g", 1, first.member_id, {first.member_id: b"a"})
    assert (code, assignment, protocol) == (0, b"a", "range")
    assert groups.group("g").state is GroupState.STABLE


@pytest.mark.trio
async def test_unknown_member_id_is_refused():
    groups = GroupCoordinator()
    assert (await _join(groups, "nobody")).error == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.trio
async def test_second_member_triggers_a_rebalance_and_followers_get_their_assignment():
    groups = GroupCoordinator()
    a = (await _join(groups)).member_id
    await _join(groups, a)
    await groups.sync("g", 1, a, {a: b"all"})
    b = (await _join(groups)).member_id
    results = {}

    async def join_as(member: str) -> None:
        results[member] = await _join(groups, member)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(join_as, b)
            await trio.testing.wait_all_tasks_blocked()
            # the existing member learns of the rebalance from its heartbeat, then rejoins
            assert groups.heartbeat("g", 1, a) == ErrorCode.REBALANCE_IN_PROGRESS
            nursery.start_soon(join_as, a)
    assert results[a].generation == results[b].generation == 2
    assert results[a].leader == a
    assert len(results[a].members) == 2 and results[b].members == []
    synced = {}

    async def sync_as(member: str, assignments: dict) -> None:
        synced[member] = await groups.sync("g", 2, member, assignments)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sync_as, b, {})
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(sync_as, a, {a: b"p0", b: b"p1"})
    assert synced[b][:2] == (0, b"p1")
    assert synced[a][:2] == (0, b"p0")
    assert groups.heartbeat("g", 1, a) == ErrorCode.ILLEGAL_GENERATION


@pytest.mark.trio
async def test_leave_rebalances_the_rest_and_a_silent_member_is_dropped():
    groups = GroupCoordinator()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(groups.run_timers)
            a = (await _join(groups, timeout_ms=200)).member_id
            await _join(groups, a, 200)
            await groups.sync("g", 1, a, {})
            b = (await _join(groups, timeout_ms=200)).member_id
            results = {}

            async def join_as(member: str) -> None:
                results[member] = await _join(groups, member, 200)

            async with trio.open_nursery() as joins:
                # b first: its arrival starts the rebalance that a then rejoins
                joins.start_soon(join_as, b)
                await trio.testing.wait_all_tasks_blocked()
                joins.start_soon(join_as, a)
            assert results[a].generation == results[b].generation == 2
            assert groups.leave("g", a) == 0
            assert groups.group("g").state is GroupState.PREPARING_REBALANCE
            result = await _join(groups, b, 200)
            assert (result.error, result.leader, result.generation) == (0, b, 3)
            # b never syncs nor heartbeats: its session runs out and the group empties
            member = groups.group("g").members[b]
            member.deadline = trio.current_time() + 0.05
            groups.heartbeat("g", 3, "nobody")  # any call; the timers wake on their own
            while groups.group("g").members:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert groups.group("g").state is GroupState.EMPTY


@pytest.mark.trio
async def test_offset_commit_rules():
    groups = GroupCoordinator()
    assert groups.check_commit("g", -1, "")[0] == 0  # a simple commit into an empty group
    a = (await _join(groups)).member_id
    await _join(groups, a)
    assert groups.check_commit("g", -1, "")[0] == ErrorCode.UNKNOWN_MEMBER_ID
    assert groups.check_commit("g", 1, a)[0] == ErrorCode.REBALANCE_IN_PROGRESS
    await groups.sync("g", 1, a, {})
    assert groups.check_commit("g", 1, a)[0] == 0
    assert groups.check_commit("g", 0, a)[0] == ErrorCode.ILLEGAL_GENERATION


@pytest.mark.trio
async def test_initial_rebalance_delay_gathers_early_joiners_into_one_generation():
    groups = GroupCoordinator(initial_rebalance_delay_ms=200)
    ids = [(await _join(groups)).member_id for _ in range(2)]
    results = {}

    async def join_as(member: str) -> None:
        results[member] = await _join(groups, member)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(groups.run_timers)
            start = trio.current_time()
            async with trio.open_nursery() as joins:
                joins.start_soon(join_as, ids[0])
                await trio.sleep(0.05)
                joins.start_soon(join_as, ids[1])
            waited = trio.current_time() - start
            nursery.cancel_scope.cancel()
    assert {r.generation for r in results.values()} == {1}
    assert len(results[results[ids[0]].leader].members) == 2
    assert waited >= 0.2
