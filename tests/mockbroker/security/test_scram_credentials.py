"""SCRAM users managed the Kafka way (KIP-554): AlterUserScramCredentials writes
UserScramCredentialRecords, DescribeUserScramCredentials lists them, and the next login uses
them; confluent-kafka's AdminClient drives the same APIs."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator

import pytest
from sasl_wire import connect, plain_login, scram_login

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SHA_256 = 1  # ScramMechanism SCRAM-SHA-256 in the KIP-554 APIs


@pytest.fixture(scope="module")
def scram() -> Iterator[MockCluster]:
    """SCRAM-SHA-256 and PLAIN (for the admin's own login), the authorizer on."""
    with MockCluster(
        brokers=2,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=("SCRAM-SHA-256", "PLAIN"),
        users=USERS,
        super_users=("admin",),
        authorizer=True,
    ) as running:
        yield running


def _upsertion(name: str, password: str, iterations: int = 4096) -> dict:
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return {
        "name": name,
        "mechanism": SHA_256,
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted,
    }


def _login(cluster: MockCluster, user: str, password: str) -> int:
    # the second broker: it must have replayed what the first one forwarded
    with connect(cluster.bootstrap_servers.split(",")[1]) as client:
        return scram_login(client, "SCRAM-SHA-256", user, password)["error_code"]


def test_an_upserted_user_logs_in_and_a_deleted_one_no_longer(scram):
    with connect(scram.bootstrap_servers.split(",")[0]) as admin:
        plain_login(admin, "admin", "admin-secret")
        done = admin.call(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {"deletions": [], "upsertions": [_upsertion("dave", "dave-secret")]},
        )
        assert done["results"] == [
            {"user": "dave", "error_code": ErrorCode.NONE, "error_message": None}
        ]
        assert _login(scram, "dave", "dave-secret") == ErrorCode.NONE
        listed = admin.call(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": "dave"}]}
        )
        assert listed["results"][0]["credential_infos"] == [
            {"mechanism": SHA_256, "iterations": 4096}
        ]
        admin.call(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {"deletions": [{"name": "dave", "mechanism": SHA_256}], "upsertions": []},
        )
        assert _login(scram, "dave", "dave-secret") == ErrorCode.SASL_AUTHENTICATION_FAILED
        gone = admin.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": "dave"}]})
        assert gone["results"][0]["error_code"] == ErrorCode.RESOURCE_NOT_FOUND


def test_kafkas_checks_on_credentials(scram):
    with connect(scram.bootstrap_servers.split(",")[0]) as admin:
        plain_login(admin, "admin", "admin-secret")
        done = admin.call(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {
                "deletions": [{"name": "nobody", "mechanism": SHA_256}],
                "upsertions": [_upsertion("erin", "x", iterations=100)],
            },
        )
        codes = {r["user"]: r["error_code"] for r in done["results"]}
        assert codes == {
            "nobody": ErrorCode.RESOURCE_NOT_FOUND,
            "erin": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        }


def test_only_alter_on_the_cluster_changes_credentials(scram):
    with connect(scram.bootstrap_servers.split(",")[0]) as alice:
        plain_login(alice, "alice", "alice-secret")
        done = alice.call(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {"deletions": [], "upsertions": [_upsertion("alice", "taken-over")]},
        )
        assert done["results"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert _login(scram, "alice", "alice-secret") == ErrorCode.NONE


def test_confluent_admin_client_upserts_a_user(scram):
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(scram.client_config("admin", mechanism="PLAIN"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("frank", info, b"frank-secret")]
    )
    for future in futures.values():
        assert future.result(10) is None
    assert _login(scram, "frank", "frank-secret") == ErrorCode.NONE
    described = admin.describe_user_scram_credentials(["frank"])["frank"].result(10)
    assert described.scram_credential_infos[0].iterations == 8192
