"""`log.dirs` in process mode: each broker process loads and writes its broker's directories, the
controller's process writes the metadata log, and a new cluster on the same directory finds the
topics, the records and the committed offsets of the last one, as in-process."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from process_clients import MODES, consume, produce, values

from kipwire.mockbroker import MockCluster

GROUP = "kept-group"
RECORDS = 30


def _commit_everything(bootstrap: str, topic: str, count: int) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    read = 0
    for _ in range(60):  # bounded: a minute at most
        read += sum(m.error() is None for m in consumer.consume(100, 1.0))
        if read >= count:
            break
    consumer.commit(asynchronous=False)
    consumer.close()
    assert read == count


def _committed(bootstrap: str, topic: str, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    offsets = consumer.committed([TopicPartition(topic, i) for i in range(partitions)], 20)
    consumer.close()
    return sum(max(tp.offset, 0) for tp in offsets)


@pytest.mark.parametrize("processes", MODES)
def test_a_new_cluster_on_the_same_log_dirs_has_the_last_ones_topics_records_and_offsets(
    processes, tmp_path
):
    config = {"log.dirs": str(tmp_path)}
    with MockCluster(brokers=3, processes=processes, config=config) as cluster:
        cluster.create_topic("kept", partitions=3, replication_factor=2)
        assert produce(cluster.bootstrap_servers, "kept", RECORDS) == []
        _commit_everything(cluster.bootstrap_servers, "kept", RECORDS)
    assert all((tmp_path / f"broker-{i}").is_dir() for i in (1, 2, 3))
    with MockCluster(brokers=3, processes=processes, config=config) as cluster:
        assert len(cluster.controller.state.topic("kept").partitions) == 3
        assert _committed(cluster.bootstrap_servers, "kept", 3) == RECORDS
        assert sorted(consume(cluster.bootstrap_servers, "kept", RECORDS)) == values(RECORDS)
