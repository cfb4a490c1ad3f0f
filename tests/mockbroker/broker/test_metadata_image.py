"""A broker's metadata image, replayed from the controller's framed records, agrees with the
controller's own state: brokers, fencing, topics, partitions (ISR, ELR, epochs), configs."""

from __future__ import annotations

import uuid

from kipwire.codec import ApiKey, ConfigResourceType, decode_record
from kipwire.mockbroker.broker.metadata_image import MetadataImage
from kipwire.mockbroker.controller import Controller
from kipwire.mockbroker.controller.features import LATEST_METADATA_VERSION


def _register(ctl: Controller, broker_id: int) -> None:
    response = ctl.handle(
        62,
        4,
        {
            "broker_id": broker_id,
            "cluster_id": ctl.cluster_id,
            "incarnation_id": uuid.uuid4(),
            "listeners": [
                {
                    "name": "PLAINTEXT",
                    "host": "127.0.0.1",
                    "port": 9000 + broker_id,
                    "security_protocol": 0,
                }
            ],
            "features": [
                {
                    "name": "metadata.version",
                    "min_supported_version": 1,
                    "max_supported_version": LATEST_METADATA_VERSION[ctl.semantics.release],
                }
            ],
            "rack": None,
        },
    )
    epoch = response["broker_epoch"]
    ctl.handle(
        63,
        1,
        {
            "broker_id": broker_id,
            "broker_epoch": epoch,
            "current_metadata_offset": ctl.end_offset,
            "want_fence": False,
            "want_shut_down": False,
        },
    )


def _replay_all(ctl: Controller, image: MetadataImage) -> None:
    for entry in ctl.records_since(image.offset + 1):
        name, _, record = decode_record(entry.data)  # the bytes a broker fetches
        image.replay(entry.offset, name, record)


def _same_partition(ctl: Controller, image: MetadataImage, topic: str, index: int) -> None:
    want, got = ctl.partition(topic, index), image.partition(topic, index)
    assert (got.replicas, got.isr, got.elr, got.last_known_elr) == (
        list(want.replicas),
        list(want.isr),
        list(want.elr),
        list(want.last_known_elr),
    )
    assert (got.leader, got.leader_epoch, got.partition_epoch) == (
        want.leader,
        want.leader_epoch,
        want.partition_epoch,
    )


def test_image_follows_the_controller_through_creation_fencing_and_configs():
    ctl = Controller(cluster_id="image-test")
    ctl.replay(
        "FeatureLevelRecord", {"name": "eligible.leader.replicas.version", "feature_level": 1}
    )
    for broker_id in (1, 2, 3):
        _register(ctl, broker_id)
    ctl.handle(
        19,
        7,
        {
            "topics": [
                {
                    "name": "t",
                    "num_partitions": 2,
                    "replication_factor": 3,
                    "configs": [{"name": "min.insync.replicas", "value": "2"}],
                }
            ],
            "timeout_ms": 0,
        },
    )
    image = MetadataImage()
    _replay_all(ctl, image)
    assert [b.node_id for b in image.live_brokers()] == [1, 2, 3]
    assert image.brokers[2].port == 9002
    assert image.topic_config("t", "min.insync.replicas", "1") == "2"
    assert image.features["eligible.leader.replicas.version"] == 1
    for index in (0, 1):
        _same_partition(ctl, image, "t", index)
    leader = ctl.partition("t", 0).leader
    ctl.fence(leader)
    ctl.fence(next(b for b in (1, 2, 3) if b != leader))
    _replay_all(ctl, image)
    assert image.brokers[leader].fenced
    assert len(image.live_brokers()) == 1
    for index in (0, 1):
        _same_partition(ctl, image, "t", index)
    assert image.partition("t", 0).elr  # the ELR tags came through the framed records
    ctl.handle(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": "t"}], "timeout_ms": 0})
    _replay_all(ctl, image)
    assert "t" not in image.topics and image.topic_config("t", "min.insync.replicas", "1") == "1"


def test_clear_elr_takes_a_new_partition_epoch_as_on_the_controller():
    ctl = Controller(cluster_id="image-test")
    ctl.replay(
        "FeatureLevelRecord", {"name": "eligible.leader.replicas.version", "feature_level": 1}
    )
    for broker_id in (1, 2, 3):
        _register(ctl, broker_id)
    topic = {"name": "t", "num_partitions": 1, "replication_factor": 3}
    topic["configs"] = [{"name": "min.insync.replicas", "value": "2"}]
    ctl.handle(ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 0})
    ctl.fence(next(b for b in (1, 2, 3) if b != ctl.partition("t", 0).leader))
    ctl.fence(next(b for b in ctl.partition("t", 0).isr if b != ctl.partition("t", 0).leader))
    image = MetadataImage()
    _replay_all(ctl, image)
    assert image.partition("t", 0).elr
    epoch = image.partition("t", 0).partition_epoch
    change = {"name": "min.insync.replicas", "config_operation": 0, "value": "1"}
    resource = {
        "resource_type": ConfigResourceType.TOPIC,
        "resource_name": "t",
        "configs": [change],
    }
    ctl.handle(
        ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource], "validate_only": False}
    )
    assert ctl.log[-1].name == "ClearElrRecord"
    _replay_all(ctl, image)
    assert (
        image.partition("t", 0).elr == [] and image.partition("t", 0).partition_epoch == epoch + 1
    )
    _same_partition(ctl, image, "t", 0)
