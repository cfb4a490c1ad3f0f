"""The trio connection against a mock cluster's broker and scripted fake peers."""

from __future__ import annotations

import pytest
import trio
from client_peers import answer, fake_peer, hold_first_answer

from kipwire.client import (
    ConnectionClosedError,
    CorrelationIdMismatchError,
    RequestTimeoutError,
    TrioConnection,
)
from kipwire.codec import ApiKey, Request

METADATA_VERSION = 12
METADATA = {"topics": []}


@pytest.mark.trio
async def test_negotiate_then_call(broker):
    async with await TrioConnection.connect(broker, timeout=10) as conn:
        versions = await conn.negotiate_versions()
        version = versions.highest(ApiKey.METADATA)
        body = await conn.call(ApiKey.METADATA, version, METADATA)
    assert len(body["brokers"]) == 1
    assert conn.versions is versions


@pytest.mark.trio
async def test_concurrent_calls_take_turns_and_each_gets_its_own_answer(broker):
    answered = []
    async with await TrioConnection.connect(broker, timeout=10) as conn:

        async def ask() -> None:
            response = await conn.request(ApiKey.METADATA, METADATA_VERSION, METADATA)
            answered.append(response.correlation_id)

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(ask)
    assert sorted(answered) == list(range(1, 11))


@pytest.mark.trio
async def test_pipelined_sends_are_received_in_order(broker):
    async with await TrioConnection.connect(broker) as conn:
        sent = [await conn.send(ApiKey.METADATA, METADATA_VERSION, METADATA) for _ in range(3)]
        got = [(await conn.receive()).request for _ in sent]
    assert got == sent


@pytest.mark.trio
async def test_a_broker_that_closes_the_connection_is_a_clear_error(broker):
    async with await TrioConnection.connect(broker, timeout=10) as conn:
        with pytest.raises(ConnectionClosedError, match="SASL_HANDSHAKE") as caught:
            await conn.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        # an OSError, as the mock's own channels treat a dropped stream
        assert isinstance(caught.value, OSError)


@pytest.mark.trio
async def test_a_closed_connection_refuses_requests(broker):
    conn = await TrioConnection.connect(broker)
    await conn.aclose()
    with pytest.raises(ConnectionClosedError, match="closed by this side"):
        await conn.call(ApiKey.METADATA, METADATA_VERSION, METADATA)


@pytest.mark.trio
async def test_an_answer_out_of_step_is_refused():
    def out_of_step(request: Request, seen: list[Request]) -> bytes:
        return answer(request, request.correlation_id + 7)

    with fake_peer(out_of_step) as address:
        async with await TrioConnection.connect(address, timeout=5) as conn:
            with pytest.raises(CorrelationIdMismatchError, match="carries correlation id 8"):
                await conn.call(ApiKey.METADATA, METADATA_VERSION, METADATA)
            with pytest.raises(ConnectionClosedError, match="cannot be used"):
                await conn.call(ApiKey.METADATA, METADATA_VERSION, METADATA)


@pytest.mark.trio
async def test_a_late_answer_times_out_and_is_dropped_when_it_comes():
    with fake_peer(hold_first_answer) as address:
        async with await TrioConnection.connect(address, timeout=0.2) as conn:
            with pytest.raises(RequestTimeoutError):
                await conn.call(ApiKey.METADATA, METADATA_VERSION, METADATA)
            conn.timeout = 5
            response = await conn.request(ApiKey.FIND_COORDINATOR, 3, {"key": "g"})
    assert (response.api_key, response.correlation_id) == (ApiKey.FIND_COORDINATOR, 2)


@pytest.mark.trio
async def test_a_call_cancelled_by_its_caller_is_abandoned_and_the_connection_stays_usable():
    with fake_peer(hold_first_answer) as address:
        async with await TrioConnection.connect(address) as conn:
            with trio.move_on_after(0.2) as scope:
                await conn.call(ApiKey.METADATA, METADATA_VERSION, METADATA)
            assert scope.cancelled_caught
            response = await conn.request(ApiKey.FIND_COORDINATOR, 3, {"key": "g"})
    assert response.correlation_id == 2
