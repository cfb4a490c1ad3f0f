"""The replay's rewrite rules, one test each: what a client learns anew, and nothing else."""

from __future__ import annotations

from uuid import UUID

import pytest

from kipwire.captures.replaying.rules import (
    Learned,
    learn,
    learn_fetch_session,
    learn_members,
    learn_producer,
    learn_topic_ids,
    rewrite,
    rewrite_fetch_session,
    rewrite_members,
    rewrite_producer,
    rewrite_record_batches,
    rewrite_topic_ids,
)
from kipwire.codec import ApiKey, DecodeError, ErrorCode
from kipwire.codec.records import build_batch, iter_batches

OLD_ID, NEW_ID = UUID(int=1), UUID(int=2)


def _records() -> list[dict]:
    return [
        {"key": b"k%d" % i, "value": b"v%d" % i, "headers": [("h", b"x")], "timestamp": 1000 + i}
        for i in range(3)
    ]


def test_topic_ids_follow_the_topic_name_to_the_target_id() -> None:
    learned = Learned(original_topics={OLD_ID: "orders"}, target_topics={"orders": NEW_ID})
    body = {"topics": [{"topic_id": OLD_ID, "partitions": [{"partition": 0}]}]}
    rewrite_topic_ids(body, learned)
    assert body["topics"][0]["topic_id"] == NEW_ID
    unknown = {"topics": [{"topic_id": UUID(int=9)}]}
    rewrite_topic_ids(unknown, learned)
    assert unknown["topics"][0]["topic_id"] == UUID(int=9)  # never guessed


def test_learn_topic_ids_reads_names_and_ids_both_ways() -> None:
    response = {"topics": [{"name": "orders", "topic_id": NEW_ID}, {"name": "x", "topic_id": None}]}
    by_name: dict = {}
    by_id: dict = {}
    learn_topic_ids(response, by_name, by_name=True)
    learn_topic_ids(response, by_id, by_name=False)
    assert by_name == {"orders": NEW_ID} and by_id == {NEW_ID: "orders"}


def test_producer_ids_and_epochs_map_to_what_init_producer_id_gave() -> None:
    learned = Learned()
    learn_producer(
        {"producer_id": 7, "producer_epoch": 0}, {"producer_id": 1000, "producer_epoch": 3}, learned
    )
    body = {"transactional_id": "t", "producer_id": 7, "producer_epoch": 0}
    rewrite_producer(body, learned)
    assert (body["producer_id"], body["producer_epoch"]) == (1000, 3)
    old_txn = {"v3_and_below_producer_id": 7, "v3_and_below_producer_epoch": 0}
    rewrite_producer(old_txn, learned)  # AddPartitionsToTxn v0-v3
    assert old_txn == {"v3_and_below_producer_id": 1000, "v3_and_below_producer_epoch": 3}
    nested = {"transactions": [{"producer_id": 7, "producer_epoch": 0}, {"producer_id": -1}]}
    rewrite_producer(nested, learned)
    assert nested["transactions"] == [
        {"producer_id": 1000, "producer_epoch": 3},
        {"producer_id": -1},
    ]


def test_record_batches_get_the_new_producer_and_a_valid_crc() -> None:
    learned = Learned(producer_ids={7: 1000}, producer_epochs={(7, 0): 3})
    raw = build_batch(_records(), producer_id=7, producer_epoch=0, base_sequence=5)
    raw += build_batch(_records(), producer_id=7, producer_epoch=0, base_sequence=8)
    out = rewrite_record_batches(raw, learned)
    assert len(out) == len(raw)
    batches = list(iter_batches(out))  # verifies each CRC-32C
    assert [(b.producer_id, b.producer_epoch, b.base_sequence) for b in batches] == [
        (1000, 3, 5),
        (1000, 3, 8),
    ]
    before = [
        (r.key, r.value, r.headers, r.timestamp) for b in iter_batches(raw) for r in b.records
    ]
    after = [(r.key, r.value, r.headers, r.timestamp) for b in batches for r in b.records]
    assert after == before
    with pytest.raises(DecodeError):  # the old CRC no longer fits the new header
        list(iter_batches(raw[:21] + out[21:]))


def test_record_batches_of_unknown_producers_stay_byte_identical() -> None:
    raw = build_batch(_records())
    assert rewrite_record_batches(raw, Learned(producer_ids={7: 1000})) is raw


def test_member_ids_and_generations_follow_join_group() -> None:
    learned = Learned()
    learn_members(
        {"group_id": "g"},
        {"member_id": "m-old", "generation_id": 4, "leader": "m-old"},
        {"member_id": "m-new", "generation_id": 1, "leader": "m-new"},
        learned,
    )
    body = {
        "group_id": "g",
        "generation_id": 4,
        "member_id": "m-old",
        "assignments": [{"member_id": "m-old", "assignment": b""}],
    }
    rewrite_members(body, learned)
    assert (body["generation_id"], body["member_id"]) == (1, "m-new")
    assert body["assignments"][0]["member_id"] == "m-new"
    other_group = {"group_id": "h", "generation_id": 4, "member_id": "x"}
    rewrite_members(other_group, learned)
    assert other_group["generation_id"] == 4


def test_member_id_required_answer_teaches_the_id_alone() -> None:
    learned = Learned()
    learn_members(
        {"group_id": "g", "member_id": ""},
        {"error_code": ErrorCode.MEMBER_ID_REQUIRED, "member_id": "a", "generation_id": -1},
        {"error_code": ErrorCode.MEMBER_ID_REQUIRED, "member_id": "b", "generation_id": -1},
        learned,
    )
    assert learned.member_ids == {"a": "b"} and learned.generations == {}


def test_fetch_sessions_map_or_become_sessionless() -> None:
    learned = Learned()
    learn_fetch_session({"session_id": 11}, {"session_id": 22}, learned)
    learn_fetch_session({"session_id": 12}, {"session_id": 0}, learned)
    mapped = {"session_id": 11, "session_epoch": 1}
    rewrite_fetch_session(mapped, learned)
    assert mapped == {"session_id": 22, "session_epoch": 1}
    unopened = {"session_id": 12, "session_epoch": 1}
    rewrite_fetch_session(unopened, learned)
    assert unopened == {"session_id": 0, "session_epoch": 0}  # a full fetch, a new session


def test_rewrite_and_learn_dispatch_by_api() -> None:
    learned = Learned()
    learn(
        ApiKey.INIT_PRODUCER_ID,
        {},
        {"producer_id": 7, "producer_epoch": 0},
        {"producer_id": 1000, "producer_epoch": 0},
        learned,
    )
    learn(ApiKey.METADATA, {}, None, {"topics": [{"name": "t", "topic_id": NEW_ID}]}, learned)
    assert learned.producer_ids == {7: 1000} and learned.target_topics == {"t": NEW_ID}
    batch = build_batch(_records(), producer_id=7, producer_epoch=0, base_sequence=0)
    body = {"topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}
    rewrite(ApiKey.PRODUCE, body, learned)
    (b,) = iter_batches(body["topic_data"][0]["partition_data"][0]["records"])
    assert b.producer_id == 1000
