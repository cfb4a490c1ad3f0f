"""Streams groups, sans-I/O: planning a topology's tasks and internal topics, the task assignor,
and the reconciliation that hands a task over only once its owner let it go."""

from __future__ import annotations

import trio
import trio.testing

from kipwire.codec import ErrorCode
from kipwire.mockbroker.coordinators.streams_assignor import assign, plan
from kipwire.mockbroker.coordinators.streams_groups import (
    StreamsCoordinator,
    StreamsGroupState,
    StreamsMember,
)

SESSION_MS = 1000


def _info(name: str, partitions: int = 0) -> dict:
    return {"name": name, "partitions": partitions, "replication_factor": 0, "topic_configs": []}


#: the word count: subtopology 0 reads lines and writes the repartition topic, 1 counts
WORD_COUNT = [
    {
        "subtopology_id": "0",
        "source_topics": ["lines"],
        "repartition_sink_topics": ["app-counts-repartition"],
        "repartition_source_topics": [],
        "state_changelog_topics": [],
    },
    {
        "subtopology_id": "1",
        "source_topics": [],
        "repartition_sink_topics": [],
        "repartition_source_topics": [_info("app-counts-repartition")],
        "state_changelog_topics": [_info("app-counts-changelog")],
    },
]


def test_plan_sizes_internal_topics_from_the_sources():
    planned = plan(WORD_COUNT, {"lines": 3})
    assert planned.tasks == {"0": 3, "1": 3}
    assert [(t.name, t.partitions, t.changelog) for t in planned.internal] == [
        ("app-counts-repartition", 3, False),
        ("app-counts-changelog", 3, True),
    ]
    assert planned.internal[1].configs == {"cleanup.policy": "compact"}
    missing = plan(WORD_COUNT, {})
    assert missing.missing_sources == ["lines"] and missing.tasks == {}


def test_assign_is_balanced_sticky_and_puts_standbys_elsewhere():
    members = {"a": "p1", "b": "p2"}
    active, standby = assign(members, {"0": 2, "1": 2}, {})
    assert active == {"a": {"0": [0], "1": [0]}, "b": {"0": [1], "1": [1]}}
    assert standby == {"a": {}, "b": {}}
    sticky, _ = assign(members, {"0": 2}, {"b": {"0": [0, 1]}})
    assert sticky == {"a": {"0": [1]}, "b": {"0": [0]}}
    _, spare = assign(members, {"0": 2}, {}, standbys=1)
    assert spare == {"a": {"0": [1]}, "b": {"0": [0]}}  # never beside its own active task


def _member(member_id: str, owned=None) -> StreamsMember:
    return StreamsMember(member_id, process_id=f"process-{member_id}", owned=owned)


def test_a_task_moves_only_after_its_owner_revoked_it():
    async def story() -> None:
        streams = StreamsCoordinator()
        topology = {"epoch": 1, "subtopologies": WORD_COUNT}
        planned = plan(WORD_COUNT, {"lines": 2})

        def beat(member_id, epoch, owned=None):
            return streams.heartbeat(
                "app", _member(member_id, owned), epoch, topology, planned, SESSION_MS, 0
            )

        first = beat("a", 0)
        assert first.active == {"0": [0, 1], "1": [0, 1]}
        group = streams.group("app")
        assert group is not None and group.state is StreamsGroupState.STABLE
        second = beat("b", 0)
        # b's share is still a's: b gets nothing yet, at the new epoch
        assert second.member_epoch == 2 and second.active == {}
        assert group.state is StreamsGroupState.RECONCILING
        # sticky and balanced: a keeps subtopology 0's tasks and gives up 1's
        revoke = beat("a", first.member_epoch, owned={"0": [0, 1], "1": [0, 1]})
        assert revoke.member_epoch == 1 and revoke.active == {"0": [0, 1]}
        done = beat("a", 1, owned={"0": [0, 1]})
        assert done.member_epoch == 2 and done.active is None  # unchanged tasks, new epoch
        taken = beat("b", 2, owned={})
        assert taken.active == {"1": [0, 1]}
        assert group.state is StreamsGroupState.STABLE
        assert streams.check_commit("app", "a", 2) == ErrorCode.NONE
        assert streams.check_commit("app", "a", 1) == ErrorCode.STALE_MEMBER_EPOCH
        assert streams.check_commit("app", "nobody", 2) == ErrorCode.UNKNOWN_MEMBER_ID
        assert streams.check_commit("other", "a", 2) is None  # not a streams group
        # OffsetFetch checks member epochs as a consumer group's does (admins read freely)
        assert group.check_fetch(None, -1) == ErrorCode.NONE
        assert group.check_fetch("a", 2) == ErrorCode.NONE
        assert group.check_fetch("a", 1) == ErrorCode.STALE_MEMBER_EPOCH
        assert group.check_fetch("nobody", 2) == ErrorCode.UNKNOWN_MEMBER_ID
        assert beat("b", 7).error == ErrorCode.FENCED_MEMBER_EPOCH
        assert beat("b", -1).member_epoch == -1
        assert streams.delete("app") == ErrorCode.NON_EMPTY_GROUP

    trio.run(story, clock=trio.testing.MockClock(autojump_threshold=0))


def test_missing_source_topics_are_a_status_and_no_tasks():
    async def story() -> None:
        streams = StreamsCoordinator()
        topology = {"epoch": 1, "subtopologies": WORD_COUNT}
        result = streams.heartbeat(
            "app", _member("a"), 0, topology, plan(WORD_COUNT, {}), SESSION_MS, 0
        )
        assert result.error == ErrorCode.NONE and result.active == {}
        assert [code for code, _ in result.status] == [1]  # MISSING_SOURCE_TOPICS
        assert "lines" in result.status[0][1]

    trio.run(story, clock=trio.testing.MockClock(autojump_threshold=0))
