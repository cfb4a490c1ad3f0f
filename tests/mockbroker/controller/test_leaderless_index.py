"""The controller state's index of leaderless partitions follows replay (and a draft's replays
never change its base), so periodic elections visit only leaderless partitions."""

from __future__ import annotations

from controller_kit import TOPIC_ID, heartbeat, replay_cluster


def test_replay_keeps_the_leaderless_index() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    assert ctl.state.leaderless == set() and ctl.state.leaderless_partitions() == []
    ctl.append("PartitionChangeRecord", {"topic_id": TOPIC_ID, "partition_id": 0, "leader": -1})
    assert ctl.state.leaderless == {(TOPIC_ID, 0)}
    assert [p.partition_id for p in ctl.state.leaderless_partitions()] == [0]
    draft = ctl.state.draft()
    draft.replay(
        "PartitionChangeRecord", {"topic_id": TOPIC_ID, "partition_id": 0, "leader": 2}, 99
    )
    assert draft.leaderless == set() and ctl.state.leaderless == {(TOPIC_ID, 0)}
    ctl.append("RemoveTopicRecord", {"topic_id": TOPIC_ID})
    assert ctl.state.leaderless == set()


def test_an_unclean_topic_elects_from_the_index_on_tick() -> None:
    ctl = replay_cluster(isr=[1], replicas=[1, 2], unclean=True, fenced=(1,))
    heartbeat(ctl, 2)
    ctl.append("PartitionChangeRecord", {"topic_id": TOPIC_ID, "partition_id": 0, "leader": -1})
    assert ctl.state.leaderless == {(TOPIC_ID, 0)}
    ctl.tick(ctl.now_ms + 1)
    assert ctl.partition("t", 0).leader == 2
    assert ctl.state.leaderless == set()
