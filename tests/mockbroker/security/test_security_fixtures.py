"""The pytest fixtures take the security arguments through `@pytest.mark.mock_cluster(...)`."""

from __future__ import annotations

import pytest
from sasl_wire import connect, scram_login

from kipwire.codec import ErrorCode

USERS = {"alice": "alice-secret"}


@pytest.mark.mock_cluster(
    brokers=1, security_protocol="SASL_SSL", sasl_mechanisms=("SCRAM-SHA-256",), users=USERS
)
def test_the_sync_fixture(mock_cluster):
    with connect(mock_cluster.bootstrap_servers, ca=mock_cluster.ssl_ca_location) as client:
        done = scram_login(client, "SCRAM-SHA-256", "alice", "alice-secret")
    assert done["error_code"] == ErrorCode.NONE


@pytest.mark.trio
@pytest.mark.mock_cluster(brokers=1, security_protocol="SSL", authorizer=True)
async def test_the_trio_fixture(trio_mock_cluster):
    await trio_mock_cluster.add_acl("User:ANONYMOUS", "TOPIC", "open", "READ")
    assert [a.resource_name for a in trio_mock_cluster.acls()] == ["open"]
    assert trio_mock_cluster.ssl_ca_location.endswith("ca.pem")
