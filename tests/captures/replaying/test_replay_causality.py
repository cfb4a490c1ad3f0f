"""Causality across connections: a request waits for the answers it could have depended on."""

from __future__ import annotations

import pytest
import trio

from kipwire.captures.replaying.causality import Causality


def test_a_request_needs_the_responses_captured_before_it_was_sent() -> None:
    # produce (sent 10, answered 20), fetch (sent 30): the fetch needs the produce's answer
    c = Causality([("produce", 10, 20), ("fetch", 30, 40), ("early", 5, 50)])
    assert (c.needed("produce"), c.needed("fetch"), c.needed("early")) == (0, 1, 0)
    assert Causality([("no-times", None, None)]).needed("no-times") == 0


@pytest.mark.trio
async def test_the_wait_ends_when_the_dependency_is_answered() -> None:
    c = Causality([("produce", 10, 20), ("fetch", 30, 40)])
    order: list[str] = []

    async def fetch() -> None:
        await c.wait_turn("fetch")
        order.append("fetch")

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetch)
            await trio.testing.wait_all_tasks_blocked()
            assert order == []  # still waiting for the produce
            order.append("produce")
            c.done("produce")
    assert order == ["produce", "fetch"]


@pytest.mark.trio
async def test_the_frontier_waits_for_holes_to_fill() -> None:
    c = Causality([("a", 0, 10), ("b", 1, 20), ("later", 30, None)])
    c.done("b")
    assert c.frontier == 0  # "a" answered earlier in the capture, not yet here
    c.done("a")
    assert c.frontier == 2
    with trio.fail_after(5):
        await c.wait_turn("later")
