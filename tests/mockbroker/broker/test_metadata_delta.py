"""The broker's metadata image applies records as deltas and reports what they touched: the
partitions each record names, and whether a broker or a config changed."""

from __future__ import annotations

import uuid

from kipwire.codec import ConfigResourceType
from kipwire.mockbroker.broker.metadata_image import MetadataImage

TOPIC_ID = uuid.UUID(int=7)


def _partition(index: int, leader: int = 1) -> dict:
    return {
        "topic_id": TOPIC_ID,
        "partition_id": index,
        "replicas": [1, 2],
        "isr": [1, 2],
        "leader": leader,
        "leader_epoch": 0,
        "partition_epoch": 0,
    }


def test_a_delta_names_only_what_its_records_touched():
    image = MetadataImage()
    image.replay(0, "TopicRecord", {"name": "t", "topic_id": TOPIC_ID})
    for i in range(3):
        image.replay(1 + i, "PartitionRecord", _partition(i))
    first = image.take_delta()
    assert first.partitions == {("t", 0), ("t", 1), ("t", 2)} and not first.cluster_wide
    image.replay(4, "PartitionChangeRecord", {"topic_id": TOPIC_ID, "partition_id": 1, "isr": [1]})
    change = image.take_delta()
    assert change.partitions == {("t", 1)} and not change.cluster_wide
    assert image.take_delta().partitions == set()  # taken: nothing new
    image.replay(
        5,
        "ConfigRecord",
        {
            "resource_type": ConfigResourceType.TOPIC,
            "resource_name": "t",
            "name": "min.insync.replicas",
            "value": "2",
        },
    )
    configs = image.take_delta()
    assert configs.configs and configs.cluster_wide and configs.partitions == set()
    image.replay(6, "RemoveTopicRecord", {"topic_id": TOPIC_ID})
    assert image.take_delta().partitions == {("t", 0), ("t", 1), ("t", 2)}
