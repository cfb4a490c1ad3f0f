"""Security in process mode: each broker process serves the parent's TLS certificate, answers
SASL for the same users and authorizes with the same ACLs, as in-process brokers do."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError
from process_clients import MODES, consume, produce, values

from kipwire.mockbroker import MockCluster

USERS = {"admin": "admin-secret", "alice": "alice-secret"}


@pytest.mark.parametrize("processes", MODES)
def test_sasl_ssl_scram_and_acls_in_every_broker(processes):
    with MockCluster(
        brokers=3,
        processes=processes,
        security_protocol="SASL_SSL",
        sasl_mechanisms=("SCRAM-SHA-512",),
        users=USERS,
        super_users=("admin",),
        authorizer=True,
    ) as cluster:
        cluster.create_topic("secure", partitions=3, replication_factor=3)
        alice = cluster.client_config("alice")
        bootstrap = alice["bootstrap.servers"]
        denied = produce(bootstrap, "secure", 2, extra=alice)
        assert denied == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 2
        cluster.add_acl("User:alice", "TOPIC", "secure", "ALL")
        cluster.add_acl("User:alice", "GROUP", "*", "READ")
        # three partitions, one leader in each process: TLS and SCRAM in every one of them
        assert produce(bootstrap, "secure", 30, extra=alice) == []
        assert sorted(consume(bootstrap, "secure", 30, extra=alice)) == values(30)
