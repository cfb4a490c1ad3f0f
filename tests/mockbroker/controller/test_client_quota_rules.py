"""AlterClientQuotas on the controller: Kafka's checks (entity types and combinations, known
keys, values above 0, integral byte rates), ClientQuotaRecords only for what changes, and
DescribeClientQuotas' filter over the replayed quotas (exact, default, specified, strict)."""

from __future__ import annotations

from typing import Any

import pytest
from controller_kit import call, new_records, replay_cluster

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker.controller.quota_image import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    describe_client_quotas,
)


def _entity(**names: str | None) -> list[dict]:
    return [{"entity_type": k.replace("_", "-"), "entity_name": v} for k, v in names.items()]


def _op(key: str, value: float = 0.0, remove: bool = False) -> dict:
    return {"key": key, "value": value, "remove": remove}


def _alter(ctl: Any, *entries: tuple[list[dict], list[dict]], validate_only: bool = False) -> list:
    body = {
        "entries": [{"entity": e, "ops": ops} for e, ops in entries],
        "validate_only": validate_only,
    }
    return [
        (x.error_code, x.error_message)
        for x in call(ctl, ApiKey.ALTER_CLIENT_QUOTAS, 1, body).entries
    ]


@pytest.mark.parametrize(
    ("entity", "op", "message"),
    [
        (_entity(client_id="c"), _op("bogus", 1.0), "Invalid configuration key bogus"),
        (_entity(user="u"), _op("producer_byte_rate", -5.0), "must be greater than 0"),
        (_entity(user="u"), _op("producer_byte_rate", 0.0), "must be greater than 0"),
        (_entity(user="u"), _op("consumer_byte_rate", 1.5), "cannot be a fractional value"),
        (_entity(user="u"), _op("request_percentage", float("inf")), "must be a finite number"),
        (_entity(ip="1.2.3.4", user="u"), _op("producer_byte_rate", 1.0), "IP entity"),
        (_entity(ip="1.2.3.4"), _op("producer_byte_rate", 1.0), "Invalid configuration key"),
        (_entity(ip="not an ip"), _op("connection_creation_rate", 1.0), "not a valid IP"),
        (_entity(user="u"), _op("connection_creation_rate", 1.0), "Invalid configuration key"),
        ([{"entity_type": "group", "entity_name": "g"}], _op("producer_byte_rate", 1.0), "type"),
        ([], _op("producer_byte_rate", 1.0), "Invalid empty client quota entity"),
    ],
)
def test_refused_entries_answer_invalid_request_and_write_nothing(
    entity: list[dict], op: dict, message: str
) -> None:
    ctl = replay_cluster()
    start = ctl.end_offset
    ((code, text),) = _alter(ctl, (entity, [op]))
    assert code == ErrorCode.INVALID_REQUEST and message in text
    assert new_records(ctl, start) == []


def test_each_entry_is_checked_alone_and_only_changes_are_written() -> None:
    ctl = replay_cluster()
    start = ctl.end_offset
    answers = _alter(
        ctl,
        (_entity(user="alice", client_id="app"), [_op("producer_byte_rate", 1024.0)]),
        (_entity(client_id="bad"), [_op("nonsense", 1.0)]),
        (_entity(ip=None), [_op("connection_creation_rate", 10.0)]),
    )
    assert [code for code, _ in answers] == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST, 0]
    records = new_records(ctl, start)
    assert [(n, r["key"], r["value"], r["remove"]) for n, r in records] == [
        ("ClientQuotaRecord", "producer_byte_rate", 1024.0, False),
        ("ClientQuotaRecord", "connection_creation_rate", 10.0, False),
    ]
    assert ctl.state.quotas == {
        (("client-id", "app"), ("user", "alice")): {"producer_byte_rate": 1024.0},
        (("ip", None),): {"connection_creation_rate": 10.0},
    }
    # the same value again writes nothing; removing an absent key writes nothing
    start = ctl.end_offset
    _alter(ctl, (_entity(user="alice", client_id="app"), [_op("producer_byte_rate", 1024.0)]))
    _alter(ctl, (_entity(user="bob"), [_op("consumer_byte_rate", remove=True)]))
    assert new_records(ctl, start) == []
    # removing the last key drops the entity
    _alter(ctl, (_entity(ip=None), [_op("connection_creation_rate", remove=True)]))
    assert (("ip", None),) not in ctl.state.quotas


def test_validate_only_answers_without_writing() -> None:
    ctl = replay_cluster()
    start = ctl.end_offset
    answers = _alter(
        ctl, (_entity(client_id="c"), [_op("producer_byte_rate", 5.0)]), validate_only=True
    )
    assert answers == [(ErrorCode.NONE, None)]
    assert new_records(ctl, start) == []


QUOTAS = {
    (("user", "alice"),): {"producer_byte_rate": 1.0},
    (("user", None),): {"producer_byte_rate": 2.0},
    (("client-id", "app"), ("user", "alice")): {"consumer_byte_rate": 3.0},
    (("client-id", "app"),): {"request_percentage": 4.0},
    (("client-id", None),): {"producer_byte_rate": 5.0},
    (("ip", "1.2.3.4"),): {"connection_creation_rate": 6.0},
}


def _component(kind: str, match_type: int, match: str | None = None) -> dict:
    return {"entity_type": kind, "match_type": match_type, "match": match}


def _matched(components: list[dict], strict: bool = False) -> set:
    answer = describe_client_quotas(QUOTAS, {"components": components, "strict": strict})
    assert answer["error_code"] == ErrorCode.NONE
    return {
        tuple((e["entity_type"], e["entity_name"]) for e in x["entity"]) for x in answer["entries"]
    }


def test_describe_filters_as_kafkas_image() -> None:
    assert _matched([]) == set(QUOTAS)
    assert _matched([], strict=True) == set()
    alice = _component("user", MATCH_EXACT, "alice")
    assert _matched([alice]) == {
        (("user", "alice"),),
        (("client-id", "app"), ("user", "alice")),
    }
    assert _matched([alice], strict=True) == {(("user", "alice"),)}
    assert _matched([_component("user", MATCH_DEFAULT)]) == {(("user", None),)}
    # "specified" asks for the type only: a default entity of it matches too (as Kafka 4.4)
    assert _matched([_component("client-id", MATCH_SPECIFIED)]) == {
        (("client-id", "app"), ("user", "alice")),
        (("client-id", "app"),),
        (("client-id", None),),
    }
    assert _matched([_component("client-id", MATCH_SPECIFIED)], strict=True) == {
        (("client-id", "app"),),
        (("client-id", None),),
    }
    assert _matched([_component("ip", MATCH_SPECIFIED)]) == {(("ip", "1.2.3.4"),)}


@pytest.mark.parametrize(
    ("components", "code"),
    [
        ([_component("", MATCH_EXACT, "x")], ErrorCode.INVALID_REQUEST),
        ([_component("user", MATCH_EXACT, None)], ErrorCode.INVALID_REQUEST),
        ([_component("user", MATCH_DEFAULT, "x")], ErrorCode.INVALID_REQUEST),
        ([_component("user", MATCH_SPECIFIED, "x")], ErrorCode.INVALID_REQUEST),
        ([_component("user", 7)], ErrorCode.UNSUPPORTED_VERSION),
        ([_component("group", MATCH_SPECIFIED)], ErrorCode.UNSUPPORTED_VERSION),
        ([_component("user", MATCH_SPECIFIED)] * 2, ErrorCode.INVALID_REQUEST),
        (
            [_component("ip", MATCH_SPECIFIED), _component("user", MATCH_SPECIFIED)],
            ErrorCode.INVALID_REQUEST,
        ),
    ],
)
def test_describe_refuses_filters_as_kafka(components: list[dict], code: int) -> None:
    answer = describe_client_quotas(QUOTAS, {"components": components, "strict": False})
    assert answer["error_code"] == code and answer["entries"] is None and answer["error_message"]
