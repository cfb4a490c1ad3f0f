"""A rule's working copy (draft.py, state.DraftState): records staged in order and replayed
into a copy-on-write draft; the Controller's state and log change only when it appends them."""

from __future__ import annotations

from controller_kit import TOPIC_ID, changes, replay_cluster

from kipwire.codec import (
    ApiKey,
    ConfigResourceType,
    ErrorCode,
    decode_request,
    encode_request,
)
from kipwire.mockbroker.controller.apis import decode_at_node_boundary
from kipwire.mockbroker.controller.brokers import fence
from kipwire.mockbroker.controller.draft import Draft


def test_a_rule_returns_records_and_leaves_the_controller_alone() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], min_isr=2)
    before, end = ctl.state.snapshot(), ctl.end_offset
    result = fence(ctl.view(), 3)
    assert [r.name for r in result.records] == [
        "PartitionChangeRecord",
        "BrokerRegistrationChangeRecord",
    ]
    assert ctl.state.snapshot() == before and ctl.end_offset == end
    assert ctl.partition("t", 0).isr == [1, 2, 3]
    # the same fence through the Controller appends exactly those records
    ctl.fence(3)
    assert [(e.name, e.record) for e in ctl.log[end:]] == [
        (r.name, r.record) for r in result.records
    ]


def test_later_steps_of_a_rule_see_its_earlier_records() -> None:
    ctl = replay_cluster(isr=[1, 2, 3], min_isr=2)
    draft = Draft(ctl.view())
    draft.add("PartitionChangeRecord", {"topic_id": TOPIC_ID, "partition_id": 0, "isr": [1, 2]})
    draft.add("PartitionChangeRecord", {"topic_id": TOPIC_ID, "partition_id": 0, "isr": [1]})
    assert draft.state.topic("t").partitions[0].isr == [1]
    assert draft.state.topic("t").partitions[0].partition_epoch == 202
    assert draft.next_offset == ctl.end_offset + 2
    assert ctl.partition("t", 0).isr == [1, 2, 3]
    assert ctl.partition("t", 0).partition_epoch == 200


def test_a_draft_replays_as_the_state_does_without_touching_it() -> None:
    ctl = replay_cluster(isr=[1, 2], elr=[3], min_isr=3)
    base = ctl.state.snapshot()
    records = [
        ("PartitionChangeRecord", {"topic_id": TOPIC_ID, "partition_id": 0, "isr": [1]}),
        ("FeatureLevelRecord", {"name": "eligible.leader.replicas.version", "feature_level": 0}),
        (
            "ConfigRecord",
            {
                "resource_type": ConfigResourceType.TOPIC,
                "resource_name": "t",
                "name": "retention.ms",
                "value": "5",
            },
        ),
        ("ClearElrRecord", {"topic_name": ""}),
        ("RemoveTopicRecord", {"topic_id": TOPIC_ID}),
        ("TopicRecord", {"name": "t", "topic_id": TOPIC_ID}),
    ]
    draft = Draft(ctl.view())
    for name, body in records:
        draft.add(name, body)
    assert ctl.state.snapshot() == base
    for name, body in records:
        ctl.append(name, body)
    assert draft.state.snapshot() == ctl.state.snapshot() != base


def test_handle_answers_the_body_for_the_node_to_encode_once() -> None:
    ctl = replay_cluster()
    start = ctl.end_offset
    request = {"topics": [{"name": "t"}], "timeout_ms": 0}
    response = ctl.handle(ApiKey.DELETE_TOPICS, 6, request)
    # the body as the rule built it, not decoded from bytes the controller encoded itself
    assert type(response) is dict
    assert response["responses"][0]["error_code"] == ErrorCode.NONE
    assert [e.name for e in ctl.log[start:]] == ["RemoveTopicRecord"]
    assert changes(ctl, start) == []


def test_a_decoded_request_crosses_the_boundary_as_it_is() -> None:
    body = {"topics": [{"name": "t"}], "timeout_ms": 0}
    decoded = decode_request(encode_request(ApiKey.DELETE_TOPICS, 6, body)).body
    assert decode_at_node_boundary("DeleteTopicsRequest", 6, decoded) is decoded
    # a plain dict is decoded there, once: defaults filled
    from_dict = decode_at_node_boundary("DeleteTopicsRequest", 6, body)
    assert from_dict == decoded and from_dict is not body


def test_clones_copy_every_field() -> None:
    ctl = replay_cluster(isr=[1, 2], elr=[3], last_known_elr=[3], min_isr=3)
    p, b = ctl.partition("t", 0), ctl.broker(2)
    assert p.clone().snapshot() == p.snapshot() and p.clone() is not p
    assert b.clone().snapshot() == b.snapshot() and b.clone() is not b
    topic = ctl.state.topic("t")
    assert topic.clone().partitions == topic.partitions
    assert topic.clone().partitions is not topic.partitions
