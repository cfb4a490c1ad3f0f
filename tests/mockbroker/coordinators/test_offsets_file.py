"""Committed offsets kept as JSON across a restart: every kind of group, into empty groups."""

from __future__ import annotations

import json

from kipwire.mockbroker.coordinators import offsets_file
from kipwire.mockbroker.coordinators.consumer_groups import ConsumerGroupCoordinator
from kipwire.mockbroker.coordinators.groups import CommittedOffset, GroupCoordinator
from kipwire.mockbroker.coordinators.streams_groups import StreamsCoordinator


def _coordinators() -> tuple[ConsumerGroupCoordinator, StreamsCoordinator]:
    return ConsumerGroupCoordinator(GroupCoordinator()), StreamsCoordinator()


def test_offsets_of_every_kind_of_group_survive_a_round_trip_through_json():
    consumer, streams = _coordinators()
    consumer.classic.offsets_for("classic")["t", 0] = CommittedOffset(5, 2, "meta")
    streams_group = streams.group("app", create=True)
    streams_group.offsets["t", 1] = CommittedOffset(9, -1, None)
    consumer.classic.group("idle", create=True)  # no offsets: not kept
    document = json.loads(json.dumps(offsets_file.snapshot(consumer, streams)))
    assert document == {
        "version": 1,
        "groups": {
            "app": {"kind": "streams", "offsets": [["t", 1, 9, -1, None]]},
            "classic": {"kind": "classic", "offsets": [["t", 0, 5, 2, "meta"]]},
        },
    }
    consumer, streams = _coordinators()
    assert offsets_file.restore(document, consumer, streams) == 2
    assert consumer.offsets_for("classic")["t", 0] == CommittedOffset(5, 2, "meta")
    assert streams.group("app").offsets == {("t", 1): CommittedOffset(9, -1, None)}


def test_a_document_of_another_version_restores_nothing():
    consumer, streams = _coordinators()
    assert offsets_file.restore({"version": 2, "groups": {"g": {}}}, consumer, streams) == 0
    assert consumer.classic.groups == {}
