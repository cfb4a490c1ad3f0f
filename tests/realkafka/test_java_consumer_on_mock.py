"""The Java KafkaConsumer of kafka-clients 4.4.0 with `group.protocol=consumer` (KIP-848) on the
mock, in one group with a confluent-kafka member: the coordinator splits the partitions between
the two clients, each reads its own, and the Java member's commit (OffsetCommit with its member
epoch) holds."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kafka_dist import CLIENTS_VERSION, KafkaUnavailable, ensure_kafka_clients

from kipwire.mockbroker import MockCluster

CONSUMER = Path(__file__).resolve().parent / "java" / "Kip848Consume.java"
PARTITIONS = 4
PER_PARTITION = 100
DEADLINE = 60.0


def test_a_java_and_a_librdkafka_member_share_a_consumer_group():
    try:
        dist = ensure_kafka_clients()
    except KafkaUnavailable as e:
        pytest.skip(f"kafka-clients {CLIENTS_VERSION} unavailable: {e}")
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("mixed", partitions=PARTITIONS, replication_factor=3)
        half = PARTITIONS // 2 * PER_PARTITION
        java = subprocess.Popen(
            [dist.java, "-cp", dist.classpath, str(CONSUMER), cluster.bootstrap_servers]
            + ["mixed-group", "mixed", str(half), str(int(DEADLINE))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        member = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "mixed-group",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
            }
        )
        try:
            member.subscribe(["mixed"])
            groups = cluster.cluster.consumer_groups
            deadline = time.monotonic() + DEADLINE
            # both members in, each holding two partitions, before anything is produced
            while not (
                (group := groups.group("mixed-group")) is not None
                and len(group.members) == 2
                and group.state.value == "Stable"
                and len(member.assignment()) == PARTITIONS // 2
            ):
                assert time.monotonic() < deadline and java.poll() is None, java.stderr
                member.poll(0.1)
            mine = {tp.partition for tp in member.assignment()}
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
            for i in range(PARTITIONS * PER_PARTITION):
                producer.produce("mixed", b"%d" % i, partition=i % PARTITIONS)
            assert producer.flush(30) == 0
            read = 0
            while read < half:
                assert time.monotonic() < deadline
                for message in member.consume(100, 0.1):
                    if message.error() is None:
                        read += 1
                    else:
                        assert message.error().code() == KafkaError._PARTITION_EOF
            out, err = java.communicate(timeout=DEADLINE)
        finally:
            member.close()
            if java.poll() is None:
                java.kill()
                java.wait()
        assert java.returncode == 0, err[-3000:]
        lines = dict(line.split(" ", 1) for line in out.splitlines())
        assert int(lines["read"]) == half and read == half
        theirs = {int(p) for p in lines["partitions"].strip("[]").split(",")}
        assert theirs | mine == set(range(PARTITIONS)) and not theirs & mine
        committed = cluster.cluster.consumer_groups.group("mixed-group").offsets
        assert {committed["mixed", p].offset for p in theirs} == {PER_PARTITION}
