"""Client quotas against real Kafka 4.4.0: `kafka-configs` (ConfigCommand) sets and describes a
client's quotas on the mock, and the same AlterClientQuotas and DescribeClientQuotas requests
get the same answers from both (entries sorted: Kafka lists them from a hash map)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_dist import KafkaDist
from kafka_harness import KafkaCluster
from realkafka_wire import call

from kipwire.codec import ApiKey
from kipwire.mockbroker import MockCluster

CONFIGS = "org.apache.kafka.tools.ConfigCommand"
TIMEOUT = 120
#: Entity names of this module's own, so a shared real cluster's other tests meet none of them;
#: values so large that nothing those tests do is throttled by the default entities.
HUGE = 1e12


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as running:
        yield running


def _tool(dist: KafkaDist, *args: str) -> str:
    return dist.tool_output(CONFIGS, *args, timeout=TIMEOUT)


def test_kafka_configs_sets_and_describes_client_quotas(
    kafka_dist: KafkaDist, mock: MockCluster
) -> None:
    server = ("--bootstrap-server", mock.bootstrap_servers)
    _tool(
        kafka_dist,
        *server,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "tool-client",
        "--add-config",
        "producer_byte_rate=1048576,consumer_byte_rate=2097152",
    )
    out = _tool(
        kafka_dist,
        *server,
        "--describe",
        "--entity-type",
        "clients",
        "--entity-name",
        "tool-client",
    )
    assert "tool-client" in out
    assert "producer_byte_rate=1048576.0" in out and "consumer_byte_rate=2097152.0" in out
    _tool(
        kafka_dist,
        *server,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "tool-client",
        "--delete-config",
        "consumer_byte_rate",
    )
    out = _tool(
        kafka_dist,
        *server,
        "--describe",
        "--entity-type",
        "clients",
        "--entity-name",
        "tool-client",
    )
    assert "producer_byte_rate=1048576.0" in out and "consumer_byte_rate" not in out


def _entity(*pairs: tuple[str, str | None]) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def _entry(entity: list[dict], *ops: tuple[str, float | None]) -> dict:
    return {
        "entity": entity,
        "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops],
    }


ALTERS = [
    _entry(
        _entity(("user", "diff-alice"), ("client-id", "diff-app")), ("producer_byte_rate", 1024)
    ),
    _entry(_entity(("user", "diff-alice")), ("consumer_byte_rate", 4096)),
    _entry(_entity(("user", "diff-alice"), ("client-id", None)), ("request_percentage", 80.5)),
    _entry(_entity(("client-id", "diff-app")), ("producer_byte_rate", 2048)),
    _entry(_entity(("ip", "10.11.12.13")), ("connection_creation_rate", 5)),
    _entry(_entity(("user", None)), ("controller_mutation_rate", HUGE)),
    # refused: unknown key, negative, fractional byte rate, ip mixed, ip's keys only, unknown
    # type, empty
    _entry(_entity(("client-id", "diff-key")), ("no_such_quota", 1)),
    _entry(_entity(("client-id", "diff-negative")), ("producer_byte_rate", -5)),
    _entry(_entity(("client-id", "diff-fraction")), ("consumer_byte_rate", 1.5)),
    _entry(_entity(("ip", "10.11.12.13"), ("user", "diff-alice")), ("producer_byte_rate", 1)),
    _entry(_entity(("ip", "10.11.12.14")), ("producer_byte_rate", 1)),
    _entry(_entity(("group", "g")), ("producer_byte_rate", 1)),
    _entry([], ("producer_byte_rate", 1)),
    # an entity named again: its first entry applied, the answer "Ignoring duplicate entity"
    _entry(_entity(("client-id", "diff-app")), ("consumer_byte_rate", 1)),
    # a key twice: the entity is not applied, and answered as a duplicate entity
    _entry(
        _entity(("client-id", "diff-twice")), ("producer_byte_rate", 1), ("producer_byte_rate", 2)
    ),
]


def _filter(*components: tuple[str, int, str | None], strict: bool = False) -> dict:
    return {
        "components": [{"entity_type": t, "match_type": m, "match": x} for t, m, x in components],
        "strict": strict,
    }


EXACT, DEFAULT, SPECIFIED = 0, 1, 2
DESCRIBES = [
    _filter(("user", EXACT, "diff-alice")),
    _filter(("user", EXACT, "diff-alice"), strict=True),
    _filter(("user", EXACT, "diff-alice"), ("client-id", SPECIFIED, None)),
    _filter(("user", EXACT, "diff-alice"), ("client-id", DEFAULT, None), strict=True),
    _filter(("client-id", EXACT, "diff-app"), strict=True),
    _filter(("client-id", EXACT, "diff-app")),
    _filter(("ip", EXACT, "10.11.12.13")),
    _filter(("user", DEFAULT, None), strict=True),
    # refused filters
    _filter(("user", EXACT, None)),
    _filter(("user", DEFAULT, "x")),
    _filter(("user", SPECIFIED, "x")),
    _filter(("user", SPECIFIED, None), ("user", SPECIFIED, None)),
    _filter(("ip", SPECIFIED, None), ("user", SPECIFIED, None)),
    _filter(("group", SPECIFIED, None)),
    _filter(("", EXACT, "x")),
]


def _entity_key(entity: Any) -> list[tuple[str, str]]:
    return sorted((e.entity_type, e.entity_name or "") for e in entity)


def _caught_up(port: int) -> None:
    """Wait (bounded) until the broker's image has the quotas just altered: AlterClientQuotas
    answers once the controller committed them, before every broker replayed them."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if call(port, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, DESCRIBES[0]).entries:
            return
        time.sleep(0.05)
    raise AssertionError("the altered quotas never showed in DescribeClientQuotas")


def _answers(port: int) -> dict[str, Any]:
    altered = call(port, ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": ALTERS, "validate_only": False})
    _caught_up(port)
    described = []
    for body in DESCRIBES:
        answer = call(port, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, body)
        entries = None
        if answer.entries is not None:
            entries = sorted(
                (
                    _entity_key(x.entity),
                    sorted((v.key, v.value) for v in x["values"]),
                )
                for x in answer.entries
            )
        described.append((answer.error_code, entries))
    return {
        # Kafka answers from a hash map: compared by entity
        "alter": sorted(
            (_entity_key(e.entity), e.error_code, e.error_message) for e in altered.entries
        ),
        "describe": described,
    }


def _undo(port: int) -> None:
    undo = [
        {**e, "ops": [{**op, "remove": True} for op in e["ops"]]}
        for e in ALTERS
        if e["entity"] and e["entity"][0]["entity_type"] != "group"
    ]
    call(port, ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": undo, "validate_only": False})


def test_client_quota_answers_alike(kafka_single: KafkaCluster, mock: MockCluster) -> None:
    real_port = kafka_single.nodes[0].broker_port
    try:
        real = _answers(real_port)
    finally:
        _undo(real_port)
    ours = _answers(int(mock.bootstrap_servers.rsplit(":", 1)[1]))
    assert ours["alter"] == real["alter"]
    assert ours["describe"] == real["describe"]
    # the cases above mean something: some refused, some matched
    assert any(code for _, code, _ in real["alter"]) and any(e for _, e in real["describe"])
